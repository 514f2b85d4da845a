// The arguments the waiting calls share (ppoll, pselect, epoll_pwait,
// epoll_pwait2): a timespec timeout (their signal mask: core/base/call_mask.h).
#pragma once
#include <cerrno>
#include <ctime>

namespace ss::interpose {

// Milliseconds, rounded up (a wait never ends early); -1 for none.
inline int timespec_ms(const timespec* t) {
  if (!t) return -1;
  long long ms = t->tv_sec * 1000LL + (t->tv_nsec + 999999) / 1000000;
  return ms > 0x7fffffff ? 0x7fffffff : static_cast<int>(ms);
}

// EINVAL (errno set, true) for a timeout no kernel call takes.
inline bool bad_timespec(const timespec* t) {
  if (t && (t->tv_sec < 0 || t->tv_nsec < 0 || t->tv_nsec >= 1000000000)) {
    errno = EINVAL;
    return true;
  }
  return false;
}

}  // namespace ss::interpose
