// What poll_mixed and EpollSet share: one sleep over kernel descriptors
// and armed Pollables (each one's wait target and kick), and the loop
// around it (look, spin for a while, then sleep until a wake-up, the
// wake-up interval or the timeout, and look again).
#pragma once
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <chrono>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/base/api.h"
#include "core/base/call_mask.h"
#include "core/base/deadline.h"
#include "core/base/mixed_poll.h"
#include "core/base/pollable.h"
#include "core/base/sandbox.h"
#include "core/base/signals_held.h"
#include "core/base/spin_phase.h"

namespace ss {

// Each descriptor is polled once, however many objects wait on it (the
// sockets of one netdev share their rings' target, and every kick of a
// thread is its one eventfd): poll(2) refuses more entries than
// RLIMIT_NOFILE, and a sleep over ten thousand sockets polls a few.
class SleepSet {
 public:
  SleepSet() = default;
  // A sleep cancelled (pthread_cancel unwinds through it) still disarms.
  ~SleepSet() { disarm(); }
  SleepSet(const SleepSet&) = delete;
  SleepSet& operator=(const SleepSet&) = delete;
  void clear() {
    waits_.clear();
    slot_of_.clear();
    armed_.clear();
  }
  void add_kernel(int fd, short events) { slot(fd, events); }
  // Arms `obj` (kept alive by the caller until disarm()) for `events`;
  // false when it is ready now: no sleep then, but disarm() all the same.
  bool arm(Pollable* obj, short events, int* sleep_ms);
  // interruptible_poll on everything added (with the call's signal mask,
  // if any), never restarted (as poll(2) and epoll_wait(2)): its count, or
  // -errno.
  int sleep(int ms, const sigset_t* mask = nullptr);
  // Every armed Pollable hears that the sleep is over.
  void disarm();

 private:
  struct Armed {
    Pollable* obj;
    WaitTarget target;
    int kick_slot;  // where its kick sits in waits_, or -1
  };
  // fd's entry in waits_, its events widened to `events`.
  size_t slot(int fd, short events);
  std::vector<pollfd> waits_;
  std::unordered_map<int, size_t> slot_of_;  // fd -> its entry in waits_
  std::vector<Armed> armed_;
};

// The loop: `scan(repeat)` (a count of what is ready, or -errno) until it
// finds something or the timeout (ms, < 0: none) passes; after the busy
// phase, `arm(&sleep, &ms)` fills the sleep set (false: something is ready
// now; each object's arming looks fully) and the thread sleeps on it.
// `repeat` is false (a full look) for the scan of a call that may not wait
// (timeout 0), the first of one whose mask swaps in (CallMaskIn), the
// first after each sleep, and the last before returning
// 0 on timeout; every other scan is a repeat (Pollable's
// readiness_repeat()), from a waiting call's first: nothing is reported
// missing without a full look. The result of the last scan, 0 on
// timeout, or -errno (-EINTR when a signal handler ran: in the sleep, or
// in the busy phase as timing.handlers_ran tells). A call's signal mask
// (CallMask) is in from the first look that found nothing when handlers
// are counted (or locked in by a seccomp filter, where ppoll may be a
// call the filter kills); from
// the arming to the sleep every signal is held, and the sleep's ppoll
// lets in the mask. Uncounted, a signal the mask lets in that is pending
// already ends the call at once, in that sleep.
template <class Scan, class Arm>
int look_spin_sleep(int timeout, const PollTiming& timing, Scan&& scan, Arm&& arm) {
  using clock = std::chrono::steady_clock;
  const Deadline deadline = deadline_after_ms(timeout);
  const bool forever = deadline == Deadline::max();
  SpinPhase spin(timing.spin_limited);
  SleepSet sleep;
  const uint64_t handlers = timing.handlers_ran ? timing.handlers_ran() : 0;
  auto interrupted = [&] { return timing.handlers_ran && timing.handlers_ran() != handlers; };
  // After the count: a signal let in at the swap is seen.
  CallMaskIn mask(timing.handlers_ran || sandbox::locked_in());
  // A swap waits for a look that found nothing: a full one, as the
  // kernel's first look sees every descriptor before it looks at signals.
  bool full = timeout == 0 || mask.swaps();
  const bool atomic = mask.mask() && !sandbox::locked_in();  // ppoll's swap
  bool sleep_now = atomic && !mask.swaps() && pending_let_in(mask.mask());
  for (;;) {
    int n = scan(!full);
    if (n) return n;
    // Nothing ready: a signal the mask lets in ends the call from here. A
    // call that may not wait leaves it to its caller (poll's
    // let_in_pending_signal; epoll says 0), save where that cannot ppoll.
    if (timeout != 0 || sandbox::locked_in()) mask.swap_in();
    if (timeout == 0) return 0;
    auto now = clock::now();
    if (!forever && now >= deadline) return full ? 0 : scan(false);
    full = false;
    if (interrupted()) return -EINTR;
    if (!sleep_now && !spin.over(now, [&] { return timing.spin; })) continue;
    sleep_now = false;

    int ms = timing.wake_interval_ms > 0 ? timing.wake_interval_ms : -1;
    if (!forever) ms = shorter_sleep_ms(ms, ms_left(deadline));
    sleep.clear();
    int r = 0;
    if (arm(&sleep, &ms)) {
      std::optional<SignalsHeld> held;  // a handler from here on runs in the sleep
      if (atomic) held.emplace();
      r = mask.mask() && interrupted() ? -EINTR : sleep.sleep(ms, atomic ? mask.mask() : nullptr);
    }
    sleep.disarm();
    full = true;
    if (r < 0) return r;
  }
}

}  // namespace ss
