// Spin, then sleep: a blocking wait polls for a while (the busy phase:
// rsocket's polling_time, VMA_RX_POLL, VMA_SELECT_POLL) before its first
// sleep, as a sleep and its wake-up cost more than a short spin when the
// answer is close. A spin that no longer helps ends early (SpinLimit).
#pragma once
#include <chrono>

#include "core/base/api.h"

namespace ss {

// Whether a busy wait should go on spinning: not once its thread was
// preempted (two looks further apart than kPreempted: another runnable
// thread wanted the core, maybe the one that would answer; the thread's
// next waits then sleep at once for a while), nor while more of the
// process's threads spin than it may run on cores. A spinner that
// starves what it waits for makes the wait longer, not shorter.
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

 private:
  bool counted_ = false, stopped_ = false;
  clock::time_point last_{};
};

// The process's spinning threads (SpinLimit's) and the cores it may run on
// (its affinity when first asked).
SS_API int spinners_join();  // the count with this one
SS_API void spinners_leave();
SS_API int process_cores();

class SpinPhase {
 public:
  using clock = std::chrono::steady_clock;
  // True once the busy phase is over: it began at the first call and lasts
  // `length()` (asked once, so a setting is read only by waits that spin),
  // or ended early (SpinLimit).
  template <class Length>
  bool over(clock::time_point now, Length&& length) {
    if (until_ == clock::time_point::min()) until_ = now + length();
    return now >= until_ || !limit_.go_on(now);
  }

 private:
  clock::time_point until_ = clock::time_point::min();
  SpinLimit limit_;
};

}  // namespace ss
