#include "core/base/call_mask.h"

#include <poll.h>
#include <pthread.h>

#include <cerrno>

#include "core/base/sandbox.h"

namespace ss {

namespace {
thread_local const sigset_t* t_call_mask = nullptr;

// pthread_sigmask(how, ...), errno kept.
void set_mask(const sigset_t* mask, sigset_t* old, int how = SIG_SETMASK) {
  const int saved = errno;
  pthread_sigmask(how, mask, old);
  errno = saved;
}
}  // namespace

CallMask::CallMask(const sigset_t* mask) : outer_(t_call_mask) {
  if (mask) copy_ = *mask;
  t_call_mask = mask ? &copy_ : nullptr;
}
CallMask::~CallMask() { t_call_mask = outer_; }

CallMaskIn::CallMaskIn(bool swap) : mask_(t_call_mask), swaps_(mask_ && swap) {
  t_call_mask = nullptr;
  // What the call's mask blocks is blocked from the start, as the kernel
  // installs it at entry; what it lets in waits for swap_in().
  if (swaps_) set_mask(mask_, &old_, SIG_BLOCK);
}

void CallMaskIn::swap_in() {
  if (!swaps_ || swapped_) return;
  set_mask(mask_, nullptr);
  swapped_ = true;
}

CallMaskIn::~CallMaskIn() {
  if (swaps_) set_mask(&old_, nullptr);
  t_call_mask = mask_;
}

int let_in_pending_signal() {
  if (!t_call_mask || sandbox::locked_in()) return 0;  // the filter may kill ppoll
  const int saved = errno;
  const timespec zero{0, 0};
  const int r = ::ppoll(nullptr, 0, &zero, t_call_mask) < 0 && errno == EINTR ? -EINTR : 0;
  errno = saved;
  return r;
}

bool pending_let_in(const sigset_t* mask) {
  sigset_t pending;
  if (sigpending(&pending) != 0) return false;
  for (int sig = 1; sig < NSIG; sig++)
    if (sigismember(&pending, sig) == 1 && sigismember(mask, sig) == 0) return true;
  return false;
}

}  // namespace ss
