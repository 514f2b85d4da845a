// The signal mask a waiting call asks for (ppoll, pselect, epoll_pwait,
// epoll_pwait2), kept as the kernel keeps it: in for the whole call, and
// swapped in with the sleep as one step, so a signal the mask lets in ends
// the call whenever it comes (a program that unblocks SIGCHLD only inside
// pselect must not sleep through one that came just before the sleep).
#pragma once
#include <signal.h>

#include "core/base/api.h"

namespace ss {

// The wrapper's side: `mask` (null: none) is this thread's call mask for
// the waits made in the scope (look_spin_sleep).
class CallMask {
 public:
  SS_API explicit CallMask(const sigset_t* mask);
  SS_API ~CallMask();
  CallMask(const CallMask&) = delete;
  CallMask& operator=(const CallMask&) = delete;

 private:
  const sigset_t* outer_;
};

// The wait's side, made after it counted the handlers that ran (a signal
// let in at the swap is then one the wait sees): the thread's call mask in
// until the scope ends, none for a wait inside it (a handler's).
class CallMaskIn {
 public:
  CallMaskIn();
  ~CallMaskIn();
  CallMaskIn(const CallMaskIn&) = delete;
  CallMaskIn& operator=(const CallMaskIn&) = delete;
  // For the sleep's ppoll, or null when the call has no mask.
  const sigset_t* mask() const { return mask_; }

 private:
  const sigset_t* mask_;
  sigset_t old_{};  // read only when mask_
};

}  // namespace ss
