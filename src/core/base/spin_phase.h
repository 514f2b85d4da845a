// Spin, then sleep: a blocking wait polls for a while (the busy phase:
// rsocket's polling_time, VMA_RX_POLL, VMA_SELECT_POLL) before its first
// sleep, as a sleep and its wake-up cost more than a short spin when the
// answer is close. In the VMA face a spin that no longer helps ends early
// (SpinLimit).
#pragma once
#include <chrono>

#include "core/base/api.h"

namespace ss {

// Whether a busy wait should go on spinning: not once its thread was
// preempted (two looks further apart than kPreempted, and the kernel
// counted an involuntary switch of the thread meanwhile: another runnable
// thread wanted the core, maybe the one that would answer; the thread's
// next waits then sleep at once for a while), nor while more of the
// process's threads spin than spinners_allowed(). A spinner that starves
// what it waits for makes the wait longer, not shorter.
class SpinLimit {
 public:
  using clock = std::chrono::steady_clock;
  static constexpr auto kPreempted = std::chrono::microseconds(200);

  SpinLimit() = default;
  SS_API ~SpinLimit();
  SpinLimit(const SpinLimit&) = delete;
  SpinLimit& operator=(const SpinLimit&) = delete;
  // One look of the spin: true while spinning should go on; false for
  // good once it should not (the wait sleeps from then on).
  SS_API bool go_on(clock::time_point now);
  // The spin is over (its time or count ran out): the thread sleeps from
  // here and no longer counts as spinning.
  SS_API void end();

 private:
  bool counted_ = false, stopped_ = false;
  clock::time_point last_{};
  long switches_ = 0;  // the thread's involuntary switches when the spin began
};

// The process's spinning threads (SpinLimit's) and the cores it may run on
// (its affinity when first asked).
int spinners_join();  // the count with this one
void spinners_leave();
int process_cores();
// How many of a process's threads may spin at once: all its cores when
// its affinity leaves some of the machine's to the rest (its peer, the
// kernel's softirqs: a program pinned to a core, as latency-critical ones
// are, spins there), else all but one.
int spinners_allowed(int process_cores, long online_cores);
int spinners_allowed();  // this process's

class SpinPhase {
 public:
  using clock = std::chrono::steady_clock;
  // limited: the busy phase also ends when spinning stops helping
  // (SpinLimit: the VMA face's waits); else it lasts its whole length
  // (rsocket's polling_time is a promise to spin).
  explicit SpinPhase(bool limited = false) : limited_(limited) {}
  // True once the busy phase is over: it began at the first call and lasts
  // `length()` (asked once, so a setting is read only by waits that spin),
  // or ended early (limited).
  template <class Length>
  bool over(clock::time_point now, Length&& length) {
    if (until_ == clock::time_point::min()) until_ = now + length();
    if (now < until_ && (!limited_ || limit_.go_on(now))) return false;
    limit_.end();
    return true;
  }

 private:
  const bool limited_;
  clock::time_point until_ = clock::time_point::min();
  SpinLimit limit_;
};

}  // namespace ss
