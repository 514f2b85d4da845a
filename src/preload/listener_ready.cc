// An Entry as a Pollable: a fresh socket is its kernel socket; a listener
// is readable when either its kernel socket (a plain client) or its
// rsocket listener (an rsocket peer) has a connection waiting. A sleep
// waits on the rsocket listener's target with the kernel listener in the
// kick's place (a listener's target has no kick), so one wake-up of
// either ends it. Edge-triggered, a listener counts and sleeps on both
// listeners' descriptors in its ArrivalEdges set: each connection is one
// edge, as Linux's, and one left unaccepted wakes nobody.
#include <poll.h>

#include <algorithm>
#include <memory>

#include "interpose/real.h"
#include "core/base/deadline.h"
#include "preload/route.h"

namespace ss::preload {

namespace {

// wait_target's marks: kick_fd is the kernel listener, not the rsocket's;
// fd is the Entry's ArrivalEdges set (kick_fd its kick).
constexpr uintptr_t kKernelInKick = 1;
constexpr uintptr_t kEdgeSet = 2;

std::shared_ptr<Pollable> rsocket_listener(const Entry& e) {
  if (e.state.load() != Entry::State::kListener) return nullptr;
  return FdTable::instance().get_pollable(e.rs_fd);
}

// The descriptor the rsocket listener's sleeps wait on: written (or, for
// a listener shared by fork, readable) at each connection it takes.
int arrival_fd(Pollable& rs) {
  int ms = -1;
  OwnCalls in;
  const WaitTarget t = rs.wait_target(POLLIN, &ms);  // a listener's: no look, no kick
  if (t.fd < 0) return -1;
  rs.after_wait(t, false);
  return t.fd;
}

}  // namespace

bool Entry::change_count(uint64_t* count) {
  auto rs = rsocket_listener(*this);
  if (!rs) return false;  // fresh: the kernel socket's level
  return edges.count({kernel_fd(), arrival_fd(*rs)}, count);
}

short Entry::readiness(short events) {
  pollfd p{kernel_fd(), events, 0};
  short rev = ss::interpose::real().poll(&p, 1, 0) > 0 ? p.revents : 0;
  if (events & POLLIN)
    if (auto rs = rsocket_listener(*this)) {
      OwnCalls in;
      rev |= static_cast<short>(rs->readiness(POLLIN) & POLLIN);
    }
  return rev;
}

WaitTarget Entry::wait_target(short events, int* sleep_ms) {
  if (interpose::edge_wait(events))
    if (auto rs = rsocket_listener(*this)) {
      int kick = -1;
      const int set = edges.sleep_fd({kernel_fd(), arrival_fd(*rs)}, {}, &kick, sleep_ms);
      if (set >= 0) return WaitTarget{set, POLLIN, kick, kEdgeSet};
      events |= POLLIN;  // without its set: level-triggered (change_count says so too)
    }
  const WaitTarget kernel{kernel_fd(), events, -1};
  auto rs = (events & POLLIN) ? rsocket_listener(*this) : nullptr;
  if (!rs) return kernel;
  WaitTarget t;
  {
    OwnCalls in;
    t = rs->wait_target(POLLIN, sleep_ms);
  }
  if (t.fd == WaitTarget::kReady) return t;
  if (t.fd < 0) return kernel;  // the rsocket listener changes by itself no more
  if (t.kick_fd < 0 && t.tag == 0) {
    t.kick_fd = kernel_fd();
    t.tag = kKernelInKick;
    return t;
  }
  // No place left for the kernel listener: it is only looked at.
  cut_sleep_ms(sleep_ms);
  return t;
}

void Entry::after_wait(const WaitTarget& armed, bool kicked) {
  if (armed.tag == kEdgeSet) return edges.leave(kicked);
  if (armed.fd == kernel_fd()) return;  // no rsocket target
  WaitTarget t = armed;
  if (t.tag == kKernelInKick) {
    t.kick_fd = -1;
    t.tag = 0;
    kicked = false;
  }
  if (auto rs = FdTable::instance().get_pollable(rs_fd)) {
    OwnCalls in;
    rs->after_wait(t, kicked);
  }
}

}  // namespace ss::preload
