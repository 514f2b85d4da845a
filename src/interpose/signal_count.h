// Signal handlers under a preload (signal_count.cc): the handlers the
// program installs with sigaction() or signal() run behind a trampoline
// that counts, per thread, the handlers that ran. A blocking call in its
// busy phase (spinning on rings or a completion queue) is in no system
// call a signal could interrupt; by the count it sees that a handler ran,
// as the kernel's sleep would have been interrupted, and fails with EINTR
// or goes on as the kernel would (signal(7)). Handlers installed behind
// the preload's back (glibc's sysv_signal, sigset, a raw rt_sigaction)
// are not counted. Each preload exports sigaction and signal over these.
#pragma once
#include <signal.h>

#include <cstdint>
#include <memory>

namespace ss::interpose {

// This thread's count of the program's handlers that ran so far.
uint64_t handlers_ran();

// Whether a handler ran on this thread since *seen (then moved on) and the
// call must fail with EINTR: the handler lacked SA_RESTART, or the call is
// not `restartable` (SO_RCVTIMEO set).
bool spin_interrupted(uint64_t* seen, bool restartable);

// A preload's own work on this thread that a handler must not re-enter: it
// holds locks that are not recursive, or a datagram half taken. Open while
// that work runs (cheap: two thread-local counts). A handler that
// interrupts it on this thread sees handler_over_busy() and the preload
// serves that handler's calls by the kernel (no deadlock on its own lock).
// A sleep inside it that holds none of those locks is marked quiet
// (core/base/signal_depth.h): a handler over the mark alone runs as on a
// thread outside the library (its own calls and scopes counted afresh).
class BusyScope {
 public:
  BusyScope() noexcept;
  ~BusyScope();
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;
};

// Whether this thread runs a handler that interrupted a BusyScope.
bool handler_over_busy() noexcept;
// Drops `object` now; in a handler over a BusyScope, once this thread's
// outermost BusyScope ends instead (the object's destructor may take the
// locks the interrupted work holds).
void release_after_busy(std::shared_ptr<void> object);
// Whether this thread runs a counted handler at all (it may have
// interrupted malloc or any lock: only async-signal-safe work then).
bool in_handler() noexcept;
// Whether this thread runs a counted handler that interrupted the
// preload's own calls (own_calls.h: inside a library call, which may hold
// a connection's lock) and has opened none of its own since.
bool handler_over_own_call() noexcept;

// sigaction(2) with a program's handler counted; `drop_restart`: install
// it without SA_RESTART whatever the program asked (reported back as asked).
int counted_sigaction(int sig, const struct sigaction* act, struct sigaction* old,
                      bool drop_restart);

// glibc's signal(): BSD semantics (SA_RESTART, the signal blocked in its
// handler), through `sa` (the preload's exported sigaction).
sighandler_t bsd_signal(int sig, sighandler_t h,
                        int (*sa)(int, const struct sigaction*, struct sigaction*));

}  // namespace ss::interpose
