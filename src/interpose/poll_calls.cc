#include "interpose/poll_calls.h"

#include <signal.h>

#include "core/base/call_mask.h"
#include "interpose/export.h"
#include "interpose/own_calls.h"
#include "interpose/real.h"
#include "interpose/wait_args.h"

extern "C" void __chk_fail(void) __attribute__((noreturn));

using ss::interpose::kPollFace;
using ss::interpose::real;

namespace ss::interpose {
thread_local int t_own_calls = 0;
}  // namespace ss::interpose

namespace {

// Not `const pollfd*`: glibc declares poll's fds write-only, and gcc then
// warns (-Wmaybe-uninitialized) at a read-only pass.
bool face_waits(pollfd* fds, nfds_t n) {
  if (ss::interpose::in_own_call() || !fds) return false;
  for (nfds_t i = 0; i < n; i++)
    if (fds[i].fd >= 0 && kPollFace.ours(fds[i].fd)) return true;
  return false;
}

bool face_waits(int nfds, const fd_set* r, const fd_set* w, const fd_set* x) {
  if (ss::interpose::in_own_call() || nfds <= 0 || nfds > FD_SETSIZE) return false;
  for (int fd = 0; fd < nfds; fd++)
    if (((r && FD_ISSET(fd, r)) || (w && FD_ISSET(fd, w)) || (x && FD_ISSET(fd, x))) &&
        kPollFace.ours(fd))
      return true;
  return false;
}

}  // namespace

SS_PRELOAD_EXPORT int poll(pollfd* fds, nfds_t n, int timeout) {
  if (!face_waits(fds, n)) return real().poll(fds, n, timeout);
  ss::interpose::OwnCalls own;
  return kPollFace.poll(fds, n, timeout);
}

// The timeout is not updated with the time left (Linux does; POSIX leaves
// it unspecified).
SS_PRELOAD_EXPORT int select(int nfds, fd_set* r, fd_set* w, fd_set* x, timeval* tv) {
  if (!face_waits(nfds, r, w, x)) return real().select(nfds, r, w, x, tv);
  ss::interpose::OwnCalls own;
  return kPollFace.select(nfds, r, w, x, tv);
}

SS_PRELOAD_EXPORT int ppoll(pollfd* fds, nfds_t n, const timespec* t, const sigset_t* mask) {
  if (!face_waits(fds, n)) return real().ppoll(fds, n, t, mask);
  if (ss::interpose::bad_timespec(t)) return -1;
  ss::CallMask m(mask);
  ss::interpose::OwnCalls own;
  return kPollFace.poll(fds, n, ss::interpose::timespec_ms(t));
}

SS_PRELOAD_EXPORT int pselect(int nfds, fd_set* r, fd_set* w, fd_set* x, const timespec* t,
                              const sigset_t* mask) {
  if (!face_waits(nfds, r, w, x)) return real().pselect(nfds, r, w, x, t, mask);
  if (ss::interpose::bad_timespec(t)) return -1;
  ss::CallMask m(mask);
  ss::interpose::OwnCalls own;
  if (!t) return kPollFace.select(nfds, r, w, x, nullptr);
  // Rounded up to whole microseconds, carried into seconds (select
  // rejects tv_usec 1000000).
  const long usec = (t->tv_nsec + 999) / 1000;
  timeval tv{t->tv_sec + usec / 1000000, static_cast<suseconds_t>(usec % 1000000)};
  return kPollFace.select(nfds, r, w, x, &tv);
}

// Fortify's variants: what a program built with _FORTIFY_SOURCE calls when
// the compiler cannot prove its array holds `n` entries (a runtime count).
// glibc's check (an array shorter than `n` aborts), then the calls above:
// without these, libc's ppoll saw a connection's number as a bare socket
// and said POLLHUP while data waited.
SS_PRELOAD_EXPORT int __poll_chk(pollfd* fds, nfds_t n, int timeout, size_t fdslen) {
  if (fdslen / sizeof *fds < n) __chk_fail();
  return poll(fds, n, timeout);
}

SS_PRELOAD_EXPORT int __ppoll_chk(pollfd* fds, nfds_t n, const timespec* t, const sigset_t* mask,
                                  size_t fdslen) {
  if (fdslen / sizeof *fds < n) __chk_fail();
  return ppoll(fds, n, t, mask);
}
