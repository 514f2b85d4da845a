// Spin, then sleep: a blocking wait polls for a while (the busy phase:
// rsocket's polling_time) before its first sleep, as a sleep and its
// wake-up cost more than a short spin when the answer is close.
#pragma once
#include <chrono>

namespace ss {

class SpinPhase {
 public:
  using clock = std::chrono::steady_clock;
  // True once the busy phase is over: it began at the first call and lasts
  // `length()` (asked once, so a setting is read only by waits that spin).
  template <class Length>
  bool over(clock::time_point now, Length&& length) {
    if (until_ == clock::time_point::min()) until_ = now + length();
    return now >= until_;
  }

 private:
  clock::time_point until_ = clock::time_point::min();
};

}  // namespace ss
