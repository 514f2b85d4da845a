// An Entry as a Pollable: a fresh socket is its kernel socket; a listener
// is readable when either its kernel socket (a plain client) or its
// rsocket listener (an rsocket peer) has a connection waiting. A sleep
// waits on the rsocket listener's target with the kernel listener in the
// kick's place (a listener's target has no kick), so one wake-up of
// either ends it.
#include <poll.h>

#include <algorithm>
#include <memory>

#include "interpose/real.h"
#include "preload/route.h"

namespace ss::preload {

namespace {

// wait_target's mark: kick_fd is the kernel listener, not the rsocket's.
constexpr uintptr_t kKernelInKick = 1;

std::shared_ptr<Pollable> rsocket_listener(const Entry& e) {
  if (e.state.load() != Entry::State::kListener) return nullptr;
  return FdTable::instance().get_pollable(e.rs_fd);
}

}  // namespace

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
  // No place left for the kernel listener: it is looked at this often.
  constexpr int kKernelLookMs = 10;
  *sleep_ms = *sleep_ms < 0 ? kKernelLookMs : std::min(*sleep_ms, kKernelLookMs);
  return t;
}

void Entry::after_wait(const WaitTarget& armed, bool kicked) {
  if (armed.fd == kernel_fd()) return;  // the kernel socket alone
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
