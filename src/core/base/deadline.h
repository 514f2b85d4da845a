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

// A wait's timeout in ms (< 0: none) as its end, and what is left of it
// (-1: none; 0 once passed), so a wait that goes round again does not
// start its timeout over.
inline Deadline deadline_after_ms(int timeout) {
  if (timeout < 0) return Deadline::max();
  return std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout);
}
inline int ms_left(Deadline until) {
  if (until == Deadline::max()) return -1;
  auto left =
      std::chrono::ceil<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT32_MAX));
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

// The shorter of two sleeps in ms (< 0: unbounded).
inline int shorter_sleep_ms(int a, int b) { return a < 0 ? b : b < 0 ? a : std::min(a, b); }

// How long a sleep goes at most without the wake-up it lacks (out of
// descriptors for a kick or a wait set, or a kernel object that is only
// looked at): what that wake-up would have said is seen this late.
constexpr int kUnwokenSleepMs = 10;
// `*sleep_ms` (< 0: unbounded) cut to `most` ms.
inline void cut_sleep_ms(int* sleep_ms, int most = kUnwokenSleepMs) {
  *sleep_ms = shorter_sleep_ms(*sleep_ms, most);
}

}  // namespace ss
