#include "core/base/sleep_set.h"

#include "core/base/interruptible_poll.h"

namespace ss {

size_t SleepSet::slot(int fd, short events) {
  auto [it, fresh] = slot_of_.try_emplace(fd, waits_.size());
  if (fresh)
    waits_.push_back({fd, events, 0});
  else
    waits_[it->second].events |= events;
  return it->second;
}

bool SleepSet::arm(Pollable* obj, short events, int* sleep_ms) {
  WaitTarget t = obj->wait_target(events, sleep_ms);
  if (t.fd == WaitTarget::kReady) return false;
  if (t.fd < 0) return true;  // kTimeOnly
  slot(t.fd, t.events);
  const int kick_slot = t.kick_fd >= 0 ? static_cast<int>(slot(t.kick_fd, POLLIN)) : -1;
  armed_.push_back({obj, t, kick_slot});
  return true;
}

int SleepSet::sleep(int ms, const sigset_t* mask) {
  return interruptible_poll(waits_.data(), waits_.size(), ms, false, mask);
}

void SleepSet::disarm() {
  for (const Armed& a : armed_)
    a.obj->after_wait(a.target, a.kick_slot >= 0 && (waits_[a.kick_slot].revents & POLLIN));
  armed_.clear();
}

}  // namespace ss
