// Listening and accepting on librspreload's TCP sockets: listen keeps the
// kernel listening socket for plain clients and adds an rsocket listener
// beside it (Entry kListener); accept takes from either queue
// (docs/architecture.md, "librspreload").
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

#include "core/base/deadline.h"
#include "core/base/interruptible_poll.h"
#include "core/base/log.h"
#include "core/base/pollable.h"
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
  e->backlog = backlog;
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
  PollableSleep sleep(e, POLLIN, &ms);
  const WaitTarget& t = sleep.target;
  if (t.fd == WaitTarget::kReady) return 0;
  pollfd p[2] = {{t.fd, t.events, 0}, {t.kick_fd, POLLIN, 0}};
  int rc = interruptible_poll(p, 2, sleep_ms_until(until, ms));
  sleep.kicked = t.kick_fd >= 0 && (p[1].revents & POLLIN);
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
    // Looked at first: a fork sibling's exec without the preload may have
    // made the shared open file blocking (exec_hook.cc).
    pollfd ready{e->kernel_fd(), POLLIN, 0};
    int c = -1;
    errno = EAGAIN;
    if (ss::interpose::real().poll(&ready, 1, 0) == 1)
      c = ss::interpose::real().accept4(e->kernel_fd(), addr, len, flags);
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

void to_kernel_listener(int fd, bool restore_blocking) {
  dups::forget_duplicates(fd);
  auto e = FdTable::instance().remove<Entry>(fd, FdKind::kRspreloadTcp);
  if (!e || e->rs_fd < 0 || !restore_blocking) return;
  e->state = Entry::State::kStopped;
  int fl = ss::interpose::real().fcntl(fd, F_GETFL);
  if (fl >= 0)
    ss::interpose::real().fcntl(fd, F_SETFL, e->nonblock ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

int listen_after_exec(int fd, int domain, int backlog, bool nonblock) {
  // The open file's O_NONBLOCK is the rsocket listener's of the image
  // before (a duplicate's flag): the program's first, as listen found it.
  const int fl = ss::interpose::real().fcntl(fd, F_GETFL);
  if (fl >= 0)
    ss::interpose::real().fcntl(fd, F_SETFL, nonblock ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
  track_fresh(fd, domain);
  if (entry(fd)) listen_fresh(fd, backlog);
  auto e = entry(fd);
  return e && e->state.load() == Entry::State::kListener ? e->rs_fd.load() : -1;
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

}  // namespace ss::preload

using namespace ss::preload;

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
        e->backlog = backlog;
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
