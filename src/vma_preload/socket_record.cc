#include "vma_preload/socket_record.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cstring>
#include <memory>

#include "core/base/deadline.h"
#include "core/base/errno_guard.h"
#include "core/base/fd_table.h"
#include "core/base/log.h"
#include "interpose/edge.h"
#include "interpose/dup_share.h"
#include "interpose/real.h"
#include "libvmacompat/settings.h"
#include "libvmacompat/stats_process.h"
#include "vma_preload/fork_share.h"
#include "interpose/arrival_edges.h"
#include "vma_preload/netdev_rings.h"
#include "vma_preload/socket_flags.h"
#include "vma_preload/start.h"
#include "vma_preload/stats_file.h"
#include "vma_preload/tcp_park.h"
#include "vma_preload/wire_addr.h"

namespace ss::vma::preload {
namespace {

std::atomic<int> g_highest{-1};
std::atomic<uint64_t> g_next_id{1};

// The base type and the protocol the rules know it by, or 0 when the
// preload leaves the socket alone.
int rule_protocol(int domain, int type, int protocol) {
  if (domain != AF_INET && domain != AF_INET6) return 0;
  if (type == SOCK_DGRAM && (protocol == 0 || protocol == IPPROTO_UDP)) return IPPROTO_UDP;
  if (type == SOCK_STREAM && (protocol == 0 || protocol == IPPROTO_TCP)) return IPPROTO_TCP;
  return 0;
}

// A new socket's IP_MULTICAST_LOOP: VMA_TX_MC_LOOPBACK for a UDP socket
// libvma would offload, the kernel's default (on) for the others.
bool mc_loop_initial(int protocol, Decision d) {
  return protocol != IPPROTO_UDP || d.wanted != Transport::kVma ||
         settings::get(settings::Id::kTxMcLoopback) != 0;
}

}  // namespace

SocketRecord::SocketRecord(int fd_, int family_, int type_, int protocol_, bool blocking,
                           Decision d)
    : fd(fd_),
      family(family_),
      type(type_),
      protocol(protocol_),
      id(g_next_id.fetch_add(1, std::memory_order_relaxed)),
      created_blocking(blocking),
      ring_logic(settings::ring_allocation_logic(settings::Id::kRingAllocationLogicRx),
                 settings::ring_allocation_logic(settings::Id::kRingAllocationLogicTx)),
      wanted_(d.wanted),
      why_(d.why) {
  stats::Publisher* p = socket_stats();
  if (!p) return;
  stats = p->open_socket(fd, type, /*offloaded=*/false);
  // The family, through the unbound address; libvma's multicast loop default.
  sockaddr_storage any{};
  any.ss_family = static_cast<sa_family_t>(family);
  stats.set_bound(reinterpret_cast<const sockaddr*>(&any),
                  family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in));
  stats.set_flags(/*offloaded=*/false, blocking, mc_loop_initial(protocol, d));
}

SocketRecord::~SocketRecord() {
  {
    // The paths take the rings' and stacks' locks as they go (in the
    // members' reverse order): a handler then is served by the kernel.
    interpose::BusyScope busy;
    listen_owner_.reset();
    child_listen_owner_.reset();
    xtreme_kernel_.reset();
    tcp_owner_.reset();
    offload_owner_.reset();
  }
  if (stats::Publisher* p = stats::process_stats()) p->close_socket(stats);
}

Decision SocketRecord::decision() const {
  return {wanted_.load(std::memory_order_relaxed), why_.load(std::memory_order_relaxed)};
}

void SocketRecord::set_decision(Decision d) {
  wanted_.store(d.wanted, std::memory_order_relaxed);
  why_.store(d.why, std::memory_order_relaxed);
}

namespace {
// The socket whose change_count this thread just read: its next look
// (EpollSet reads the count, then the readiness) takes no new frame off
// the rings, which the count would not cover (a second edge, spurious).
thread_local const SocketRecord* t_counted = nullptr;
}  // namespace

short SocketRecord::look(short events, bool kernel) {
  interpose::BusyScope busy;  // the rings' locks (signal_count.h)
  const bool counted = t_counted == this;
  t_counted = nullptr;
  if (TcpOffload* t = tcp()) return t->readiness(events, !counted);
  if (TcpListen* l = listening()) return l->readiness(fd, events, !counted);
  short r = late_error.load(std::memory_order_relaxed) ? POLLERR : 0;
  UdpOffload* o = offload();
  if (o && (events & POLLIN) && (counted ? o->queued() : o->ring_readable())) {
    r |= POLLIN;
    if (events == POLLIN) return r;  // no syscall when the rings answer
  }
  if (!kernel) return r;
  pollfd p{fd, events, 0};
  return static_cast<short>(r | (interpose::real().poll(&p, 1, 0) == 1 ? p.revents : 0));
}

short SocketRecord::readiness(short events) { return look(events, true); }

short SocketRecord::readiness_repeat(short events) {
  // An edge-triggered member's look (change_count just ran) sees the
  // kernel socket too: a look without it would tell a datagram unread
  // there gone, and the next full look a new edge.
  if (events != POLLIN || !offload() || t_counted == this) return look(events, true);
  const int64_t ratio = settings::get(settings::Id::kSelectPollOsRatio);
  const uint64_t n = repeats_.fetch_add(1, std::memory_order_relaxed) + 1;
  return look(events, ratio > 0 && n % static_cast<uint64_t>(ratio) == 0);
}

WaitTarget SocketRecord::wait_target(short events, int* sleep_ms) {
  interpose::BusyScope busy;
  if (TcpOffload* t = tcp()) return t->wait_target(events, sleep_ms);
  if (TcpListen* l = listening()) return l->wait_target(fd, events, sleep_ms);
  // POLLIN, or an edge wait (interpose/arrival_edges.h): the rings too.
  if (UdpOffload* o = offload(); o && ((events & POLLIN) || interpose::edge_wait(events)))
    return o->wait_target(events, sleep_ms);
  WaitTarget t;
  t.fd = fd;
  t.events = events;
  // Not offloaded yet but it may be: another thread's bind (a first send),
  // connect or listen puts it on the rings, which a sleep on the kernel
  // socket would never see; that thread kicks. Without the kick (out of
  // descriptors), or once a part is there that this call may not use (a
  // signal handler over the library), looked at again every 20 ms.
  constexpr int kSliceMs = 20;
  if (!(events & POLLIN) || kernel_served()) return t;
  // A handler over the library: the interrupted frame may hold settle_mu_.
  if (!interpose::handler_over_busy()) {
    std::lock_guard<std::mutex> g(settle_mu_);
    const bool placed = offload_.load(std::memory_order_acquire) ||
                        tcp_.load(std::memory_order_acquire) ||
                        listen_.load(std::memory_order_acquire);
    if (!placed && settle_kick_.join() == 0) {
      t.kick_fd = settle_kick_.fd();
      t.tag = settle_tag();
      return t;
    }
  }
  cut_sleep_ms(sleep_ms, kSliceMs);
  return t;
}

void SocketRecord::settled_wake() {
  std::lock_guard<std::mutex> g(settle_mu_);
  settle_kick_.wake();
}

void SocketRecord::after_wait(const WaitTarget& armed, bool kicked) {
  if (!armed.tag) return;
  interpose::BusyScope busy;
  if (armed.tag == settle_tag()) {  // first: a part placed since has its own tags
    std::lock_guard<std::mutex> g(settle_mu_);
    settle_kick_.leave(kicked);
    return;
  }
  // The part that armed the sleep, even when a hand-over to the kernel or
  // a fork child's request took it off the rings since: its waiter places
  // and ring sleep are left all the same. Each owner is set once, before
  // tcp_ or listen_ showed it to wait_target, and lives with the record;
  // in a fork child, the connection its parent left it, while it is open.
  if (inherited()) {
    if (child_tcp_.load(std::memory_order_acquire)) {  // no lock for the child's other sockets
      std::lock_guard<std::mutex> lock(child_tcp_mu_);
      if (child_tcp_owner_) {
        child_tcp_owner_->after_wait(armed, kicked);
        return;
      }
    }
  } else if (tcp_owner_) {
    tcp_owner_->after_wait(armed, kicked);
    return;
  }
  if (TcpListen* l = child_listen_.load(std::memory_order_acquire)) {
    l->after_wait(armed);
    return;
  }
  if (listen_owner_) {
    listen_owner_->after_wait(armed);
    return;
  }
  if (UdpOffload* o = offload()) o->after_wait(armed);
}

bool SocketRecord::change_count(uint64_t* count) {
  interpose::BusyScope busy;
  if (TcpOffload* t = tcp()) {
    *count = t->changes();
  } else if (TcpListen* l = listening()) {
    *count = l->arrivals(fd);
  } else {
    UdpOffload* o = offload();
    if (!o) return false;
    *count = o->arrivals();
  }
  t_counted = this;
  return true;
}

bool SocketRecord::kernel_served() {
  if (in_fork_child()) {
    // A listener or connection the parent had on the rings: the kernel's
    // from the child's first look (an epoll set, before any call), asked
    // now, unless the listener joins the parent's rings; a connection one
    // accepted here is the rings'.
    if (inherited()) return !(protocol == IPPROTO_TCP && (listening() || tcp()));
    return !tcp();
  }
  if (offload() || tcp() || listening()) return false;
  if (protocol == IPPROTO_TCP)  // may be offloaded until its connect was tried
    return !tcp_wanted() || tcp_settled_.load(std::memory_order_acquire);
  if (protocol != IPPROTO_UDP || decision().wanted != Transport::kVma) return true;
  // Tried and refused (or handed back): the kernel's for good. Settled is
  // set after offload_ is stored, so a try under way reads as "may be".
  return offload_settled_.load(std::memory_order_acquire) &&
         !offload_.load(std::memory_order_acquire);
}

namespace {
// A signal handler that interrupted this thread inside the library: the
// rings' and stacks' locks may be held under it, so a socket it binds,
// connects or listens with is the kernel's for good.
bool kernel_in_handler(const char* what, int fd) {
  if (!interpose::handler_over_busy()) return false;
  SS_DEBUG("%s fd %d: kernel (in a signal handler that interrupted the library)", what, fd);
  return true;
}
}  // namespace

void SocketRecord::try_offload() {
  interpose::BusyScope busy;  // binds on the rings' stack, under offload_mu_
  if (protocol != IPPROTO_UDP || decision().wanted != Transport::kVma) return;
  if (kernel_in_handler("bind", fd)) {
    offload_settled_.store(true, std::memory_order_release);
    return;
  }
  if (in_fork_child()) {
    SS_DEBUG("fd %d: kernel (a fork child: the rings are its parent's)", fd);
    return;
  }
  std::lock_guard<std::mutex> lock(offload_mu_);
  // Settled (a handler's bind): the kernel's for good, as a receiver
  // asleep on the kernel socket already took it to be.
  if (offload_tried_ || offload_settled_.load(std::memory_order_relaxed)) return;
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) < 0) return;
  const uint16_t port = a.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&a)->sin6_port
                                                : reinterpret_cast<sockaddr_in*>(&a)->sin_port;
  if (port == 0) return;  // not bound yet: the next call that binds it tries
  offload_tried_ = true;
  fork_share_open();  // before offload_ is set: a child that sees it can ask
  t_making_rings = true;
  offload_owner_ = UdpOffload::attach(fd, family, a, &rx_extras);
  t_making_rings = false;
  if (!offload_owner_) {
    offload_settled_.store(true, std::memory_order_release);
    SS_INFO("fd %d (udp port %u): kernel (no netdev of its address has rings)", fd, ntohs(port));
    return;
  }
  {
    // setsockopt's mirroring waits for what was set so far to be applied.
    std::lock_guard<std::mutex> ml(mcast.mu);
    mcast_attach_locked(*this, *offload_owner_);
    offload_.store(offload_owner_.get(), std::memory_order_release);
  }
  offload_settled_.store(true, std::memory_order_release);
  settled_wake();
  SS_DEBUG("fd %d (udp port %u): offloaded on %zu netdev(s)%s", fd, ntohs(port),
           offload_owner_->legs(), stats ? "" : " (no vmastat block)");
}

bool SocketRecord::tcp_wanted() const {
  return protocol == IPPROTO_TCP && decision().wanted == Transport::kVma &&
         settings::get(settings::Id::kTcpOffload) != 0;
}

int SocketRecord::connect_tcp(const sockaddr* to, socklen_t len) {
  interpose::BusyScope busy;  // the stack's locks
  if (in_fork_child()) return 1;
  // A later connect: after a failed one, a new connection the rings may
  // not serve, and then the kernel socket's for good (the ended one stays
  // for calls under way).
  const auto again = [&](TcpOffload* t) {
    const int rc = t->connect_result(fd, nonblocking(fd, 0), /*again=*/true, to, len);
    if (rc == 1) {
      std::lock_guard<std::mutex> lock(offload_mu_);
      if (tcp_.load(std::memory_order_relaxed) == t) tcp_to_kernel_locked();
      SS_DEBUG("connect fd %d: kernel (a new connection the rings do not serve)", fd);
    }
    return rc;
  };
  if (TcpOffload* t = tcp()) return again(t);
  if (!tcp_wanted()) return 1;
  if (kernel_in_handler("connect", fd)) {
    tcp_settled_.store(true, std::memory_order_release);
    return 1;
  }
  TcpOffload* opened;
  {
    std::unique_lock<std::mutex> lock(offload_mu_);
    if (TcpOffload* t = tcp_.load(std::memory_order_relaxed)) {  // another thread's connect
      lock.unlock();
      return again(t);
    }
    if (tcp_settled_.load(std::memory_order_relaxed)) return 1;  // tried: the kernel's
    sockaddr_storage local{};
    socklen_t llen = sizeof local;
    if (interpose::real().getsockname(fd, reinterpret_cast<sockaddr*>(&local), &llen) < 0) llen = 0;
    if (const Decision d =
            decide_tcp_connect(llen ? reinterpret_cast<sockaddr*>(&local) : nullptr, llen, to, len);
        d.wanted == Transport::kOs) {
      tcp_settled_.store(true, std::memory_order_release);
      SS_DEBUG("connect fd %d: kernel (%s)", fd, d.why);
      return 1;
    }
    std::unique_ptr<TcpOffload> o;
    fork_share_open();  // before tcp_ is set: a fork child that sees it asks for the connection
    t_making_rings = true;
    const int rc = TcpOffload::open(fd, family, to, len, nonblocking(fd, 0), &o);
    t_making_rings = false;
    // A tuple the stack still has (TIME-WAIT): the kernel on this port
    // would have its replies steered to the rings. Linux's answer.
    if (rc == -EADDRINUSE) return -EADDRNOTAVAIL;
    if (rc != 0) {
      tcp_settled_.store(true, std::memory_order_release);
      if (rc < 0)
        SS_INFO("connect fd %d: kernel (the rings could not open it: %s)", fd, std::strerror(-rc));
      return 1;
    }
    tcp_owner_ = std::move(o);
    tcp_owner_->attach(&stats, fd, &rx_extras);
    tcp_forks_ = forks_so_far();
    opened = tcp_owner_.get();
    tcp_.store(opened, std::memory_order_release);
    opened->xtreme_watch();
    tcp_settled_.store(true, std::memory_order_release);
    stats.set_flags(/*offloaded=*/true, created_blocking, /*mc_loop=*/true);
  }
  settled_wake();
  return opened->connect_result(fd, nonblocking(fd, 0), /*again=*/false);
}

int SocketRecord::listen_tcp(int backlog) {
  interpose::BusyScope busy;
  if (in_fork_child() || !tcp_wanted()) return interpose::real().listen(fd, backlog);
  if (kernel_in_handler("listen", fd)) {
    tcp_settled_.store(true, std::memory_order_release);
    return interpose::real().listen(fd, backlog);
  }
  std::lock_guard<std::mutex> lock(offload_mu_);
  // listening already, or connected
  if (tcp_settled_.load(std::memory_order_relaxed)) return interpose::real().listen(fd, backlog);
  // The rings' listeners are made before the kernel's listen and shown
  // after it: a client that comes once listen() returned finds both. (The
  // other order let a fresh process's first clients reach the kernel's
  // listener while the rings were set up.) An unbound socket has its port
  // from the kernel's listen.
  sockaddr_storage local{};
  socklen_t llen = sizeof local;
  const auto name = [&] {
    llen = sizeof local;
    return interpose::real().getsockname(fd, reinterpret_cast<sockaddr*>(&local), &llen) == 0;
  };
  const bool bound = name() && wire_addr(reinterpret_cast<sockaddr*>(&local), llen).port != 0;
  std::unique_ptr<TcpListen> made;
  bool wanted = false;
  if (bound) wanted = make_tcp_listener(backlog, reinterpret_cast<sockaddr*>(&local), llen, &made);
  if (interpose::real().listen(fd, backlog) < 0) {
    const int err = errno;
    made.reset();  // its listeners close, what they took reset
    errno = err;
    return -1;
  }
  if (!bound)
    wanted = make_tcp_listener(backlog, name() ? reinterpret_cast<sockaddr*>(&local) : nullptr,
                               llen, &made);
  tcp_settled_.store(true, std::memory_order_release);
  if (!wanted) return 0;
  if (!made) {
    SS_INFO("listen fd %d: kernel (no netdev of its address has rings)", fd);
    return 0;
  }
  listen_owner_ = std::move(made);
  listen_.store(listen_owner_.get(), std::memory_order_release);
  listen_owner_->xtreme_kernel_published();
  stats.set_flags(/*offloaded=*/true, created_blocking, /*mc_loop=*/true);
  settled_wake();
  return 0;
}

bool SocketRecord::make_tcp_listener(int backlog, const sockaddr* local, socklen_t llen,
                                     std::unique_ptr<TcpListen>* out) {
  bool wanted = false;
  interpose::edge_quiet("listen", fd, [&] {
    if (local)
      if (const Decision d = decide_tcp_listen(local, llen); d.wanted == Transport::kOs) {
        SS_DEBUG("listen fd %d: kernel (%s)", fd, d.why);
        return;
      }
    wanted = true;
    fork_share_open();  // before listen_ is set: a fork child that sees it can ask
    t_making_rings = true;
    *out = TcpListen::open(fd, family, backlog);
  });
  t_making_rings = false;
  return wanted;
}

bool SocketRecord::join_xtreme_kernel(NetdevRings* r, const sockaddr_storage& peer) {
  tcp_settled_.store(true, std::memory_order_release);
  xtreme_kernel_ = XtremeKernelMember::join(r, fd, /*listener=*/false, &peer);
  if (!xtreme_kernel_) return false;
  xtreme_key_.store(xtreme_kernel_->key(), std::memory_order_release);
  return true;
}

void SocketRecord::before_last_close(const std::shared_ptr<SocketRecord>& self) {
  // Memberships of the ring descriptor, while the number is still this socket's.
  xtreme_key_.store(0, std::memory_order_release);
  xtreme_kernel_.reset();
  if (TcpListen* l = listen_.load(std::memory_order_acquire)) l->leave_xtreme_kernel();
  if (inherited()) {  // the connection is the parent's; a listener of ours leaves
    if (TcpListen* l = child_listen_.load(std::memory_order_acquire)) {
      interpose::BusyScope busy;
      l->leave_groups();
      l->leave_rings();
    }
    close_child_tcp();
    return;
  }
  interpose::BusyScope busy;  // the stack's locks
  TcpOffload* t = tcp();
  if (!t) return;
  {
    std::lock_guard<std::mutex> lock(offload_mu_);
    if (tcp_forks_ != forks_so_far()) {
      // A fork child may take it onto rings of its own (tcp_park.h).
      if (t->accepted() && settings::get(settings::Id::kTcpForkJoin) && park_tcp(self, fd)) {
        tcp_closed_ = true;
        return;
      }
      if (hand_tcp_locked("closed here after a fork")) return;
    }
    tcp_closed_ = true;
  }
  t->keep_port(fd);
  t->begin_close(fd);
}

void SocketRecord::hand_parked_to_kernel(int kernel_fd, const char* why) {
  interpose::BusyScope busy;
  std::lock_guard<std::mutex> lock(offload_mu_);
  hand_tcp_locked(why, kernel_fd);
}

int SocketRecord::give_tcp_to_stack(std::string* ifname, std::vector<uint8_t>* bytes) {
  interpose::BusyScope busy;
  std::lock_guard<std::mutex> lock(offload_mu_);
  TcpOffload* t = tcp_.load(std::memory_order_relaxed);
  if (!t) return -ENOENT;
  if (const int r = t->hand_to_stack(bytes); r < 0) return r;
  *ifname = t->rings()->ifname;
  tcp_to_kernel_locked();  // the program closed it here: nothing calls
  SS_INFO("fd %d: connection given to a fork child's rings", fd);
  return 0;
}

void SocketRecord::before_exit() {
  if (inherited() || !tcp()) return;
  std::lock_guard<std::mutex> lock(offload_mu_);
  if (tcp_forks_ != forks_so_far()) hand_tcp_locked("the process exits after a fork");
}

bool SocketRecord::hand_tcp_to_kernel(const char* why) {
  interpose::BusyScope busy;
  std::lock_guard<std::mutex> lock(offload_mu_);
  return hand_tcp_locked(why);
}

void SocketRecord::tcp_for_another_process(const char* why) {
  if (protocol != IPPROTO_TCP) return;
  if (inherited()) {
    if (!fork_answered_.load(std::memory_order_acquire)) ask_parent(/*may_take=*/false);
    interpose::BusyScope busy;
    std::lock_guard<std::mutex> lock(child_tcp_mu_);
    if (TcpOffload* t = child_tcp_.load(std::memory_order_relaxed);
        t && t->hand_to_kernel(fd) == 0) {
      child_tcp_.store(nullptr, std::memory_order_release);
      stats.set_flags(/*offloaded=*/false, created_blocking, /*mc_loop=*/true);
      SS_INFO("fd %d: connection handed to the kernel (%s)", fd, why);
    }
  } else if (in_fork_child()) {
    tcp();
  } else if (tcp()) {
    hand_tcp_to_kernel(why);
  }
}

bool SocketRecord::hand_tcp_locked(const char* why, int kernel_fd) {
  TcpOffload* t = tcp_.load(std::memory_order_relaxed);
  if (!t) return tcp_owner_ && tcp_owner_->moved();
  if (const int r = t->hand_to_kernel(kernel_fd < 0 ? fd : kernel_fd); r < 0) {
    // Closed, an error pending, or no way to pass the flow: said at
    // debug. Without the capabilities the next tries fail alike: said
    // once.
    static std::atomic<bool> said_eperm{false};
    if (r == -EOPNOTSUPP)
      SS_DEBUG("fd %d: the connection cannot be handed over (%s): it stays on the rings", fd, why);
    else if (r != -EPERM || !said_eperm.exchange(true))
      SS_WARN("fd %d: the kernel could not take the connection (%s): %s%s; it stays on the rings",
              fd, why, std::strerror(-r),
              r == -EPERM ? " (CAP_NET_ADMIN, and CAP_NET_RAW past a FIN)" : "");
    return false;
  }
  tcp_to_kernel_locked();
  SS_INFO("fd %d: connection handed to the kernel (%s)", fd, why);
  return true;
}

void SocketRecord::tcp_to_kernel_locked() {
  // New calls go to the kernel socket; tcp_owner_ stays for calls under way.
  tcp_.store(nullptr, std::memory_order_release);
  stats.set_flags(/*offloaded=*/false, created_blocking, /*mc_loop=*/true);
}

void SocketRecord::adopt_tcp(std::unique_ptr<TcpOffload> t) {
  std::lock_guard<std::mutex> lock(offload_mu_);
  tcp_owner_ = std::move(t);
  tcp_owner_->attach(&stats, fd, &rx_extras);
  tcp_forks_ = forks_so_far();
  tcp_.store(tcp_owner_.get(), std::memory_order_release);
  tcp_owner_->xtreme_watch();
  tcp_settled_.store(true, std::memory_order_release);
  stats.set_flags(/*offloaded=*/true, created_blocking, /*mc_loop=*/true);
}

void SocketRecord::after_accept() {
  // Every accept passes here: no lock unless the listener left the rings.
  std::atomic<TcpListen*>& own = own_listen();
  if (!listen_left_.load(std::memory_order_relaxed) || !own.load(std::memory_order_relaxed)) return;
  const ErrnoGuard keep;  // accept's
  std::lock_guard<std::mutex> lock(offload_mu_);
  if (TcpListen* l = own.load(std::memory_order_acquire); l && !l->holds_completed())
    own.store(nullptr, std::memory_order_release);
}

void SocketRecord::hand_back(const char* why) {
  interpose::BusyScope busy;
  if (in_fork_child()) return;  // the kernel's already; the rings are the parent's
  std::lock_guard<std::mutex> lock(offload_mu_);
  offload_tried_ = true;
  offload_.store(nullptr, std::memory_order_release);  // new calls: the kernel's
  offload_settled_.store(true, std::memory_order_release);
  if (!offload_owner_) return;
  stats.add(stats::kRxReadyPktDrop, offload_owner_->drain(why));
  offload_owner_.reset();  // the endpoints give the port back
  stats.set_flags(/*offloaded=*/false, created_blocking, /*mc_loop=*/true);
}

thread_local bool t_making_rings = false;

void track_socket(int fd, int domain, int type, int protocol) {
  if (t_making_rings) return;
  const int base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
  const int proto = rule_protocol(domain, base, protocol);
  if (!proto) return;
  const Decision d = decide_socket(proto);
  // VMA_TX_MC_LOOPBACK: a socket libvma would offload starts with that
  // IP_MULTICAST_LOOP (the kernel's default is on), set on the kernel
  // socket, whose value the rings follow; the others keep the kernel's.
  if (!mc_loop_initial(proto, d)) {
    const int off = 0;
    interpose::real().setsockopt(fd, domain == AF_INET6 ? IPPROTO_IPV6 : IPPROTO_IP,
                                 domain == AF_INET6 ? IPV6_MULTICAST_LOOP : IP_MULTICAST_LOOP, &off,
                                 sizeof off);
  }
  auto rec = std::make_shared<SocketRecord>(fd, domain, base, proto, !(type & SOCK_NONBLOCK), d);
  if (FdTable::instance().insert(fd, FdKind::kVmaSocket, std::move(rec)) < 0) {
    SS_DEBUG("socket fd %d: beyond the fd table, not recorded (kernel)", fd);
    return;
  }
  note_number(fd);
  SS_DEBUG("socket fd %d (%s, %s): kernel (%s)", fd, domain == AF_INET6 ? "AF_INET6" : "AF_INET",
           proto == IPPROTO_UDP ? "udp" : "tcp", d.why);
}

void socket_bound(int fd) {
  const auto s = FdTable::instance().get<SocketRecord>(fd, FdKind::kVmaSocket);
  if (!s) return;
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) < 0) return;
  s->stats.set_bound(reinterpret_cast<const sockaddr*>(&a), len);
  if (s->protocol != IPPROTO_UDP || s->decision().wanted != Transport::kVma) return;
  const Decision d = decide_udp_bind(reinterpret_cast<const sockaddr*>(&a), len);
  if (d.wanted == Transport::kVma) {
    s->try_offload();
    return;
  }
  s->set_decision(d);
  SS_DEBUG("bind fd %d: kernel (%s)", fd, d.why);
}

std::shared_ptr<SocketRecord> record_acting_at(int fd) {
  if (auto s = FdTable::instance().get<SocketRecord>(fd, FdKind::kVmaSocket)) return s;
  return std::static_pointer_cast<SocketRecord>(
      interpose::dups::held_object(fd, FdKind::kVmaSocket));
}

std::shared_ptr<SocketRecord> untrack_socket(int fd) {
  FdTable& t = FdTable::instance();
  if (t.kind(fd) != FdKind::kVmaSocket) return nullptr;  // lock-free for every other close
  // Here, not in the destructor: the table frees a record after a grace
  // period, which may come after exit.
  if (const auto s = t.get<SocketRecord>(fd, FdKind::kVmaSocket)) write_socket_stats(*s);
  return t.remove<SocketRecord>(fd, FdKind::kVmaSocket);
}

int highest_tracked_fd() { return g_highest.load(std::memory_order_relaxed); }

void note_number(int fd) {
  for (int h = g_highest.load(std::memory_order_relaxed);
       fd > h && !g_highest.compare_exchange_weak(h, fd, std::memory_order_relaxed);) {
  }
}

}  // namespace ss::vma::preload
