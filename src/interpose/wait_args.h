// The arguments the waiting calls share (ppoll, pselect, epoll_pwait,
// epoll_pwait2): a timespec timeout and a signal mask for the call.
#pragma once
#include <pthread.h>
#include <signal.h>

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

// The signal mask for the call's duration. Unlike the kernel's, the swap
// is not atomic with the wait: a signal the mask lets in just before the
// wait starts does not cut it short.
class MaskForCall {
 public:
  explicit MaskForCall(const sigset_t* mask) : set_(mask != nullptr) {
    if (set_) pthread_sigmask(SIG_SETMASK, mask, &old_);
  }
  ~MaskForCall() {
    if (!set_) return;
    const int saved = errno;
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    errno = saved;
  }
  MaskForCall(const MaskForCall&) = delete;
  MaskForCall& operator=(const MaskForCall&) = delete;

 private:
  bool set_;
  sigset_t old_{};  // read only when set_ (initialised: no -Wmaybe-uninitialized)
};

}  // namespace ss::interpose
