// The one place a blocking call of any face sleeps: poll(2) on what can
// wake it, with the kernel's rules for a signal handler that runs meanwhile.
#pragma once
#include <poll.h>
#include <signal.h>

#include "core/base/api.h"

namespace ss {

// poll(2) for a blocking call: its count, 0 on timeout, or -errno.
// poll(2) itself fails with EINTR whenever a handler ran, SA_RESTART or
// not; a socket call is restarted by the kernel when the handler had
// SA_RESTART (signal(7)). So: -EINTR when the call should fail, and 0
// (a wake-up that finds nothing, the caller looks again and sleeps again)
// when the kernel would have restarted it. `restartable` false: always
// -EINTR (poll and select, which the kernel never restarts). `mask`: the
// sleep is ppoll(2)'s with that signal mask (CallMask; never when locked
// in by a seccomp filter, which may kill ppoll: sandbox.h).
SS_API int interruptible_poll(pollfd* fds, nfds_t nfds, int timeout_ms, bool restartable = true,
                              const sigset_t* mask = nullptr);

}  // namespace ss
