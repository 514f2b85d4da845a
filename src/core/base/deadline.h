// The end of a bounded blocking call (SO_RCVTIMEO, a connect timeout) and
// the sleeps that must not pass it.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace ss {

using Deadline = std::chrono::steady_clock::time_point;

// `us` microseconds from now; never (Deadline::max()) for 0, now (already
// passed) for less.
inline Deadline deadline_after_us(int64_t us) {
  if (us == 0) return Deadline::max();
  if (us < 0) return std::chrono::steady_clock::now();
  return std::chrono::steady_clock::now() + std::chrono::microseconds(us);
}

// A sleep of at most `ms` (<= 0: unbounded) cut to end at `until`: at
// least 1 ms while `until` lies ahead (a 0 would spin), `ms` when never.
inline int sleep_ms_until(Deadline until, int ms) {
  if (until == Deadline::max()) return ms;
  auto left =
      std::chrono::ceil<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
  int to_deadline = static_cast<int>(std::clamp<int64_t>(left.count(), 1, INT32_MAX));
  return ms > 0 ? std::min(ms, to_deadline) : to_deadline;
}

}  // namespace ss
