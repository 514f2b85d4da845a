#include "core/base/call_mask.h"

#include <pthread.h>

#include <cerrno>

namespace ss {

namespace {
thread_local const sigset_t* t_call_mask = nullptr;

void set_mask(const sigset_t* mask, sigset_t* old) {
  const int saved = errno;
  pthread_sigmask(SIG_SETMASK, mask, old);
  errno = saved;
}
}  // namespace

CallMask::CallMask(const sigset_t* mask) : outer_(t_call_mask) {
  if (mask) copy_ = *mask;
  t_call_mask = mask ? &copy_ : nullptr;
}
CallMask::~CallMask() { t_call_mask = outer_; }

CallMaskIn::CallMaskIn(bool swap) : mask_(t_call_mask), swapped_(mask_ && swap) {
  t_call_mask = nullptr;
  if (swapped_) set_mask(mask_, &old_);
}

CallMaskIn::~CallMaskIn() {
  if (swapped_) set_mask(&old_, nullptr);
  t_call_mask = mask_;
}

bool pending_let_in(const sigset_t* mask) {
  sigset_t pending;
  if (sigpending(&pending) != 0) return false;
  for (int sig = 1; sig < NSIG; sig++)
    if (sigismember(&pending, sig) == 1 && sigismember(mask, sig) == 0) return true;
  return false;
}

}  // namespace ss
