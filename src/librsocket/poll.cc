// rpoll and rselect over a mix of rsockets (each a Pollable in the fd
// table) and ordinary descriptors: a busy phase of polling_time, then
// sleeps bounded by wake_up_interval (core/base/mixed_poll.cc).
#include "librsocket/poll.h"

#include "core/base/mixed_poll.h"
#include "librsocket/fork.h"
#include "librsocket/settings.h"

namespace ss::rs {

namespace {
PollTiming timing() {
  fork::resume_services();  // every call does: a fork child's services start again
  return {std::chrono::microseconds(settings::get(settings::Id::kPollingTime)),
          static_cast<int>(settings::get(settings::Id::kWakeUpInterval))};
}
}  // namespace

int poll(pollfd* fds, nfds_t nfds, int timeout) {
  return poll_mixed(fds, nfds, timeout, timing());
}

int select(int nfds, fd_set* rd, fd_set* wr, fd_set* ex, timeval* tv) {
  return select_mixed(nfds, rd, wr, ex, tv, timing());
}

}  // namespace ss::rs
