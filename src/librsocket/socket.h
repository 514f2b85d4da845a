// One rsocket: its state machine, its buffers and the rsockets v1 protocol
// engine, written once against the provider interface (core/prov).
// Internally every function returns 0 / a count, or -errno.
#pragma once
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "core/base/deadline.h"
#include "core/base/fifo.h"
#include "core/base/kick.h"
#include "core/base/pollable.h"
#include "core/base/spin_phase.h"
#include "core/base/process_share.h"
#include "core/prov/connection.h"
#include "core/base/futex_mutex.h"
#include "core/base/pod_bytes.h"
#include "librsocket/conn_buffer.h"
#include "librsocket/fork.h"
#include "librsocket/signal_probe.h"
#include "librsocket/wire.h"

namespace ss::rs {

// The connection's state: upstream's phase and bits in the low half, as
// upstream numbers them (visible through TCP_INFO and logs), and this
// library's own conditions above them. Read and written under mu_.
enum State : uint32_t {
  kInit = 0,
  kBound = 0x1,
  kListening = 0x2,
  kOpening = 0x4,
  kConnecting = 0x44,
  kConnected = 0x100,
  kWritable = 0x200,
  kReadable = 0x400,
  kConnectRdwr = 0x700,
  kConnectError = 0x800,
  kDisconnected = 0x1000,
  kError = 0x2000,
  kPhaseMask = 0xffff,
  // Connecting: the provider is still finding the peer (verbs).
  kResolving = 1u << 16,
  // Connecting: the peer's reply is not yet taken (process_cq waits).
  kReplyPending = 1u << 17,
  // Accepting side under kCapActiveSpeaksFirst: nothing is sent until the
  // peer's first message arrived.
  kAwaitPeerFirst = 1u << 18,
  kShutWr = 1u << 19,  // local SHUT_WR: writes give EPIPE
  // The transport ended when the peer had read all we sent (a dead
  // process's FIN): reads end; the next send hangs the socket up (EPIPE).
  kTransportEnded = 1u << 20,
  kInLinger = 1u << 21,  // the linger service holds this socket
  // rclose came while a shutdown or a linger was under way: whichever ends
  // last releases (not the rclose, which would free the endpoint under it).
  kClosed = 1u << 22,
  kPeerWroteLate = 1u << 23,  // data arrived while lingering: ends it (a TCP RST)
  // fail_connection ran: whatever else the peer sent is not looked at (a
  // peer flooding bad messages gets one warning, not one per message).
  kPeerDropped = 1u << 24,
  // Off-stream connect under way after rconnect answered EINPROGRESS (or
  // EINTR): should it fail, the kernel socket, which nothing has touched,
  // connects to the peer over TCP instead (kFellBack): the fd table then
  // names this socket kRsocketFallback, its readiness is the kernel
  // socket's, and librspreload makes the descriptor the kernel's at the
  // program's next call on it.
  kLateFallback = 1u << 25,
  kFellBack = 1u << 26,
  kStale = 1u << 27,            // another process moved the connection on (went_stale)
  kExecLost = 1u << 28,         // exec_lost(): reset, then reads end and sends get EPIPE
  kSharedElsewhere = 1u << 29,  // rclose found another holder
  // Listener, out of descriptors (EMFILE/ENFILE) while taking a
  // connection: the next raccept reports it, as accept(2) would. While
  // starved, a connection waits in the kernel's backlog and the listen
  // thread stops polling the listener (it would spin): its periodic pass
  // and raccept retry instead.
  kAcceptStarved = 1u << 30,
  kAcceptFull = 1u << 31,  // listener: backlog_ connections queued, no more taken
};

// `pos` advanced by at most `size` past a position inside a ring of
// `size`, brought back into it: a compare instead of a division.
inline uint32_t ring_wrap(uint32_t pos, uint32_t size) { return pos >= size ? pos - size : pos; }

struct Options {
  uint32_t sq_size;
  uint32_t rq_size;
  uint32_t inline_size;
  uint32_t sbuf_size;
  uint32_t rbuf_size;
  uint32_t iomap_size;  // slots of this side's target table the peer may fill
  bool nodelay = false, keepalive = false, reuseaddr = false, linger = false, oobinline = false,
       v6only = false;
  uint32_t keepidle = 0;
  int linger_s = 0;  // SO_LINGER's l_linger, used when linger is on
  // SO_RCVLOWAT: a blocking receive waits for this many bytes (or its
  // length), and POLLIN stands once they are queued (Linux's rule).
  int rcvlowat = 1;
  int tos = 0;
  // SO_RCVTIMEO / SO_SNDTIMEO in microseconds (0: a blocking call waits
  // for ever, as the kernel's zero timeval).
  int64_t rcvtimeo_us = 0, sndtimeo_us = 0;
  std::vector<uint8_t> route;  // RDMA_ROUTE path records (ibv_path_data), for verbs
};

// A registered user buffer (riomap).
struct Iomap {
  int index;  // slot in the peer's table, -1 for PROT_NONE
  uint64_t offset;
  void* addr;
  size_t len;
  prov::MemoryRegion mr;
  bool published;
};

// A Pollable in the fd table: rpoll and rselect (core's poll_mixed) ask it.
class Socket final : public std::enable_shared_from_this<Socket>,
                     public Pollable,
                     public fork::Unforkable,
                     public fork::DeferredClose {
 public:
  Socket(int fd, int domain);
  ~Socket();
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  int domain() const { return domain_; }
  // librspreload (preload_hooks.h): connect and listen only over providers
  // that leave the kernel socket's stream to plain TCP.
  void set_off_stream() { off_stream_ = true; }
  const char* provider_name();  // the connection's provider, or nullptr
  int options_fd();             // ss_rspreload_options_fd (preload_hooks.h)
  bool fell_back();             // librspreload's late fallback happened (kFellBack)
  // The connection failed with nothing left to read, its transport looked
  // at now (not only every few idle polls).
  bool failed_unread();

  // Lifecycle.
  int bind(const sockaddr* addr, socklen_t len);
  int listen(int backlog);
  int accept(std::shared_ptr<Socket>* out, sockaddr* addr, socklen_t* len, int flags);
  int connect(const sockaddr* addr, socklen_t len);
  int shutdown(int how);
  void close();  // rclose: shuts down, frees provider resources
  // The process exits with this connection open: it ends as Linux's exit
  // would end it (see exit_close.cc).
  void close_at_exit();
  // rclose's first step, under its fork::TableGuard: true when another
  // thread is sending or receiving, and so the close waits for that call
  // (as Linux's send and recv hold their socket: the connection goes on
  // until the call ends as it would have, never with an end of stream the
  // peer did not send). Listed for fork meanwhile (close_in_fork_child).
  bool defer_close();
  // A deferred close: true once, when the last such call is over and the
  // caller must close now. Every send and receive asks on its way out:
  // one load, no lock, unless a close came.
  bool take_deferred_close() {
    return close_deferred_.load(std::memory_order_relaxed) && take_deferred_close_locked();
  }

  // Data.
  ssize_t send(const void* buf, size_t len, int flags);
  ssize_t sendv(const iovec* iov, int iovcnt, int flags);
  ssize_t recv(void* buf, size_t len, int flags);
  ssize_t recvv(const iovec* iov, int iovcnt, int flags);

  // Direct placement.
  off_t iomap(void* buf, size_t len, int prot, int flags, off_t offset);
  int iounmap(void* buf, size_t len);
  ssize_t iowrite(const void* buf, size_t count, off_t offset, int flags);

  // Names and options.
  int getsockname(sockaddr* addr, socklen_t* len);
  int getpeername(sockaddr* addr, socklen_t* len);
  int setsockopt(int level, int name, const void* val, socklen_t len);
  int getsockopt(int level, int name, void* val, socklen_t* len);
  int get_route(void* val, socklen_t* len) const;
  int fcntl(int cmd, long arg);
  // FIONREAD/SIOCINQ (`in`: bytes received, not yet read) or SIOCOUTQ
  // (bytes written, not yet taken by the transport), after progressing the
  // completions; -EINVAL on a listener, as the kernel's.
  int queued_bytes(bool in);

  // Pollable (rpoll, rselect): readiness after progressing the connection
  // and its completions; a sleep waits on the provider's event fd (a
  // listener's queue) and the kick, and is cut to end at the connect
  // deadline, which nothing else would wake the caller for.
  short readiness(short events) override;
  WaitTarget wait_target(short events, int* sleep_ms) override;
  void after_wait(const WaitTarget& armed, bool kicked) override;
  // Edge-triggered epoll: the count of events after progressing the
  // connection (a listener: none, it reports level-triggered).
  bool change_count(uint64_t* count) override;

  // Connection requests into the accept queue: the listen service's
  // thread drains them; a process serving a listener shared by fork
  // (`inline_caller`: raccept, rpoll) stops at the first it queued.
  void serve_requests(bool inline_caller);
  int listener_fd();
  // Listeners shared by fork (listen_service.h), from its fork handlers
  // (the parent's before it takes serve_mu_ and mu_, for a bounded
  // time; the child's after fork_child freed them): for the parent and
  // the child, the listener is served by whoever calls raccept from now
  // on; in the child, what the parent had under way or queued stays the
  // parent's.
  void share_listener_by_fork() { listen_shared_ = true; }
  void listener_fork_child();
  bool listen_shared() const { return listen_shared_.load(std::memory_order_relaxed); }

  // Processes holding this connection (fork.h): join when this process
  // gets it (raccept, rconnect), leave at rclose, under a fork::TableGuard.
  // A connection that cannot cross fork (verbs) is tracked instead.
  void join_processes();
  void leave_processes();
  // fork::Unforkable: in a fork child, the maker's endpoint is let go of
  // (never used nor destroyed) and the connection fails with EOPNOTSUPP.
  bool leave_to_maker() override;
  // Pollable: in a fork child, mu_ held by a parent thread at the fork
  // (busy-polling, or anywhere under the lock) is freed, and that thread's
  // turn or shutdown under way forgotten: the child's calls, rclose
  // included, then follow the fork rules above instead of waiting for
  // ever. (The state is as that thread left it, perhaps mid-step, as a
  // kernel socket's user-space buffers are at any fork.) The endpoint
  // does the same for its own locks (prov::Endpoint::fork_child), unless
  // the child cannot use it (verbs). A listener's serve_mu_ is freed, and
  // the descriptor of a request a parent thread was answering (the
  // parent's: its raccept returns it) closed here. Once per fork: the
  // listen service calls it too, for listeners no longer in the fd table.
  void fork_child() override;
  // fork::DeferredClose: the child's copy dropped and its number freed,
  // the endpoint's descriptors closed by the system call; the object is
  // left inert (no endpoint), never destroyed here (the parent's blocked
  // thread holds it), nothing reaching the peer or the parent.
  void close_in_fork_child() override;

  // The exec hand-over (exec_handover.cc; preload_hooks.h): this
  // connection's state for a new image of the process, with mu_ left
  // locked until exec_abandon() (the exec failed) or the image goes, and
  // in `keep` the descriptors the exec must leave open: 0. Else mu_ free
  // and -EOPNOTSUPP when it cannot cross (not established and quiet, a
  // provider that cannot follow: ConnectionOps::restore), -EBUSY when it
  // must stay out of it (locked for long: an exec from a signal handler).
  int exec_save(std::vector<uint8_t>* out, std::vector<int>* keep);
  void exec_abandon();
  // In the new image: the connection built back on its descriptor fd_
  // from exec_save's state (0 or -errno), or, when it could not cross,
  // a connection reset (exec_lost: ECONNRESET once, then as Linux's).
  // A connection passed to another process is built back there the same
  // way, its descriptors at their new numbers (`renumber`).
  int exec_restore(const uint8_t* in, size_t len, const prov::Renumber& renumber = {});
  void exec_lost(const sockaddr* name, socklen_t len);
  // A copy another process goes on with (fork) and this one never moved:
  // true when it stays with that process (which did not let go by
  // `until`), this process no longer counted as a holder; exec_unaside
  // counts it again (the exec failed). The new image's number is then
  // exec_lost's, and a copy (exec_aside_lost): its close leaves the
  // transport to the other process.
  bool exec_aside(std::chrono::steady_clock::time_point until);
  void exec_unaside();
  void exec_aside_lost(const sockaddr* name, socklen_t len);
  // A vfork child's exec, after exec_save: the connection goes to the new
  // program, and this process's copy (the parent's, whose memory the child
  // shares) stops as a stale fork copy does (ECONNRESET; its close leaves
  // the transport alone); mu_ is let go, for the parent goes on.
  // exec_take_back: the exec failed. stream_fd: the endpoint's stream.
  void exec_give_away();
  void exec_take_back();
  int stream_fd();
  // A listener's part (exec_handover.cc): its queued connections, settled
  // as raccept settles them, leave the queue for the caller to carry, and
  // serve_mu_ stays locked so none is answered after (the peer's connect
  // then waits in the provider's backlog, which the kernel listener
  // keeps); -EBUSY when serving stayed busy for long. exec_unhold: the
  // exec failed, they are queued again first. requeue: one queued behind
  // those waiting (the new image's).
  int exec_hold(std::vector<std::shared_ptr<Socket>>* out);
  void exec_unhold(std::vector<std::shared_ptr<Socket>>* held);
  void requeue(std::shared_ptr<Socket> s, bool front);

  // Linger service: one step of a graceful close (close.cc); true once the
  // connection is finished (and, after rclose, everything released).
  bool linger_step();
  // In a fork child, where no linger thread owns it (single-threaded there).
  void forget_linger() { set(kInLinger, false); }

  // Keepalive service.
  void send_keepalive();
  unsigned keepalive_interval() const;

 private:
  friend class ListenService;
  using Lock = std::unique_lock<FutexMutex>;

  bool failed_unread(Lock& lk);  // failed_unread() with mu_ held
  // send/sendv and recv/recvv: one body over a single buffer or an iovec
  // array (data.cc).
  template <typename Cursor>
  ssize_t send_from(Cursor& cur, int flags);
  template <typename Cursor>
  ssize_t recv_into(Cursor& out, int flags);
  int setsockopt_locked(int level, int name, const void* val, socklen_t len);
  int alloc_buffers();
  void free_buffers();
  void build_conn_data(ConnData* cd);
  int save_conn_data(const uint8_t* pdata, size_t len);
  int start_endpoint();
  int progress_connect(Lock& lk);
  int progress_connect_step(Lock& lk);
  // librspreload's late fallback: kFellBack.
  void fall_back_to_kernel();
  int begin_connect();
  int wait_connected(Lock& lk, bool nonblock);
  void finish_established();
  void inherit_from(const Socket& listener);
  // Graceful close. Our SHUT_RDWR while the peer still sends becomes a
  // SHUTDOWN; the DISCONNECT waits until the peer closes its end, writes to
  // our closed end, or the linger time passes: upstream's rpoll reports
  // POLLHUP on DISCONNECT even with data unread, and programs that stop at
  // POLLHUP (rstream -T a) would lose our last bytes.
  bool lingering() const { return (state_ & kConnected) && !(state_ & (kReadable | kWritable)); }
  std::chrono::milliseconds linger_time() const;
  void release();  // what rclose frees: the descriptor and the buffers
  // rclose of a copy another process still holds: nothing reaches the peer,
  // nothing shared is torn down; only this process's descriptors and
  // mappings go.
  void drop_copy();
  // This process is a fork child and the endpoint's objects are not its
  // own to destroy (mu_ held).
  bool endpoint_foreign() const;
  bool take_queued(std::shared_ptr<Socket>* out);  // mu_ held
  // raccept's wait for a queued connection's set-up: 0, or -EMFILE or
  // -ENFILE when it failed for want of a descriptor (then to be closed).
  int settle_accepted();
  bool sends_drained() const;

  // Protocol engine.
  int process_cq(Lock& lk);
  void repost_recv();
  void handle_completion(const prov::Completion& wc);
  void handle_send_completion(uint64_t wr_id, int status);
  // ep_->post_send, accounting at once for a work request done at post time.
  int post(const prov::SendWr& wr);
  // post() on one of the control slots, given back when it was not posted.
  int post_ctrl(const prov::SendWr& wr);
  void handle_recv(uint32_t imm, uint32_t len);
  void take_target_buffer(uint32_t len);
  bool can_send() const;
  bool ctrl_ready() const { return ctrl_avail_ > 0 && !has(kAwaitPeerFirst); }
  void give_credits();
  int send_credits();
  int send_ctrl(uint32_t ctrl);
  int send_iomaps(Lock& lk, bool nonblock);
  // Posts one write; `op` tags the completion, `imm` (when with_imm) is sent.
  int post_data(uint32_t op, uint32_t imm, const void* src, uint32_t len, bool from_user,
                uint64_t raddr, uint32_t rkey, bool with_imm);
  // Waits until pred() holds (progressing the CQ), fails or, when
  // nonblocking, returns -EAGAIN. A template: the predicate is inlined on
  // the data path.
  // `until`: SO_RCVTIMEO/SO_SNDTIMEO's end, -EAGAIN once it passed.
  // `quiet`: the caller holds nothing but mu_ and its own Turn (a send or
  // receive), so its sleeps are quiet (core/base/signal_depth.h).
  template <typename Pred>
  int wait_for(Lock& lk, bool nonblock, Pred&& pred, Deadline until = Deadline::max(),
               bool quiet = false) {
    SpinPhase spin;
    uint64_t signals = nonblock ? 0 : signal_probe::seen();
    for (;;) {
      if (int rc = wait_progress(lk)) return rc;
      if (pred()) return 0;
      // Inline, what wait_idle would answer a busy-polling caller.
      if (nonblock && (state_ & (kConnected | kError | kConnectError)) == kConnected)
        return -EAGAIN;
      // A handler that ran while we spun or between two sleeps: the
      // kernel's sleep would have been interrupted (signal(7): never
      // restarted with SO_RCVTIMEO/SO_SNDTIMEO set).
      if (!nonblock && signal_probe::interrupted(&signals, until == Deadline::max())) return -EINTR;
      if (int rc = wait_idle(lk, nonblock, &spin, until, quiet); rc <= 0) return rc;
    }
  }
  // wait_for's steps: progress the connection and the CQ; then, with pred()
  // false, decide: 1 to look again (after spinning or sleeping), else return.
  int wait_progress(Lock& lk) {
    if (!ep_) return -ENOTCONN;
    if (phase() == kConnecting) progress_connect(lk);
    process_cq(lk);
    return 0;
  }
  int wait_idle(Lock& lk, bool nonblock, SpinPhase* spin, Deadline until, bool quiet);
  int block_once(Lock& lk, Deadline until, bool quiet);
  // A sleep of at most `ms` (<= 0: none) cut to wake at the connect deadline.
  int connect_sleep_ms(int ms) const;
  void set_error(int err, const char* why);
  // ECONNRESET for the application, and the transport torn down.
  // peer_fault: the peer broke the protocol, and nothing more it sent is read.
  void fail_connection(const char* why, bool peer_fault);
  // The peer stopped writing (a SHUTDOWN): EOF after the queued data.
  void peer_shut_writing();
  // The peer is gone (its DISCONNECT, or a send after its transport
  // ended): EOF after the queued data, sends fail (EPIPE), hung up.
  void peer_disconnected();
  // Every message we sent was consumed by the peer, as far as its credits
  // tell (it returns them in batches: a small unreported read counts as
  // unread).
  bool peer_read_all() const {
    return static_cast<uint16_t>(sseq_comp_ - sseq_no_) == peer_credits_;
  }
  // rclose with data unread, as Linux's close then: a reset. The
  // transport ends without a DISCONNECT and the peer's data stays unread,
  // so the peer reads ECONNRESET (mu_ held).
  void reset_on_close();
  int data_error(bool sending);
  bool sends_refused();  // mu_ held: a send gets data_error(true)
  bool is_nonblocking(int flags) const { return nonblock_ || (flags & MSG_DONTWAIT); }

  const int fd_;
  const int domain_;
  FutexMutex mu_;
  // One sender and one receiver at a time: a flag taken under mu_ and held
  // across the sleeps that release it (cheaper than a mutex per direction),
  // with its holder's thread.
  struct Direction {
    bool busy = false;
    pthread_t by{};  // the holder
  };
  Direction sending_, receiving_;
  class Turn {
   public:
    // Inline: the uncontended case is a flag test on every call.
    Turn(Socket& s, Lock& lk, Direction* d) : s_(s), d_(d) {
      if (d_->busy) {
        // Held by this thread: a signal handler over the holder's quiet
        // sleep, which would wait for itself.
        if (pthread_equal(d_->by, pthread_self())) {
          refused_ = true;
          return;
        }
        wait(lk);
      }
      d_->busy = true;
      d_->by = pthread_self();
    }
    ~Turn() {
      if (refused_) return;
      d_->busy = false;
      s_.kick_.wake();  // one may be waiting for its turn
    }
    Turn(const Turn&) = delete;
    Turn& operator=(const Turn&) = delete;
    // The turn is this thread's already (its handler's call): EAGAIN.
    bool refused() const { return refused_; }

   private:
    void wait(Lock& lk);
    Socket& s_;
    Direction* d_;
    bool refused_ = false;
  };

  uint32_t state_ = kInit;
  uint32_t phase() const { return state_ & kPhaseMask; }
  void set_phase(uint32_t phase) { state_ = (state_ & ~kPhaseMask) | phase; }
  bool has(uint32_t bits) const { return state_ & bits; }
  void set(uint32_t bits, bool on = true) { state_ = on ? state_ | bits : state_ & ~bits; }
  int err_ = 0;              // SO_ERROR
  bool nonblock_ = false;    // O_NONBLOCK (F_SETFL)
  bool off_stream_ = false;  // set_off_stream()
  // kFellBack: the kernel socket in an edge-triggered epoll of its own,
  // whose events count as changes_ (edge-triggered epoll's change count
  // until librspreload hands the descriptor to the kernel); -1: not counted.
  int kernel_events_ep_ = -1;
  void watch_kernel_events();
  // FD_CLOEXEC (F_SETFD); read without mu_ (an exec's hook may run in a
  // signal handler whose thread holds it).
  std::atomic<int> fd_flags_{0};
  // options_fd(): -2 not asked yet, -1 fd_ answers, else the TCP socket
  // made to answer for a connection whose descriptor is no TCP socket.
  int options_fd_ = -2;
  int shutting_ = 0;  // threads inside shutdown(), which may sleep
  bool take_deferred_close_locked();
  // defer_close() said yes (written under mu_; read first without it by
  // every call's take_deferred_close).
  std::atomic<bool> close_deferred_{false};
  std::chrono::steady_clock::time_point linger_deadline_{};
  unsigned idle_cq_polls_ = 0;
  // Threads blocked on this socket (blocking calls, rpoll). Whoever makes
  // progress (completions processed, state changed) kicks so the others
  // re-check: a sender's credits may arrive through the receiver's
  // processing.
  Kick kick_;
  // Every kick is an event: edge-triggered epoll's change count.
  uint64_t changes_ = 0;
  void kick_waiters() {
    changes_++;
    kick_.wake();
  }
  short ready_now(short events);  // readiness from the state as it is (mu_ held)
  Options opt_;
  sockaddr_storage peer_addr_{};
  socklen_t peer_len_ = 0;

  // Connecting side: when an unanswered connect fails with ETIMEDOUT
  // (connect_timeout); the epoch's zero on the accepting side (none).
  std::chrono::steady_clock::time_point connect_deadline_{};
  std::unique_ptr<prov::Endpoint> ep_;
  uint32_t caps_ = 0;  // ep_->caps(), from start_endpoint() on
  std::unique_ptr<prov::Listener> listener_;
  std::deque<std::shared_ptr<Socket>> accept_queue_;
  int accept_efd_ = -1;  // counts queued connections and accept_err_ (readable when any)
  size_t backlog_ = 1;   // the accept queue's limit (accept_queue_limit)
  int accept_err_ = 0;   // kAcceptStarved's errno, for the next raccept
  // A request taken whose rsocket number could not be made (EMFILE): it
  // keeps its transport's descriptor, so the program's own calls still
  // meet the shortage, and is the next one tried.
  std::unique_ptr<prov::Endpoint> starved_ep_;
  bool room_again();  // mu_ held: a full queue just gave one up (the listen thread must look)
  void note_accept_error(int err);  // mu_ held
  int take_accept_error();          // mu_ held; -errno, or 0 when none
  // Serving one request (get_request to queued): the listen service's
  // fork handler waits it out; a fork child frees it from a parent thread
  // serving inline (fork_child).
  std::mutex serve_mu_;
  // The descriptor of the request being answered (under serve_mu_), -1:
  // none. A fork child closes its copy when a parent thread was answering.
  int answering_fd_ = -1;
  pid_t forked_for_ = 0;                    // the fork child fork_child last ran in
  std::atomic<bool> listen_shared_{false};  // shared by fork: served inline
  int fork_err_ = 0;                        // the child could not take the listener over (errno)
  bool fork_err_told_ = false;              // raccept logged why (once)
  // The child took the listener's tcp/shm part over, not its verbs part:
  // the next raccept logs it.
  bool fork_part_untold_ = false;

  ProcessShare share_;  // joined: counted at each fork
  // This process's copy of the connection may look at it (may_look) or
  // move it (may_move): share_'s turn (core/base/process_share.h). Every
  // call that reads the engine's state looks first (a copy out of date
  // takes the state over then), so nothing is built from an old copy.
  // Program threads take the turn as they move it; the library's own
  // threads only where no fork sibling may be about to (settled). A copy
  // another process moved past is stale for good: its connection fails
  // here (went_stale), nothing of it reaching the peer, which the current
  // holder goes on talking to.
  bool may_look();
  bool may_move();
  // may_move without a take-over, for work already built from this copy
  // (a request, completions its endpoint read): the turn, or stale.
  bool may_move_as_is();
  void went_stale();
  // The hand-over of a fork-shared connection (handover.cc): room asked
  // for at join; the state left by the holder of the turn as it goes, and
  // taken up by a copy out of date (mu_ held for both).
  void want_handover();
  bool hand_over_locked();
  bool take_over_locked();
  struct EngineState;
  void engine_fields(EngineState* st, bool save);
  // Connected, with nothing under way that only this process's threads
  // or memory hold: what a hand-over (fork or exec) needs.
  bool quiet_locked() const;
  // The engine's state and the unread messages' lengths, out and back in.
  void put_engine(std::vector<uint8_t>* out);
  static bool get_engine(PodReader* r, EngineState* st, std::vector<uint32_t>* lens);
  void apply_engine(EngineState* st, const std::vector<uint32_t>& lens);
  bool exec_state(std::vector<uint8_t>* out, std::vector<int>* keep);
  // exec_restore's steps after the state was read (exec_handover.cc).
  struct ExecHeader;
  void exec_fields(ExecHeader* h, bool save);
  int exec_rebuild(ExecHeader& h, const uint8_t* rbuf, const uint8_t* target, EngineState* st,
                   const std::vector<uint32_t>& lens, const uint8_t* ep_state, size_t ep_len,
                   const prov::Renumber& renumber);
  // A name the peer may write rbuf (or the target table) by, from an
  // image of this process before an exec (exec_handover.cc).
  struct WireName {
    bool target;
    uint32_t key;
    uint64_t addr;
  };
  std::vector<WireName> wire_names_;
  sockaddr_storage exec_name_{};  // exec_lost(): getsockname's answer
  // exec_give_away(): a vfork child's new program has the connection (a
  // close here is a copy's), and what exec_take_back restores.
  bool given_away_ = false;
  uint32_t given_state_ = 0;
  int given_err_ = 0;
  socklen_t exec_name_len_ = 0;
  pid_t made_in_ = 0;     // process that made the endpoint
  bool tracked_ = false;  // fork::track()ed (mu_ not needed: join and leave)

  // Buffers (conn_buffer.h): rbuf and the target table are written by
  // the peer. The pointers and keys the data path reads are copied out.
  ConnBuffer rbuf_mem_{prov::kAccessRemoteWrite}, target_mem_{prov::kAccessRemoteWrite},
      sbuf_mem_{prov::kAccessLocal};
  uint32_t rbuf_rkey_ = 0, sbuf_lkey_ = 0;
  uint8_t* rbuf_ = nullptr;
  uint8_t* sbuf_ = nullptr;
  RsSge* target_sgl_ = nullptr;      // kSglSize entries, written by the peer
  uint8_t* target_iomap_ = nullptr;  // opt_.iomap_size entries, written by the peer

  // Send side.
  uint16_t sseq_no_ = 0, sseq_comp_ = 0;
  uint16_t peer_credits_ = 0;  // its receive queue's size (the credits it gave at first)
  uint32_t sqe_avail_ = 0, ctrl_avail_ = kQpCtrlSize;
  uint32_t sbuf_bytes_avail_ = 0, sbuf_head_ = 0;
  // Our copy of the peer's receive buffers. The shared entries are read
  // only after the update's completion: the peer writes them at any time.
  RsSge target_[kSglSize] = {};
  int target_sge_ = 0;
  int sgl_slot_ = 1;  // entry the peer's next buffer update lands in
  RsSge remote_sgl_{};
  int remote_sge_ = 1;
  RsSge remote_iomap_{};
  uint32_t remote_iomap_size_ = 0;
  bool swap_sgl_ = false;
  uint32_t max_inline_ = 0;

  // Receive side.
  uint16_t rseq_no_ = 0, rseq_comp_ = 0;
  uint32_t rbuf_bytes_avail_ = 0, rbuf_free_offset_ = 0, rbuf_offset_ = 0;
  uint32_t rbuf_in_pos_ = 0;  // where the peer's next message must land
  uint32_t rbuf_queued_ = 0;  // bytes received, not yet read
  bool heard_data_ = false;   // a data message arrived (its credit updates may meet its end)
  struct Rmsg {
    uint32_t len;
  };
  Fifo<Rmsg> rmsg_;
  uint32_t rmsg_head_consumed_ = 0;  // bytes already read from rmsg_.front()

  std::vector<Iomap> iomaps_;
  std::vector<RsIomap> peer_iomaps_;     // copies of entries the peer published to us
  std::vector<bool> remote_slots_used_;  // slots of the peer's table we fill
};

}  // namespace ss::rs
