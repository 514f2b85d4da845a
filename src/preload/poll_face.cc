// poll and select over mixed descriptors: librsocket's rpoll serves them
// once any is ours; a listener counts as readable when either its kernel
// socket or its rsocket listener has a connection waiting (its entry is a
// Pollable). epoll: epoll.cc.
#include <poll.h>
#include <sys/select.h>

#include <cerrno>
#include <new>
#include <vector>

#include "librsocket/rsocket_own.h"
#include "interpose/export.h"
#include "interpose/real.h"
#include "preload/route.h"
#include "interpose/wait_args.h"

using namespace ss::preload;
using namespace ss::interpose;

namespace {

// Descriptors rpoll must see as Pollables: connections, listeners (their
// entry merges the two queues: listener_ready.cc), the preload's epoll sets.
bool pollable_route(int fd) {
  Route r = route(fd);
  return r == Route::kRsocket || r == Route::kListener || r == Route::kEpoll;
}

bool any_ours(const pollfd* fds, nfds_t n) {
  for (nfds_t i = 0; i < n; i++)
    if (pollable_route(fds[i].fd)) return true;
  return false;
}

// The poll events select's three sets ask of fd.
short set_events(int fd, const fd_set* r, const fd_set* w, const fd_set* x) {
  return static_cast<short>(((r && FD_ISSET(fd, r)) ? POLLIN : 0) |
                            ((w && FD_ISSET(fd, w)) ? POLLOUT : 0) |
                            ((x && FD_ISSET(fd, x)) ? POLLPRI : 0));
}

bool any_ours(int nfds, const fd_set* r, const fd_set* w, const fd_set* x) {
  for (int fd = 0; fd < nfds; fd++)
    if (set_events(fd, r, w, x) && pollable_route(fd)) return true;
  return false;
}

}  // namespace

SS_PRELOAD_EXPORT int poll(pollfd* fds, nfds_t n, int timeout) {
  if (libc_only() || !fds || !any_ours(fds, n)) return ss::interpose::real().poll(fds, n, timeout);
  InRsocket in;
  return rpoll(fds, n, timeout);
}

// select through poll when any descriptor is ours. The timeout is not
// updated with the time left (Linux does; POSIX leaves it unspecified).
SS_PRELOAD_EXPORT int select(int nfds, fd_set* r, fd_set* w, fd_set* x, timeval* tv) {
  if (libc_only() || nfds <= 0 || nfds > FD_SETSIZE) return ss::interpose::real().select(nfds, r, w, x, tv);
  std::vector<pollfd> p;
  bool ours = false;
  try {
    for (int fd = 0; fd < nfds; fd++) {
      short ev = set_events(fd, r, w, x);
      if (!ev) continue;
      p.push_back({fd, ev, 0});
      ours = ours || pollable_route(fd);
    }
  } catch (const std::bad_alloc&) {
    errno = ENOMEM;
    return -1;
  }
  if (!ours) return ss::interpose::real().select(nfds, r, w, x, tv);
  int timeout = -1;
  if (tv) {
    if (tv->tv_sec < 0 || tv->tv_usec < 0) {
      errno = EINVAL;
      return -1;
    }
    long long ms = tv->tv_sec * 1000LL + (tv->tv_usec + 999) / 1000;
    timeout = ms > 0x7fffffff ? 0x7fffffff : static_cast<int>(ms);
  }
  int rc = poll(p.data(), p.size(), timeout);
  if (rc < 0) return rc;
  for (const pollfd& q : p)
    if (q.revents & POLLNVAL) {
      errno = EBADF;
      return -1;
    }
  if (r) FD_ZERO(r);
  if (w) FD_ZERO(w);
  if (x) FD_ZERO(x);
  int count = 0;
  for (const pollfd& q : p) {
    if ((q.events & POLLIN) && (q.revents & (POLLIN | POLLHUP | POLLERR))) FD_SET(q.fd, r), count++;
    if ((q.events & POLLOUT) && (q.revents & (POLLOUT | POLLERR))) FD_SET(q.fd, w), count++;
    if ((q.events & POLLPRI) && (q.revents & POLLPRI)) FD_SET(q.fd, x), count++;
  }
  return count;
}


SS_PRELOAD_EXPORT int ppoll(pollfd* fds, nfds_t n, const timespec* t, const sigset_t* mask) {
  if (libc_only() || !fds || !any_ours(fds, n)) return ss::interpose::real().ppoll(fds, n, t, mask);
  if (bad_timespec(t)) return -1;
  MaskForCall m(mask);
  return poll(fds, n, timespec_ms(t));
}

SS_PRELOAD_EXPORT int pselect(int nfds, fd_set* r, fd_set* w, fd_set* x, const timespec* t,
                              const sigset_t* mask) {
  // Kernel-only sets keep the kernel's atomic mask swap: a program that
  // unblocks SIGCHLD only inside pselect must not lose it.
  if (libc_only() || nfds <= 0 || nfds > FD_SETSIZE || !any_ours(nfds, r, w, x))
    return ss::interpose::real().pselect(nfds, r, w, x, t, mask);
  if (bad_timespec(t)) return -1;
  MaskForCall m(mask);
  if (!t) return select(nfds, r, w, x, nullptr);
  // Rounded up to whole microseconds, carrying into seconds (select
  // rejects tv_usec 1000000).
  long usec = (t->tv_nsec + 999) / 1000;
  timeval tv{t->tv_sec + usec / 1000000, static_cast<suseconds_t>(usec % 1000000)};
  return select(nfds, r, w, x, &tv);
}
