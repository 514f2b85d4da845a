// librspreload's face of the shared poll and select (interpose/poll_calls.h):
// librsocket's rpoll and rselect serve a set once any descriptor is ours;
// a listener counts as readable when either its kernel socket or its
// rsocket listener has a connection waiting (its entry is a Pollable:
// listener_ready.cc). epoll: epoll_calls.cc.
#include "interpose/poll_calls.h"
#include "librsocket/rsocket_own.h"
#include "preload/route.h"

using namespace ss::preload;

namespace {

// Descriptors rpoll must see as Pollables: connections, listeners, the
// preload's epoll sets.
bool pollable_route(int fd) {
  const Route r = route(fd);
  return r == Route::kRsocket || r == Route::kListener || r == Route::kEpoll;
}

}  // namespace

namespace ss::interpose {
const PollFace kPollFace{pollable_route, rpoll, rselect};
}  // namespace ss::interpose
