// What poll_mixed and EpollSet share: one sleep over kernel descriptors
// and armed Pollables (each one's wait target and kick), and the loop
// around it (look, spin for a while, then sleep until a wake-up, the
// wake-up interval or the timeout, and look again).
#pragma once
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/base/api.h"
#include "core/base/mixed_poll.h"
#include "core/base/pollable.h"
#include "core/base/spin_phase.h"

namespace ss {

class SleepSet {
 public:
  void clear() {
    waits_.clear();
    armed_.clear();
  }
  void add_kernel(int fd, short events) { waits_.push_back({fd, events, 0}); }
  // Arms `obj` (kept alive by the caller until disarm()) for `events`;
  // false when it is ready now: no sleep then, but disarm() all the same.
  bool arm(Pollable* obj, short events, int* sleep_ms);
  // interruptible_poll on everything added, never restarted (as poll(2)
  // and epoll_wait(2)): its count, or -errno.
  int sleep(int ms);
  // Every armed Pollable hears that the sleep is over.
  void disarm();
  // revents of the n-th add_kernel() since clear().
  short kernel_revents(size_t n) const { return waits_[n].revents; }

 private:
  struct Armed {
    Pollable* obj;
    WaitTarget target;
    int kick_slot;  // where its kick sits in waits_, or -1
  };
  std::vector<pollfd> waits_;
  std::vector<Armed> armed_;
};

// The loop: `scan(repeat)` (a count of what is ready, or -errno) until it
// finds something or the timeout (ms, < 0: none) passes; `repeat` is false
// for the first scan and the first after each sleep (Pollable's
// readiness_repeat() for the others); after the busy phase,
// `arm(&sleep, &ms)` fills the sleep set (false: something is ready now)
// and the thread sleeps on it. The result of the last scan, 0 on timeout,
// or -errno (-EINTR when a signal handler ran).
template <class Scan, class Arm>
int look_spin_sleep(int timeout, const PollTiming& timing, Scan&& scan, Arm&& arm) {
  using clock = std::chrono::steady_clock;
  const bool forever = timeout < 0;
  const auto deadline = clock::now() + std::chrono::milliseconds(std::max(timeout, 0));
  SpinPhase spin;
  SleepSet sleep;
  bool repeat = false;
  for (;;) {
    int n = scan(repeat);
    repeat = true;
    if (n || timeout == 0) return n;
    auto now = clock::now();
    if (!forever && now >= deadline) return 0;
    if (!spin.over(now, [&] { return timing.spin; })) continue;

    int ms = timing.wake_interval_ms > 0 ? timing.wake_interval_ms : -1;
    if (!forever) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
      ms = ms < 0 ? static_cast<int>(left) : std::min<int>(ms, static_cast<int>(left));
    }
    sleep.clear();
    int r = arm(&sleep, &ms) ? sleep.sleep(ms) : 0;
    sleep.disarm();
    repeat = false;
    if (r < 0) return r;
  }
}

}  // namespace ss
