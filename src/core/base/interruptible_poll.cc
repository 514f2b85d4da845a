#include "core/base/interruptible_poll.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <cerrno>

#include "core/base/cancel.h"
#include "core/base/sandbox.h"

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

// Locked in with more descriptors than RLIMIT_NOFILE (0 in OpenSSH's
// sandbox), where poll(2) fails with EINVAL: each descriptor is asked
// alone, and one the kernel will not poll even so counts as ready after
// a short sleep (its reader finds a non-blocking descriptor empty and
// comes back): a busy poll, the only wait left there.
int poll_one_by_one(pollfd* fds, nfds_t nfds, int timeout_ms) {
  constexpr long kBusyPollNs = 100 * 1000;
  int ready = 0;
  bool unpollable = false;
  for (nfds_t i = 0; i < nfds; i++) {
    pollfd p = fds[i];
    const int r = ::poll(&p, 1, 0);
    fds[i].revents = r > 0 ? p.revents : 0;
    ready += r > 0;
    unpollable = unpollable || (r < 0 && errno == EINVAL);
  }
  if (ready || timeout_ms == 0) return ready;
  timespec nap{0, kBusyPollNs};
  if (timeout_ms > 0 && timeout_ms * 1000000L < kBusyPollNs) nap.tv_nsec = timeout_ms * 1000000L;
  nanosleep(&nap, nullptr);
  if (!unpollable) return 0;
  for (nfds_t i = 0; i < nfds; i++) fds[i].revents = fds[i].events;
  return static_cast<int>(nfds);
}
}  // namespace

int interruptible_poll(pollfd* fds, nfds_t nfds, int timeout_ms, bool restartable,
                       const sigset_t* mask) {
  int n;
  {
    const CancelPoint point;  // an edge's sleep: where a cancellation acts
    if (mask) {
      const timespec ts{timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
      n = ::ppoll(fds, nfds, timeout_ms < 0 ? nullptr : &ts, mask);
    } else {
      n = ::poll(fds, nfds, timeout_ms);
    }
  }
  if (n >= 0) return n;
  if (errno == EINVAL && sandbox::locked_in()) return poll_one_by_one(fds, nfds, timeout_ms);
  if (errno != EINTR) return -errno;
  // Locked in, sigaction may be a call the filter kills: restarted as asked.
  if (sandbox::locked_in()) return restartable ? 0 : -EINTR;
  if (!restartable || !kernel_would_restart()) return -EINTR;
  for (nfds_t i = 0; i < nfds; i++) fds[i].revents = 0;
  return 0;
}

}  // namespace ss
