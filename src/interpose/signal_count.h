// Signal handlers under the VMA preload (signal_calls.cc): the handlers
// the program installs with sigaction() or signal() run behind a
// trampoline that counts, per thread, the handlers that ran. A receive
// spinning on the rings (VMA_RX_POLL) is in no system call a signal could
// interrupt; by the count it sees that a handler ran, as the kernel's
// sleep would have been interrupted, and fails with EINTR or goes on as
// the kernel would (signal(7)). Handlers installed behind the preload's
// back (glibc's sysv_signal, sigset, a raw rt_sigaction) are not counted.
#pragma once
#include <cstdint>

namespace ss::vma::preload {

// This thread's count of the program's handlers that ran so far.
uint64_t handlers_ran();

// Whether a handler ran on this thread since *seen (then moved on) and the
// call must fail with EINTR: the handler lacked SA_RESTART, or the call is
// not `restartable` (SO_RCVTIMEO set).
bool spin_interrupted(uint64_t* seen, bool restartable);

}  // namespace ss::vma::preload
