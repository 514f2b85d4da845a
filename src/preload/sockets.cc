// Making, connecting and closing TCP sockets (listen_calls.cc listens and
// accepts, dup_calls.cc duplicates them). A new TCP socket is a kernel socket the preload watches
// (Entry kFresh); connect makes it an rsocket only when the peer is proven
// to speak rsockets without a byte on its TCP stream (a Slipstream
// listener's shm rendezvous, verbs' rdma_cm), otherwise it stays the
// kernel's. listen keeps the kernel listening socket for plain clients and
// adds an rsocket listener beside it (Entry kListener): docs/architecture.md,
// "librspreload".
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>
#include <utility>

#include "core/base/log.h"
#include "core/prov/sock_addr.h"
#include "interpose/dup_share.h"
#include "interpose/export.h"
#include "interpose/real.h"
#include "librsocket/preload_hooks.h"
#include "librsocket/rsocket_own.h"
#include "preload/dup_calls.h"
#include "preload/route.h"
#include "preload/socket_setup.h"
#include "preload/stats.h"

namespace ss::preload {

namespace {

// This process's pid, recorded at load and in every fork child: a caller
// whose getpid() differs is a vfork child (or a clone(CLONE_VM) one)
// running on our memory.
std::atomic<pid_t> g_pid{0};

void record_pid() { g_pid.store(getpid(), std::memory_order_relaxed); }

__attribute__((constructor)) void record_pid_at_load() {
  record_pid();
  pthread_atfork(nullptr, nullptr, record_pid);
}

}  // namespace

bool in_vfork_child() {
  const pid_t pid = g_pid.load(std::memory_order_relaxed);
  return pid != 0 && getpid() != pid;
}

const std::set<int>& vfork_child_transports() {
  // The parent's thread's storage, which the child runs on while that
  // thread waits: this child's alone, by its pid.
  struct Known {
    pid_t pid = 0;
    std::set<int> fds;
  };
  static thread_local Known known;
  if (known.pid == getpid()) return known.fds;
  known.fds.clear();
  for (auto& [fd, obj] : FdTable::instance().objects_of(FdKind::kRsocket)) {
    int t[2];
    OwnCalls in;
    const int n = ss_rspreload_transports(fd, t, 2);
    known.fds.insert(t, t + std::max(n, 0));
  }
  known.pid = getpid();
  return known.fds;
}

namespace {

bool is_tcp(int domain, int type, int protocol) {
  type &= ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
  return (domain == AF_INET || domain == AF_INET6) && type == SOCK_STREAM &&
         (protocol == 0 || protocol == IPPROTO_TCP);
}

}  // namespace

void carry_timeouts(int from, int to) {
  for (int name : {SO_RCVTIMEO, SO_SNDTIMEO}) {
    timeval tv{};
    socklen_t n = sizeof tv;
    if (ss::interpose::real().getsockopt(from, SOL_SOCKET, name, &tv, &n) == 0 &&
        (tv.tv_sec || tv.tv_usec) && rsetsockopt(to, SOL_SOCKET, name, &tv, n))
      SS_WARN("librspreload: fd %d: timeout option %d refused: %s", to, name, strerror(errno));
  }
}

// The options the rsocket keeps and acts on, as the program set them on
// its kernel socket before it was an rsocket (a listener's then go to its
// accepted connections, as Linux's do).
static void carry_options(int fd, int domain) {
  static constexpr struct {
    int level, name;
  } kCarried[] = {{SOL_SOCKET, SO_REUSEADDR},  {SOL_SOCKET, SO_KEEPALIVE},
                  {SOL_SOCKET, SO_OOBINLINE},  {IPPROTO_TCP, TCP_NODELAY},
                  {IPPROTO_TCP, TCP_KEEPIDLE}, {IPPROTO_IP, IP_TOS},
                  {IPPROTO_IPV6, IPV6_V6ONLY}};
  for (auto [level, name] : kCarried) {
    if ((level == IPPROTO_IP && domain != AF_INET) || (level == IPPROTO_IPV6 && domain != AF_INET6))
      continue;
    int v = 0;
    socklen_t n = sizeof v;
    if (ss::interpose::real().getsockopt(fd, level, name, &v, &n) == 0 &&
        rsetsockopt(fd, level, name, &v, n) && errno != ENOTSUP)
      SS_DEBUG("librspreload: fd %d: option %d/%d not carried: %s", fd, level, name,
               strerror(errno));
  }
}

void apply_sizes(int fd, const Entry& e) {
  static constexpr struct {
    int setting, option;
  } kSizes[] = {{SS_RSPRELOAD_SQ_SIZE, RDMA_SQSIZE},
                {SS_RSPRELOAD_RQ_SIZE, RDMA_RQSIZE},
                {SS_RSPRELOAD_INLINE, RDMA_INLINE}};
  for (auto [setting, option] : kSizes) {
    int v = static_cast<int>(ss_rspreload_setting(setting));
    if (v > 0 && rsetsockopt(fd, SOL_RDMA, option, &v, sizeof v))
      SS_WARN("librspreload: fd %d: rsocket option %d = %d refused: %s", fd, option, v,
              strerror(errno));
  }
  for (auto [name, v] :
       {std::pair{SO_SNDBUF, e.sndbuf.load()}, std::pair{SO_RCVBUF, e.rcvbuf.load()}})
    if (v > 0 && rsetsockopt(fd, SOL_SOCKET, name, &v, sizeof v))
      SS_WARN("librspreload: fd %d: buffer size %d refused: %s", fd, v, strerror(errno));
  carry_timeouts(fd, fd);
  carry_options(fd, e.domain);
}

void track_fresh(int fd, int domain) {
  std::shared_ptr<Entry> e(new (std::nothrow) Entry);
  if (e) {
    e->fd = fd;
    e->domain = domain;
    if (FdTable::instance().insert(fd, FdKind::kRspreloadTcp, e) == 0) return;
  }
  SS_WARN("librspreload: fd %d: cannot track it (out of memory): kernel TCP", fd);
}

unsigned port_of(const sockaddr* addr, socklen_t len) {
  if (addr->sa_family == AF_INET && len >= sizeof(sockaddr_in))
    return ntohs(reinterpret_cast<const sockaddr_in*>(addr)->sin_port);
  if (addr->sa_family == AF_INET6 && len >= sizeof(sockaddr_in6))
    return ntohs(reinterpret_cast<const sockaddr_in6*>(addr)->sin6_port);
  return 0;
}

namespace {

int connect_fresh(int fd, const sockaddr* addr, socklen_t len) {
  auto e = entry(fd);
  const int fd_flags =
      ss::interpose::real().fcntl(fd, F_GETFD);  // the program's, restored on fallback
  bool tried = false;
  if (e && addr && len >= sizeof(sa_family_t) && addr->sa_family == e->domain &&
      !ss_rspreload_kernel_port(port_of(addr, len))) {
    OwnCalls in;
    if (ss_rspreload_adopt(fd, e->domain) == 0) {  // replaces the entry
      tried = true;
      set_fd_flags(fd, fd_flags & FD_CLOEXEC);
      apply_sizes(fd, *e);
      int rc = rconnect(fd, addr, len);
      if (rc == 0 || errno == EINPROGRESS || errno == EINTR) {
        stats::count_rsocket(ss_rspreload_provider(fd));
        return rc;
      }
      // No rsocket listener there: nothing went on the TCP stream yet.
      SS_DEBUG("librspreload: fd %d: no rsocket peer (%s): kernel TCP", fd, strerror(errno));
      if (ss_rspreload_release(fd)) {
        SS_WARN("librspreload: fd %d: cannot hand the socket back to the kernel: %s", fd,
                strerror(errno));
        errno = ECONNREFUSED;
        return -1;
      }
    }
  }
  give_to_kernel(fd);
  // tcp's side channel may have connected it to the peer's side port.
  if (tried) ss::prov::disconnect_stream(fd);
  int rc = ss::interpose::real().connect(fd, addr, len);
  if (rc == 0 || errno == EINPROGRESS) stats::count_kernel();
  return rc;
}

}  // namespace

void give_to_kernel(int fd) { FdTable::instance().remove<Entry>(fd, FdKind::kRspreloadTcp); }

Entry::~Entry() {
  if (rs_fd < 0) return;
  OwnCalls in;
  rclose(rs_fd);
}

// Closes `fd` whatever it is (also for dup2/dup3 over one of ours).
int close_fd(int fd) {
  switch (route(fd)) {
    case Route::kRsocket: {
      leave_epoll_sets(fd);
      int rc;
      if (dups::close_shared(fd, &rc)) return rc;
      return dups::close_last(fd);
    }
    case Route::kListener: {
      int rc;
      if (dups::close_listener_shared(fd, &rc)) return rc;
      // The flags stay: fork children may share the kernel socket's open
      // file, and their accept relies on it never blocking.
      leave_epoll_sets(fd);
      to_kernel_listener(fd, false);
      return ss::interpose::real().close(fd);
    }
    case Route::kFresh:
      give_to_kernel(fd);
      return ss::interpose::real().close(fd);
    case Route::kEpoll:
      return close_epoll(fd);
    default:
      return ss::interpose::real().close(fd);
  }
}

}  // namespace ss::preload

using namespace ss::preload;

SS_PRELOAD_EXPORT int socket(int domain, int type, int protocol) noexcept {
  int fd = ss::interpose::real().socket(domain, type, protocol);
  if (fd < 0 || libc_only() || !is_tcp(domain, type, protocol) ||
      !ss_rspreload_setting(SS_RSPRELOAD_ENABLED) || !ss_rspreload_takes(domain, type, protocol))
    return fd;
  track_fresh(fd, domain);
  return fd;
}

// A UDP bind refused because a listener's side channel answers on that
// port number (the program's own TCP port, as iperf3's UDP test binds):
// the side channel gives the port up and the bind is tried again.
static int bind_after_side_channel(int fd, const sockaddr* addr, socklen_t len) {
  int type = 0;
  socklen_t tl = sizeof type;
  if (libc_only() || ss::interpose::real().getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) ||
      type != SOCK_DGRAM || !ss_rspreload_yield_udp_port(addr, len)) {
    errno = EADDRINUSE;
    return -1;
  }
  return ss::interpose::real().bind(fd, addr, len);
}

SS_PRELOAD_EXPORT int bind(int fd, const sockaddr* addr, socklen_t len) noexcept {
  if (route(fd) == Route::kRsocket) {
    OwnCalls in;
    return rbind(fd, addr, len);
  }
  int rc = ss::interpose::real().bind(fd, addr, len);
  return rc < 0 && errno == EADDRINUSE ? bind_after_side_channel(fd, addr, len) : rc;
}

SS_PRELOAD_EXPORT int connect(int fd, const sockaddr* addr, socklen_t len) {
  switch (route(fd)) {
    case Route::kFresh:
      return connect_fresh(fd, addr, len);
    case Route::kRsocket:  // a connect repeated (EINPROGRESS, EINTR) may find it fell back
      return on_rsocket(
          fd, [&] { return rconnect(fd, addr, len); },
          [&] { return ss::interpose::real().connect(fd, addr, len); });
    default:
      return ss::interpose::real().connect(fd, addr, len);
  }
}

SS_PRELOAD_EXPORT int close(int fd) {
  if (in_vfork_child()) {
    try {
      if (vfork_child_transports().count(fd)) return 0;  // closed at exec unless carried
    } catch (const std::bad_alloc&) {
    }
    return ss::interpose::real().close(fd);
  }
  if (libc_only()) return dups::close_released(fd);  // librsocket's own close
  if (route(fd) == Route::kKernel && dups::held(fd)) {
    errno = EBADF;  // closed already as the program sees it; librsocket closes it
    return -1;
  }
  return close_fd(fd);
}
