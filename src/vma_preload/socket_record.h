// A socket the VMA preload decided on: the fd table's kVmaSocket object,
// the program's descriptor being the kernel socket. It holds the decision,
// the socket's vmastat block and, for a UDP socket decided "vma" once bound
// on an address a netdev's rings can serve, its offloaded path (offload());
// for a TCP socket decided "vma" whose connect() the rings took, its
// connection (tcp()). Both are freed with the record when the program
// closes the socket or its number is reused.
#pragma once
#include <unistd.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/base/fd_table.h"
#include "core/base/kick.h"
#include "core/base/pollable.h"
#include "interpose/signal_count.h"
#include "libvmacompat/ring_logic.h"
#include "libvmacompat/stats_publisher.h"
#include "vma_preload/decision.h"
#include "vma_preload/tcp_listen.h"
#include "vma_preload/tcp_offload.h"
#include "vma_preload/udp_multicast.h"
#include "vma_preload/udp_offload.h"
#include "vma_preload/xtreme_kernel.h"

namespace ss::vma::preload {

// Set in a fork child of a process that had rings (fork_child.cc): the
// rings, the XDP program and every offloaded path are the parent's, so
// the child's sockets, inherited or new, are served by their kernel
// sockets, and the inherited records are never freed (their endpoints
// and lent frames would touch the parent's steering and fill rings). One
// exception: an inherited listener joins the parent's rings with
// listeners of the child's own (SocketRecord::listening), whose accepted
// connections are the child's records, on its rings.
extern std::atomic<bool> g_fork_child;
inline bool in_fork_child() { return g_fork_child.load(std::memory_order_relaxed); }
// This process's pid, set again in each fork child's handler (glibc
// caches none: getpid() is a system call).
extern std::atomic<pid_t> g_pid;
// The process's forks (fork_child.cc counts them in the parent).
extern std::atomic<uint64_t> g_forks;
inline uint64_t forks_so_far() { return g_forks.load(std::memory_order_relaxed); }

// A Pollable (poll_mixed, select_mixed, EpollSet): readable when the rings
// or the kernel socket have a datagram, writable as the kernel socket (a
// send the rings cannot take goes through it). An offloaded socket's sleep
// waits on its wait set (udp_offload_wait.cc: the kernel socket, the
// rings' wake-ups, its endpoints' kicks); any other socket's on the kernel
// socket. A socket that can no longer be offloaded is kernel_served(): an
// epoll set leaves it to the kernel.
struct SocketRecord final : Pollable {
  SocketRecord(int fd, int family, int type, int protocol, bool blocking, Decision decision);
  ~SocketRecord();
  SocketRecord(const SocketRecord&) = delete;
  SocketRecord& operator=(const SocketRecord&) = delete;

  // The decision, changed once by bind() (a udp_receiver port rule).
  Decision decision() const;

  short readiness(short events) override;
  // While spinning, the kernel socket once per VMA_SELECT_POLL_OS_RATIO
  // looks (0: never) when only POLLIN is asked; the rings every time.
  short readiness_repeat(short events) override;
  WaitTarget wait_target(short events, int* sleep_ms) override;
  void after_wait(const WaitTarget& armed, bool) override;
  // Offloaded: the datagrams and a listener's connections, of the rings
  // and of the kernel socket (ArrivalEdges), or a connection's changes.
  bool change_count(uint64_t* count) override;
  bool kernel_served() override;
  void set_decision(Decision d);

  // The offloaded path, or null (the kernel serves the socket). Null in a
  // fork child, whose first call on a socket its parent had offloaded asks
  // the parent to lend the port to the kernel (fork_share.h), and in a
  // signal handler that interrupted this thread inside the offload
  // (interpose::BusyScope).
  UdpOffload* offload() const { return usable(offload_); }
  // The offloaded TCP connection, or null: the kernel socket's (once the
  // connection was handed to it). In a fork child, null: its first call
  // on a connection the parent had on the rings asks the parent to hand
  // it to the kernel socket (hand_tcp_to_kernel).
  TcpOffload* tcp() const {
    if (inherited()) {
      if (!fork_answered_.load(std::memory_order_acquire)) ask_parent();
      return interpose::handler_over_busy() ? nullptr : child_tcp_.load(std::memory_order_acquire);
    }
    return interpose::handler_over_busy() ? nullptr : tcp_.load(std::memory_order_acquire);
  }
  // Whether tcp() hides an offloaded connection from a signal handler
  // over the library (its stack's locks may be held under it).
  bool tcp_out_of_reach() const {
    return interpose::handler_over_busy() && own_tcp().load(std::memory_order_acquire);
  }
  // Parent: the offloaded TCP connection goes to the kernel socket for
  // good (TcpOffload::hand_to_kernel), so each process sharing the
  // descriptor has it; `why` is logged. Whether it moved.
  bool hand_tcp_to_kernel(const char* why);
  // A descriptor of this socket leaves for another process (exec,
  // SCM_RIGHTS), which has only the kernel socket: an offloaded TCP
  // connection goes there, in a fork child by asking its parent.
  void tcp_for_another_process(const char* why);
  // connect() of this socket: 1 when the rings do not take it (not TCP,
  // not decided "vma", TCP offload off, a peer the rings do not reach, a
  // try that failed: the caller connects the kernel socket); else
  // connect(2)'s answer, 0 or -errno.
  int connect_tcp(const sockaddr* to, socklen_t len);
  // listen(2) of this socket: the kernel's, and listeners on the rings
  // for a TCP socket decided "vma" (TCP offload on), once; -1 and errno
  // when the kernel's fails. listening(): those, or null (accept is the
  // kernel's).
  int listen_tcp(int backlog);
  // In a fork child, a listener the parent had on the rings gets
  // listeners of its own on the parent's queues (fork_join.h), which take
  // a share of the port's new connections; where they cannot be made, it
  // asks the parent to give the listener to the kernel for good (as
  // offload() does for UDP), whose listener the processes then share.
  TcpListen* listening() const { return inherited() ? child_listening() : usable(listen_); }
  // After an accept on listening(): once a listener that left the rings
  // for a fork child gave out what it kept, the kernel's serves every call
  // (edge-triggered epoll, accept beside socketXtreme), as with nothing kept.
  void after_accept();
  // close(2) of its last descriptor, before the record goes: an offloaded
  // connection's FIN and SO_LINGER (TcpOffload::begin_close); or, after a fork since the
  // connection opened, its hand-over to the kernel socket, which a child
  // may still hold (Linux's close then leaves the connection to it).
  void before_last_close(const std::shared_ptr<SocketRecord>& self);
  // Parent, a connection parked at its close (tcp_park.h): to the kernel
  // socket kernel_fd (the program's descriptor is closed), or to a fork
  // child's stack, its netdev and state (encode_handover) out: 0 or -errno.
  void hand_parked_to_kernel(int kernel_fd, const char* why);
  int give_tcp_to_stack(std::string* ifname, std::vector<uint8_t>* bytes);
  // The process's exit (tcp_exit.cc): a connection opened before a fork
  // goes to its kernel socket, which a child may hold, as at its close.
  void before_exit();
  // A connection a listener of the rings accepted, for this new socket.
  void adopt_tcp(std::unique_ptr<TcpOffload> t);
  // socketXtreme's connection accepted from an auto-accepting listener's
  // kernel socket (xtreme_kernel.h), peer `peer`: the kernel's for good, a
  // member of r's ring descriptor until its close. False when it cannot be.
  bool join_xtreme_kernel(NetdevRings* r, const sockaddr_storage& peer);
  XtremeKernelMember* xtreme_kernel() const { return xtreme_kernel_.get(); }
  // Its membership's key, 0 once left: a poll on another thread checks it
  // (the record may be closing there).
  uint64_t xtreme_kernel_key() const { return xtreme_key_.load(std::memory_order_acquire); }
  // As offload(), without a fork child's request: for calls that only
  // report (dump_fd_stats, the ring fds).
  UdpOffload* offload_quiet() const {
    return inherited() || interpose::handler_over_busy() ? nullptr
                                                         : offload_.load(std::memory_order_acquire);
  }
  // Whether the connection is on the rings, as tcp() without a fork
  // child's request: for calls that only report.
  bool tcp_on_rings() const { return own_tcp().load(std::memory_order_acquire) != nullptr; }
  // In a fork child: a listener the parent had on the rings.
  bool inherited_listener() const {
    return inherited() && listen_.load(std::memory_order_relaxed) != nullptr;
  }
  // In a fork child: the record came with the fork (its offloaded parts
  // are the parent's), rather than made here.
  bool inherited() const {
    return in_fork_child() && born_pid_ != g_pid.load(std::memory_order_relaxed);
  }
  // Parent (fork_share.cc): a fork child `pid` receives on this socket
  // (lend), or that child is gone: the port's flows go to the kernel while
  // any such child lives. Whether the socket is offloaded (lend: so lent).
  // A TCP listener or connection goes to the kernel for good (false: there
  // is nothing to take back).
  bool lend_to_fork_child(bool lend, int pid);
  // In a fork child's handler, for each inherited record: it asks its
  // parent anew at its first use here (what the process that forked us
  // asked is that one's).
  void start_in_fork_child();
  // Gives a bound UDP socket decided "vma" its offloaded path, once (not
  // before the kernel gave it a port). Stats show offloaded=1 if it got one.
  void try_offload();
  // Takes the socket off the rings for good, or keeps a socket not yet
  // offloaded from ever being: the kernel receives for it again (a
  // waiting call the preload does not serve, `why`, would sleep through
  // the rings). Ring datagrams not yet read are dropped (counted in
  // kRxReadyPktDrop). Must not race a data call on the socket in another
  // thread (libvma(7), BUGS).
  void hand_back(const char* why);

  const int fd, family, type, protocol;  // type without SOCK_NONBLOCK/SOCK_CLOEXEC
  const uint64_t id;                     // unique in the process, kept by its fork children
  const bool created_blocking;
  stats::SocketStats stats;                // empty when every block is taken
  std::atomic<bool> stats_written{false};  // to VMA_STATS_FILE (stats_file.h)
  // The program set SO_SNDBUF or SO_RCVBUF: its connections' buffers of
  // that side stay that size (Linux stops growing them then).
  std::atomic<bool> sndbuf_set{false}, rcvbuf_set{false};
  // The library bound the kernel socket to an IPv6 source address for an
  // offloaded connect, which set its IPV6_V6ONLY (Linux's bind does); the
  // program's socket, connected by Linux, would have kept it clear.
  std::atomic<bool> v6only_by_bind{false};
  McastState mcast;      // memberships and send options (udp_multicast.h)
  RxExtras rx_extras;    // the Extra API's (zcopy.cc); before offload_owner_
  RingLogic ring_logic;  // SO_VMA_RING_ALLOC_LOGIC (extra_sockopts.h)
  // An error the offloaded path met after recvmmsg's first datagram: the
  // kernel keeps such an error as the socket's sk_err, which its next
  // receive of any kind, or getsockopt(SO_ERROR), reports and clears, and
  // poll shows as POLLERR meanwhile (0: none).
  std::atomic<int> late_error{0};
  int take_late_error() {
    return late_error.load(std::memory_order_relaxed)
               ? late_error.exchange(0, std::memory_order_relaxed)
               : 0;
  }

  bool tcp_wanted() const;  // TCP, decided "vma", SLIPSTREAM_VMA_TCP on

 private:
  // What a call may use of an offloaded part: null in a fork child (whose
  // first look asks the parent, fork_share.h) and in a signal handler
  // that interrupted this thread inside the offload (interpose::BusyScope).
  template <class T>
  T* usable(const std::atomic<T*>& part) const {
    if (inherited()) {
      if (!fork_asked_.load(std::memory_order_relaxed)) ask_parent();
      return nullptr;
    }
    return interpose::handler_over_busy() ? nullptr : part.load(std::memory_order_acquire);
  }
  // Under offload_mu_, for the socket's address `local` (null: not
  // known): whether listening was decided "vma" (false: logged why not)
  // and, if so, the listeners made (null: none could be).
  bool make_tcp_listener(int backlog, const sockaddr* local, socklen_t llen,
                         std::unique_ptr<TcpListen>* out);
  // This process's own listener, published: the one it made; in a fork
  // child, the one it made on its parent's queues or on rings it took over.
  std::atomic<TcpListen*>& own_listen() { return inherited() ? child_listen_ : listen_; }
  // offload_mu_ held: a fork child takes the listener to the kernel for
  // good (lend_to_fork_child); whether it left the rings.
  bool lend_listener_locked(bool lend, int pid);
  std::mutex offload_mu_;
  bool offload_tried_ = false;                   // under offload_mu_
  std::unique_ptr<UdpOffload> offload_owner_;    // under offload_mu_
  int fork_sharers_ = 0;                         // under offload_mu_: fork children lent the port
  mutable std::atomic<bool> fork_asked_{false};  // in a fork child: asked its parent
  // ... and the answer came: another thread's call waits for it (ask_mu_),
  // rather than find the kernel socket before the connection is there.
  mutable std::atomic<bool> fork_answered_{false};
  mutable std::mutex ask_mu_;
  // may_take: a connection the parent left may come onto this process's
  // rings (not when it leaves for another image: exec).
  void ask_parent(bool may_take = true) const;
  void ask_parent_locked(bool may_take) const;
  std::atomic<UdpOffload*> offload_{nullptr};
  std::unique_ptr<TcpOffload> tcp_owner_;  // under offload_mu_
  std::atomic<TcpOffload*> tcp_{nullptr};
  uint64_t tcp_forks_ = 0;  // under offload_mu_: forks_so_far() at tcp_owner_
  // Under offload_mu_: the program closed it here (its number may be
  // another socket's now): a fork child's late ask hands nothing over.
  bool tcp_closed_ = false;
  bool hand_tcp_locked(const char* why, int kernel_fd = -1);
  void tcp_to_kernel_locked();  // the kernel socket serves the connection's calls from now on
  std::atomic<bool> tcp_settled_{false};               // a connect or listen was tried
  std::unique_ptr<XtremeKernelMember> xtreme_kernel_;  // set before the program has the fd
  std::atomic<uint64_t> xtreme_key_{0};
  const pid_t born_pid_ = g_pid.load(std::memory_order_relaxed);
  // In a fork child, an inherited listener's own listeners (listening()):
  // made once, under a lock of the child's (records_fork_child()).
  TcpListen* child_listening() const;
  void join_in_child();
  std::unique_ptr<TcpListen> child_listen_owner_;
  std::atomic<TcpListen*> child_listen_{nullptr};
  // In a fork child, a connection the parent left it (tcp_park.h), on
  // rings of the child's own; kept with the record, as the inherited
  // parts are. child_tcp_forks_: forks_so_far() when it came.
  bool take_from_parent();
  void close_child_tcp();  // before_last_close's, for that connection
  std::mutex child_tcp_mu_;
  std::unique_ptr<TcpOffload> child_tcp_owner_;  // child_tcp_mu_
  std::atomic<TcpOffload*> child_tcp_{nullptr};
  uint64_t child_tcp_forks_ = 0;  // child_tcp_mu_
  // This process's connection: the one it opened or accepted; in a fork
  // child, the one its parent left it.
  const std::atomic<TcpOffload*>& own_tcp() const { return inherited() ? child_tcp_ : tcp_; }
  mutable std::atomic<bool> child_join_tried_{false};
  std::unique_ptr<TcpListen> listen_owner_;  // under offload_mu_
  std::atomic<bool> listen_left_{false};     // its legs left the rings (set under offload_mu_)
  std::atomic<TcpListen*> listen_{nullptr};
  // Set once a try ended (offloaded or refused) or the socket was handed
  // back: with offload_ null, the kernel's for good (kernel_served, lock-free).
  std::atomic<bool> offload_settled_{false};
  std::atomic<Transport> wanted_;
  std::atomic<const char*> why_;      // a string literal
  std::atomic<uint64_t> repeats_{0};  // readiness_repeat looks, for the OS ratio
  // Threads asleep on the kernel socket of a socket the rings may still
  // take: the bind, connect or listen that puts it on them kicks, so they
  // sleep without a bound meanwhile. Under settle_mu_ alone (a sleep's
  // arming must not wait for a connect under offload_mu_).
  std::mutex settle_mu_;
  Kick settle_kick_;
  uintptr_t settle_tag() const { return reinterpret_cast<uintptr_t>(&settle_kick_); }
  void settled_wake();
  // The look of readiness(): the rings, and the kernel socket if `kernel`.
  short look(short events, bool kernel);
};

// In a fork child's handler: the lock that makes an inherited listener's
// own listeners (listening()) is the child's, whatever a parent thread held.
void records_fork_child();

// Set while the preload makes its rings: the sockets it opens then (an
// ethtool query, netlink) are its own, never recorded.
extern thread_local bool t_making_rings;

// Records a new UDP or TCP socket of AF_INET/AF_INET6 (any other socket is
// left alone), logging the decision at debug.
void track_socket(int fd, int domain, int type, int protocol);
// After a successful bind() of fd (or a call that bound it implicitly:
// connect, the first send): the bound address into its block, for UDP the
// udp_receiver rules' decision (logged at debug), then the offloaded path
// if it is still "vma".
void socket_bound(int fd);
// Takes fd's record out of the table, if any (close()): the caller lets
// it go (interpose::release_after_busy in a handler over the library).
std::shared_ptr<SocketRecord> untrack_socket(int fd);
// The record the face acts on at fd: fd's, or, when the program closed fd
// while a duplicate lives on (the number held), the duplicate's. Null when
// neither.
std::shared_ptr<SocketRecord> record_acting_at(int fd);
// A number the kernel gave out again (socket, socketpair, pipe, open,
// creat: new_fds.cc) whose record is stale (closed behind the preload's
// back): the record loses the number, closing nothing.
void drop_stale(int fd);
// close() of a recorded socket's number (dup_calls.cc): the socket's
// record and kernel socket go with its last number.
int close_recorded(int fd);
// The highest fd ever recorded (dump_fd_stats(0) walks up to it);
// note_number() raises it for a duplicate's number.
int highest_tracked_fd();
void note_number(int fd);
// f(fd, record) for each recorded socket number, lowest first, until f
// returns false (a record with several numbers comes once per number).
template <class F>
void for_each_record(const F& f) {
  FdTable& t = FdTable::instance();
  for (int fd = 0, top = highest_tracked_fd(); fd <= top; fd++)
    if (t.kind(fd) == FdKind::kVmaSocket)
      if (auto s = t.get<SocketRecord>(fd, FdKind::kVmaSocket); s && !f(fd, s)) return;
}

}  // namespace ss::vma::preload
