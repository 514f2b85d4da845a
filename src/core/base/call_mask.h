// The signal mask a waiting call asks for (ppoll, pselect, epoll_pwait,
// epoll_pwait2), kept as the kernel keeps it: swapped in with the sleep as
// one step (and in from the first look that found nothing where handlers
// are counted), so a signal the mask lets in ends the call whenever it
// comes (a program that unblocks SIGCHLD only inside pselect must not
// sleep through one that came just before the sleep).
#pragma once
#include <signal.h>

#include "core/base/api.h"

namespace ss {

// The wrapper's side: `mask` (null: none), copied as the kernel copies
// it, is this thread's call mask for the waits made in the scope
// (look_spin_sleep).
class CallMask {
 public:
  SS_API explicit CallMask(const sigset_t* mask);
  SS_API ~CallMask();
  CallMask(const CallMask&) = delete;
  CallMask& operator=(const CallMask&) = delete;

 private:
  sigset_t copy_{};
  const sigset_t* outer_;
};

// The wait's side, made after it counted the handlers that ran: the
// thread's call mask, none for a wait inside the scope (a handler's).
// `swap`: what the mask blocks is blocked from the start, the mask is in
// from swap_in() and until the scope ends (the wait counts handlers, so a
// signal let in at the swap or in the busy phase ends it); else the
// thread's own mask stays and the sleep's ppoll alone lets the call's in.
class CallMaskIn {
 public:
  explicit CallMaskIn(bool swap);
  ~CallMaskIn();
  CallMaskIn(const CallMaskIn&) = delete;
  CallMaskIn& operator=(const CallMaskIn&) = delete;
  // After the wait's first look found nothing: the kernel looks at
  // signals only then, so a call that finds its descriptors ready at once
  // leaves a signal its mask lets in pending. Once; nothing without swap.
  void swap_in();
  const sigset_t* mask() const { return mask_; }
  bool swaps() const { return swaps_; }

 private:
  const sigset_t* mask_;
  bool swaps_;
  bool swapped_ = false;
  sigset_t old_{};  // read only when swaps_
};

// Whether a signal pending on this thread is one `mask` lets in.
bool pending_let_in(const sigset_t* mask);

// For a poll or select that may not wait and found nothing: poll(2) looks
// at signals before its timeout (epoll_wait does not), so a pending signal
// the call's mask lets in runs its handler and the call says -EINTR; else 0.
int let_in_pending_signal();

}  // namespace ss
