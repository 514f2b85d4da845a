// Fortify's poll variants: what a program built with _FORTIFY_SOURCE
// calls when the compiler cannot prove its array holds `n` entries (a
// runtime count). glibc's check (an array shorter than `n` aborts), then
// the preload's own poll and ppoll, so the program's waits take the
// preload's path: without these, libc's ppoll saw a connection's number
// as a bare socket and said POLLHUP while data waited.
#include <poll.h>
#include <signal.h>

#include "interpose/export.h"

extern "C" void __chk_fail(void) __attribute__((noreturn));

SS_PRELOAD_EXPORT int __poll_chk(pollfd* fds, nfds_t n, int timeout, size_t fdslen) {
  if (fdslen / sizeof *fds < n) __chk_fail();
  return poll(fds, n, timeout);
}

SS_PRELOAD_EXPORT int __ppoll_chk(pollfd* fds, nfds_t n, const timespec* t, const sigset_t* mask,
                                  size_t fdslen) {
  if (fdslen / sizeof *fds < n) __chk_fail();
  return ppoll(fds, n, t, mask);
}
