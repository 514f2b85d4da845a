// rpoll and rselect over a mix of rsockets (each a Pollable in the fd
// table) and ordinary descriptors: a busy phase of polling_time, then
// sleeps bounded by wake_up_interval (core/base/mixed_poll.cc).
#include "librsocket/poll.h"

#include "core/base/mixed_poll.h"
#include "librsocket/preload_hooks.h"
#include "librsocket/fork.h"
#include "librsocket/settings.h"
#include "librsocket/signal_probe.h"

namespace ss::rs {

namespace {
PollTiming timing() {
  fork::resume_services();  // every call does: a fork child's services start again
  PollTiming t{std::chrono::microseconds(settings::get(settings::Id::kPollingTime)),
               static_cast<int>(settings::get(settings::Id::kWakeUpInterval))};
  t.handlers_ran = signal_probe::count();  // a handler in the busy phase: EINTR
  return t;
}
}  // namespace

int poll(pollfd* fds, nfds_t nfds, int timeout) { return poll_mixed(fds, nfds, timeout, timing()); }

int select(int nfds, fd_set* rd, fd_set* wr, fd_set* ex, timeval* tv) {
  return select_mixed(nfds, rd, wr, ex, tv, timing());
}

}  // namespace ss::rs

extern "C" __attribute__((visibility("default"))) void ss_rspreload_poll_timing(
    long long* spin_us, int* wake_interval_ms) {
  const ss::PollTiming t = ss::rs::timing();
  *spin_us = t.spin.count();
  *wake_interval_ms = t.wake_interval_ms;
}
