#include "core/base/interruptible_poll.h"

#include <pthread.h>
#include <signal.h>

#include <cerrno>

namespace ss {

namespace {
// Faults reach a thread while it runs its own code, never while it sleeps
// in a call (sanitizers install handlers for them without SA_RESTART).
bool synchronous(int sig) {
  return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGTRAP ||
         sig == SIGSYS;
}

// Which handler ran is not told to us: the kernel restarts the call only if
// that handler had SA_RESTART. Every handler that could have run here (a
// signal this thread does not block) having it is the case where the
// kernel surely restarts. With one lacking it, the program must already
// expect EINTR from its blocking calls, so EINTR is the answer it handles.
bool kernel_would_restart() {
  sigset_t blocked;
  if (pthread_sigmask(SIG_SETMASK, nullptr, &blocked) != 0) return false;
  for (int sig = 1; sig < NSIG; sig++) {
    if (synchronous(sig) || sigismember(&blocked, sig) == 1) continue;
    struct sigaction sa {};
    if (sigaction(sig, nullptr, &sa) != 0) continue;  // glibc's reserved signals
    if (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN) continue;
    if (!(sa.sa_flags & SA_RESTART)) return false;
  }
  return true;
}
}  // namespace

int interruptible_poll(pollfd* fds, nfds_t nfds, int timeout_ms, bool restartable) {
  int n = ::poll(fds, nfds, timeout_ms);
  if (n >= 0) return n;
  if (errno != EINTR) return -errno;
  if (!restartable || !kernel_would_restart()) return -EINTR;
  for (nfds_t i = 0; i < nfds; i++) fds[i].revents = 0;
  return 0;
}

}  // namespace ss
