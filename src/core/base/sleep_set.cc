#include "core/base/sleep_set.h"

#include "core/base/interruptible_poll.h"

namespace ss {

bool SleepSet::arm(Pollable* obj, short events, int* sleep_ms) {
  WaitTarget t = obj->wait_target(events, sleep_ms);
  if (t.fd == WaitTarget::kReady) return false;
  if (t.fd < 0) return true;  // kTimeOnly
  // Only real fds: poll(2) refuses a set larger than RLIMIT_NOFILE.
  waits_.push_back({t.fd, t.events, 0});
  int kick_slot = -1;
  if (t.kick_fd >= 0) {
    kick_slot = static_cast<int>(waits_.size());
    waits_.push_back({t.kick_fd, POLLIN, 0});
  }
  armed_.push_back({obj, t, kick_slot});
  return true;
}

int SleepSet::sleep(int ms) { return interruptible_poll(waits_.data(), waits_.size(), ms, false); }

void SleepSet::disarm() {
  for (const Armed& a : armed_)
    a.obj->after_wait(a.target, a.kick_slot >= 0 && (waits_[a.kick_slot].revents & POLLIN));
  armed_.clear();
}

}  // namespace ss
