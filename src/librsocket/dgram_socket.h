// A datagram rsocket (SOCK_DGRAM): UDP's semantics over two transports.
// To peers on this host whose rendezvous answers (dgram_shm.h), datagrams
// go into their receive ring in shared memory; to any other peer over the
// rsocket's own kernel UDP socket (its descriptor), each behind a
// DgramHeader (dgram_wire.h). A receive takes from its ring first, then
// from the kernel socket. Internally every function returns 0 / a count,
// or -errno. Both receive queues drop when full, never blocking the
// sender, and count: the ring itself, the kernel with every datagram
// (SO_RXQ_OVFL).
#pragma once
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "core/base/kick.h"
#include "core/base/pollable.h"
#include "librsocket/dgram_shm.h"
#include "librsocket/dgram_verbs.h"
#include "librsocket/dgram_wire.h"

namespace ss::rs {

class DgramSocket final : public Pollable {
 public:
  // A new datagram rsocket of `domain`; `flags`: SOCK_NONBLOCK, SOCK_CLOEXEC.
  static int create(int domain, int flags, std::shared_ptr<DgramSocket>* out);
  DgramSocket(int fd, int domain)
      : fd_(fd),
        domain_(domain),
        verbs_(dgram_verbs_enabled() ? std::make_shared<DgramVerbs>(fd, domain) : nullptr) {}
  ~DgramSocket();  // closes the descriptor: no call is using it any more
  DgramSocket(const DgramSocket&) = delete;
  DgramSocket& operator=(const DgramSocket&) = delete;

  int fd() const { return fd_; }

  int bind(const sockaddr* addr, socklen_t len);
  // A default destination; AF_UNSPEC dissolves it (and the filter on
  // what is received), as UDP.
  int connect(const sockaddr* addr, socklen_t len);
  int shutdown(int how);
  void close();  // rclose: wakes every caller asleep on it

  // msg.msg_name null: the connected destination.
  ssize_t send(const msghdr& msg, int flags);
  // msg->msg_name gets the source address; msg_flags MSG_TRUNC when the
  // datagram was longer than the buffers (the rest is discarded).
  ssize_t recv(msghdr* msg, int flags);

  int getsockname(sockaddr* addr, socklen_t* len);
  int getpeername(sockaddr* addr, socklen_t* len);
  int setsockopt(int level, int name, const void* val, socklen_t len);
  int getsockopt(int level, int name, void* val, socklen_t* len);
  int fcntl(int cmd, long arg);

  // Pollable (core/base/pollable.h): rpoll, and this socket's own sleeps.
  short readiness(short events) override;
  short readiness_repeat(short events) override;
  WaitTarget wait_target(short events, int* sleep_ms) override;
  void after_wait(const WaitTarget& armed, bool kicked) override;
  // In a fork child: the locks a parent thread held at the fork are freed
  // (the shared-memory sender's and the verbs side's too). Over verbs the
  // QPs stay the parent's (DgramVerbs::fork_child): calls needing them
  // fail with EOPNOTSUPP, rpoll reports POLLERR.
  void fork_child() override;

 private:
  // Opens the shared-memory receive side once the socket has a name.
  void open_receiver();  // recv_mu_ held
  // Our name for shm senders' slots; binds to the wildcard first when
  // unbound, as UDP's first send does. -errno.
  int own_name(sockaddr_storage* name);
  // The ring's next good datagram, dropping bad ones and, on a connected
  // socket, those from elsewhere (as the kernel filters). recv_mu_ held.
  DgramSlot* ring_head(sockaddr_storage* src, socklen_t* src_len);
  // `full`: look at the kernel socket whatever kernel_look_due() says
  // (before a sleep). recv_mu_ held.
  short readiness_locked(short events, bool full);
  // Whether a repeated look goes beyond the ring to the kernel socket and
  // the rendezvous (syscalls): always until a sender's ring exists, then
  // every dgram_kernel_ratio-th look, or at once when the kernel reported
  // readiness or a sleep ended. A non-blocking call's look, and the look
  // before a sleep, always do (EAGAIN means both queues are empty); a
  // blocking call spins with repeats from its first look.
  // recv_mu_ held.
  bool kernel_look_due();
  // Whether a look at the kernel socket also answers the rendezvous
  // (accept4): always until a sender's ring exists, then every
  // dgram_kernel_ratio-th time or after a sleep (a sender dialling a
  // sleeper wakes it). Meanwhile a new sender's datagrams go over UDP,
  // where that look finds them. recv_mu_ held.
  bool serve_due();
  // The epoll set a sleeper waits on (kernel socket, rendezvous, ring
  // wake-up), made at the first wait. recv_mu_ held; -errno.
  int wait_set();
  void count_malformed(DgramFault fault);
  static void count_malformed_cb(void* self, DgramFault fault) {
    static_cast<DgramSocket*>(self)->count_malformed(fault);
  }
  // Answers senders at the rendezvous; a ring made now joins the wait set
  // and learns of sleepers already waiting. recv_mu_ held.
  void serve_senders();
  // One receive attempt that never sleeps: -EAGAIN when nothing good is
  // queued; `repeat` (a blocking receive spinning): the kernel socket only
  // when kernel_look_due(). The ring is looked at again after the kernel's
  // EAGAIN (a datagram published during the syscall). recv_mu_ held.
  ssize_t try_recv(msghdr* msg, int flags, bool repeat);
  // Counts a bad datagram and, when it was only peeked, takes it off the
  // queue. recv_mu_ held.
  void drop(DgramFault fault, bool peeked);
  // Drops bad datagrams at the head of the kernel queue (rpoll: readable
  // means a good one waits): whether a good one (or an error) is next.
  // recv_mu_ held.
  bool drop_bad_heads();
  void note_overflow(const msghdr& m);
  bool nonblocking(int flags) const {
    return (flags & MSG_DONTWAIT) || nonblock_.load(std::memory_order_relaxed);
  }

  const int fd_;
  const int domain_;
  const bool shm_ = dgram_shm_enabled();
  // SLIPSTREAM_PROVIDER=verbs: upstream's protocol over UD queue pairs
  // instead of our UDP format (no shared memory then).
  // Shared: fork's registry holds it while it counts it (fork::track).
  const std::shared_ptr<DgramVerbs> verbs_;
  DgramShmReceiver rx_;  // recv_mu_
  DgramShmSender tx_;
  int wait_fd_ = -1;  // recv_mu_
  int sleeping_ = 0;  // recv_mu_: threads between wait_target and after_wait
  // recv_mu_: rclose wakes this process's sleepers through it; a shutdown
  // of the kernel socket would end it for a fork's other process too.
  Kick kick_;
  bool wait_has_event_ = false;  // recv_mu_: the ring's eventfd is in wait_fd_
  sockaddr_storage peer_{};      // recv_mu_: the connected destination (ss_family 0: none)
  // A costly look (syscalls) taken at every dgram_kernel_ratio-th chance,
  // or at the next one when hinted.
  struct EveryNth {
    bool hint = true;      // something may be waiting there
    uint32_t skipped = 0;  // chances passed since the last look
    bool due(bool always);
  };
  EveryNth kernel_look_;  // recv_mu_: the kernel socket (chances: looks at the ring)
  EveryNth serve_;        // recv_mu_: the rendezvous (chances: looks at the kernel socket)
  std::mutex name_mu_;
  sockaddr_storage name_{};       // name_mu_: our name once bound (ss_family 0: not yet)
  sockaddr_storage send_peer_{};  // name_mu_: peer_ for senders, as the kernel names it
  socklen_t send_peer_len_ = 0;   // name_mu_: 0: not connected
  // One receiver at a time inside a receive: a datagram peeked and found bad
  // is then taken off the queue, and must be that one.
  std::mutex recv_mu_;
  std::atomic<bool> nonblock_{false};
  std::atomic<bool> shut_rd_{false};  // rshutdown(SHUT_RD) or rclose: reads give 0
  std::atomic<bool> shut_wr_{false};  // rshutdown(SHUT_WR) or rclose: sends give EPIPE
  std::atomic<uint8_t> peer_version_{
      0};                               // the connected destination's DgramHeader version; 0: none
  std::atomic<uint64_t> overflow_{0};   // the kernel's drops (SO_RXQ_OVFL), as of the last datagram
  std::atomic<uint64_t> malformed_{0};  // our drops: datagrams dgram_check refused
  std::atomic<bool> warned_{false};     // one warning per socket, however many bad datagrams
};

}  // namespace ss::rs
