// sigaction and signal under librspreload: the program's handlers counted
// (interpose/signal_count.h), and librsocket given the count, so a
// blocking call in its busy phase, or between two of its sleeps, fails
// with EINTR as the kernel's sleep would (or goes on, SA_RESTART).
#include <signal.h>

#include "interpose/export.h"
#include "interpose/signal_count.h"
#include "librsocket/preload_hooks.h"

namespace {
int interrupted(uint64_t* seen, int restartable) {
  return ss::interpose::spin_interrupted(seen, restartable != 0);
}
}  // namespace

SS_PRELOAD_EXPORT int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  if (act) ss_rspreload_signal_probe(ss::interpose::handlers_ran, interrupted);
  return ss::interpose::counted_sigaction(sig, act, old, false);
}

SS_PRELOAD_EXPORT sighandler_t signal(int sig, sighandler_t h) {
  return ss::interpose::bsd_signal(sig, h, sigaction);
}
