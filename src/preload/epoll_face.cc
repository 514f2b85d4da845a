#include "preload/epoll_face.h"

#include <chrono>

#include "interpose/signal_count.h"
#include "librsocket/preload_hooks.h"

namespace ss::preload {

namespace {

ss::PollTiming rsocket_timing() {
  long long spin_us = 0;
  int wake_ms = 0;
  ss_rspreload_poll_timing(&spin_us, &wake_ms);
  ss::PollTiming t{std::chrono::microseconds(spin_us), wake_ms};
  t.handlers_ran = ss::interpose::handlers_ran;  // a handler in the busy phase: EINTR
  return t;
}

}  // namespace

const interpose::EpollFace kEpollFace{"librspreload", rsocket_timing};

}  // namespace ss::preload
