// Making, connecting, listening, accepting and closing TCP sockets
// (dup_calls.cc duplicates them). A new TCP socket is a kernel socket the preload watches
// (Entry kFresh); connect makes it an rsocket only when the peer is proven
// to speak rsockets without a byte on its TCP stream (a Slipstream
// listener's shm rendezvous, verbs' rdma_cm), otherwise it stays the
// kernel's. listen keeps the kernel listening socket for plain clients and
// adds an rsocket listener beside it (Entry kListener): docs/architecture.md,
// "librspreload".
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <optional>
#include <utility>
#include <vector>

#include "core/base/deadline.h"
#include "core/base/interruptible_poll.h"
#include "core/base/log.h"
#include "core/prov/sock_addr.h"
#include "librsocket/rsocket_own.h"
#include "librsocket/preload_hooks.h"
#include "preload/dup_calls.h"
#include "interpose/dup_share.h"
#include "interpose/export.h"
#include "interpose/real.h"
#include "preload/route.h"
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

namespace {

bool is_tcp(int domain, int type, int protocol) {
  type &= ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
  return (domain == AF_INET || domain == AF_INET6) && type == SOCK_STREAM &&
         (protocol == 0 || protocol == IPPROTO_TCP);
}

// SO_RCVTIMEO/SO_SNDTIMEO of kernel socket `from` onto rsocket `to`: the
// program set them on its descriptor before it was an rsocket, or on a
// listener whose accepted connections take them, as the kernel's do.
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
void carry_options(int fd, int domain) {
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

// RS_SQ_SIZE, RS_RQ_SIZE, RS_INLINE (settings of the "preload"
// component) on a new rsocket, as upstream's preload applies them, and
// the buffer sizes and timeouts the program gave the socket `e` before it
// was one (the timeouts are on its kernel socket, the rsocket's own).
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

// TCP socket `fd` is watched from now on (Entry kFresh).
void track_fresh(int fd, int domain) {
  std::shared_ptr<Entry> e(new (std::nothrow) Entry);
  if (e) {
    e->fd = fd;
    e->domain = domain;
    if (FdTable::instance().insert(fd, FdKind::kRspreloadTcp, e) == 0) return;
  }
  SS_WARN("librspreload: fd %d: cannot track it (out of memory): kernel TCP", fd);
}

// The TCP port of an AF_INET/AF_INET6 address (0 when it is neither).
unsigned port_of(const sockaddr* addr, socklen_t len) {
  if (addr->sa_family == AF_INET && len >= sizeof(sockaddr_in))
    return ntohs(reinterpret_cast<const sockaddr_in*>(addr)->sin_port);
  if (addr->sa_family == AF_INET6 && len >= sizeof(sockaddr_in6))
    return ntohs(reinterpret_cast<const sockaddr_in6*>(addr)->sin6_port);
  return 0;
}

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

namespace {

// Beside the program's kernel listening socket `fd`, an rsocket listening
// on a duplicate of it (same address, so the same shm rendezvous name). The
// kernel socket never blocks from now on; Entry::nonblock is the program's.
int listen_fresh(int fd, int backlog) {
  int rc = ss::interpose::real().listen(fd, backlog);
  if (rc) return rc;
  auto e = entry(fd);
  if (!e) return 0;
  sockaddr_storage name{};
  socklen_t name_len = sizeof name;
  if (ss::interpose::real().getsockname(fd, reinterpret_cast<sockaddr*>(&name), &name_len) == 0 &&
      ss_rspreload_kernel_port(port_of(reinterpret_cast<sockaddr*>(&name), name_len))) {
    give_to_kernel(fd);  // a port the settings leave to the kernel
    return 0;
  }
  int fl = ss::interpose::real().fcntl(fd, F_GETFL);
  int rs_fd = ss::interpose::real().fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (fl < 0 || rs_fd < 0) {
    SS_WARN("librspreload: fd %d: kernel TCP only (%s)", fd, strerror(errno));
    if (rs_fd >= 0) ss::interpose::real().close(rs_fd);
    give_to_kernel(fd);
    return 0;
  }
  e->nonblock = fl & O_NONBLOCK;
  OwnCalls in;
  bool adopted = ss_rspreload_adopt(rs_fd, e->domain) == 0;
  if (adopted) apply_sizes(rs_fd, *e);  // accepted rsockets inherit them
  if (!adopted || rfcntl(rs_fd, F_SETFL, O_NONBLOCK) || rlisten(rs_fd, backlog)) {
    SS_INFO("librspreload: fd %d: no rsocket listener beside the kernel one (%s): kernel TCP only",
            fd, strerror(errno));
    if (adopted)
      rclose(rs_fd);
    else
      ss::interpose::real().close(rs_fd);
    ss::interpose::real().fcntl(fd, F_SETFL, fl);
    give_to_kernel(fd);
    return 0;
  }
  e->rs_fd = rs_fd;
  e->state = Entry::State::kListener;
  return 0;
}

// An rsocket accepted by librsocket, with accept4's flags.
int take_rsocket(int c, int flags) {
  if (((flags & SOCK_NONBLOCK) && rfcntl(c, F_SETFL, O_NONBLOCK)) ||
      set_fd_flags(c, (flags & SOCK_CLOEXEC) ? FD_CLOEXEC : 0)) {
    int err = errno;
    rclose(c);
    errno = err;
    return -1;
  }
  stats::count_rsocket(ss_rspreload_provider(c));
  return c;
}

// Whether accepted rsocket `c` is a connection its client gave up on
// before it was established (its connect timed out while this process
// was stopped or slow, and went on over kernel TCP: librspreload's late
// fallback): failed, nothing to read (a peer that closed cleanly is an
// end of stream, kept). TCP never completes such a connection (its
// SYN-ACK goes unanswered), so the accept drops it. Inside OwnCalls.
bool abandoned(int c) { return ss_rspreload_failed(c) == 1; }

// One sleep of a blocking accept on both queues, with accept(2)'s rule
// for a signal: restarted after an SA_RESTART handler, EINTR otherwise
// (core's interruptible_poll), and not past `until`. 0 (look again) or
// -errno.
int sleep_until_readable(Entry& e, Deadline until) {
  int ms = -1;
  OwnCalls in;
  WaitTarget t = e.wait_target(POLLIN, &ms);
  if (t.fd == WaitTarget::kReady) return 0;
  pollfd p[2] = {{t.fd, t.events, 0}, {t.kick_fd, POLLIN, 0}};
  int rc = interruptible_poll(p, 2, sleep_ms_until(until, ms));
  e.after_wait(t, t.kick_fd >= 0 && (p[1].revents & POLLIN));
  return rc < 0 ? rc : 0;
}

// Whichever comes first: an rsocket peer (librsocket's accept queue) or
// a plain TCP client (the kernel's). The Entry is held throughout and
// both queues are reached through its own numbers, so a close of `fd` by
// another thread leaves this accept waiting on the listener, as Linux's
// accept holds its file, and never on a socket that took the number.
// The listener's SO_RCVTIMEO (kept by its kernel socket) bounds a
// blocking accept, as accept(2)'s.
Deadline accept_deadline(int kernel_fd) {
  timeval tv{};
  socklen_t n = sizeof tv;
  if (ss::interpose::real().getsockopt(kernel_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &n) < 0)
    return Deadline::max();
  return deadline_after_us(int64_t{tv.tv_sec} * 1000000 + tv.tv_usec);
}

int accept_listener(int fd, sockaddr* addr, socklen_t* len, int flags) {
  auto e = entry(fd);
  if (!e || e->state.load() != Entry::State::kListener)
    return ss::interpose::real().accept4(fd, addr, len, flags);
  std::optional<Deadline> until;  // read before the first sleep only
  for (;;) {
    if (e->state.load() == Entry::State::kListener) {
      OwnCalls in;
      int c = raccept(e->rs_fd, addr, len);
      if (c >= 0 && abandoned(c)) {
        SS_DEBUG("librspreload: fd %d: a connection its client gave up on: dropped", fd);
        rclose(c);
        stats::count_abandoned();
        continue;
      }
      if (c >= 0) {
        carry_timeouts(e->kernel_fd(), c);  // set on the listener after listen too
        return take_rsocket(c, flags);
      }
      if (errno != EAGAIN) return -1;
    }
    int c = ss::interpose::real().accept4(e->kernel_fd(), addr, len, flags);
    if (c >= 0) {
      stats::count_kernel();
      return c;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
    if (e->nonblock) return -1;
    if (!until) until = accept_deadline(e->kernel_fd());
    if (std::chrono::steady_clock::now() >= *until) {
      errno = EAGAIN;
      return -1;
    }
    if (int rc = sleep_until_readable(*e, *until)) {
      errno = -rc;
      return -1;
    }
  }
}

int accept_any(int fd, sockaddr* addr, socklen_t* len, int flags) {
  switch (route(fd)) {
    case Route::kListener:
      return accept_listener(fd, addr, len, flags);
    case Route::kRsocket: {
      OwnCalls in;
      int c = raccept(fd, addr, len);
      return c < 0 ? c : take_rsocket(c, flags);
    }
    default:
      return ss::interpose::real().accept4(fd, addr, len, flags);
  }
}

}  // namespace

Entry::~Entry() {
  if (rs_fd < 0) return;
  OwnCalls in;
  rclose(rs_fd);
}

void to_kernel_listener(int fd, bool restore_blocking) {
  dups::forget_duplicates(fd);
  auto e = FdTable::instance().remove<Entry>(fd, FdKind::kRspreloadTcp);
  if (!e || e->rs_fd < 0 || !restore_blocking) return;
  e->state = Entry::State::kStopped;
  int fl = ss::interpose::real().fcntl(fd, F_GETFL);
  if (fl >= 0)
    ss::interpose::real().fcntl(fd, F_SETFL, e->nonblock ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

// Linux's SHUT_RD on a listener makes it an unconnected socket again:
// its pending clients are reset, a blocked accept wakes with EINVAL (the
// kernel socket's POLLHUP wakes ours) and later ones fail so. The rsocket
// listener stops with it (closed at its Entry's last holder) and epoll
// sets forget the listener.
int shutdown_listener(int fd, int how) {
  auto e = entry(fd);
  int rc = ss::interpose::real().shutdown(fd, how);
  if (rc || !e || (how != SHUT_RD && how != SHUT_RDWR)) return rc;
  leave_epoll_sets(fd);
  to_kernel_listener(fd, true);
  track_fresh(fd, e->domain);
  return 0;
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

SS_PRELOAD_EXPORT int listen(int fd, int backlog) noexcept {
  switch (route(fd)) {
    case Route::kFresh:
      return listen_fresh(fd, backlog);
    case Route::kRsocket: {
      OwnCalls in;
      return rlisten(fd, backlog);
    }
    case Route::kListener: {  // a new backlog for both
      auto e = entry(fd);
      if (e) {
        OwnCalls in;
        rlisten(e->rs_fd, backlog);
      }
      return ss::interpose::real().listen(fd, backlog);
    }
    default:
      return ss::interpose::real().listen(fd, backlog);
  }
}

SS_PRELOAD_EXPORT int accept(int fd, sockaddr* addr, socklen_t* len) {
  return accept_any(fd, addr, len, 0);
}

SS_PRELOAD_EXPORT int accept4(int fd, sockaddr* addr, socklen_t* len, int flags) {
  return accept_any(fd, addr, len, flags);
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
  if (in_vfork_child()) return ss::interpose::real().close(fd);
  if (libc_only()) return dups::close_released(fd);  // librsocket's own close
  if (route(fd) == Route::kKernel && dups::held(fd)) {
    errno = EBADF;  // closed already as the program sees it; librsocket closes it
    return -1;
  }
  return close_fd(fd);
}
