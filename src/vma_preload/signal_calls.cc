// sigaction and signal under the VMA preload: the program's handlers
// counted (interpose/signal_count.h). With VMA_HANDLE_SIGINTR=1 a SIGINT
// handler is installed without SA_RESTART, as libvma's own handler in
// front of it is, so SIGINT ends a blocking call (EINTR) whatever the
// program asked.
#include <signal.h>

#include "interpose/export.h"
#include "interpose/signal_count.h"
#include "libvmacompat/settings.h"
#include "vma_preload/start.h"

namespace {

bool handle_sigintr() {
  ss::vma::preload::start();
  return ss::vma::settings::get(ss::vma::settings::Id::kHandleSigintr) != 0;
}

}  // namespace

SS_PRELOAD_EXPORT int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  const bool drop = sig == SIGINT && act && act->sa_handler != SIG_DFL &&
                    act->sa_handler != SIG_IGN && handle_sigintr();
  return ss::interpose::counted_sigaction(sig, act, old, drop);
}

SS_PRELOAD_EXPORT sighandler_t signal(int sig, sighandler_t h) {
  return ss::interpose::bsd_signal(sig, h, sigaction);
}
