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

CallMask::CallMask(const sigset_t* mask) : outer_(t_call_mask) { t_call_mask = mask; }
CallMask::~CallMask() { t_call_mask = outer_; }

CallMaskIn::CallMaskIn() : mask_(t_call_mask) {
  t_call_mask = nullptr;
  if (mask_) set_mask(mask_, &old_);
}

CallMaskIn::~CallMaskIn() {
  if (!mask_) return;
  set_mask(&old_, nullptr);
  t_call_mask = mask_;
}

}  // namespace ss
