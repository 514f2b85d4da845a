// The TCP timer queue (core/net/tcp/timer_queue.*): timers fire earliest
// first at their exact microsecond, re-arming moves them either way,
// cancelling removes them; and a long random run of arms, re-arms,
// cancels and pops against a plain reference.
#include <map>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/net/tcp/timer_queue.h"

namespace ss::net::tcp {
namespace {

TEST(NetTcpTimerQueue, FiresEarliestFirstAtItsMicrosecond) {
  TimerQueue q;
  Timer a, b, c;
  EXPECT_EQ(q.next_due(), UINT64_MAX);
  q.arm(&a, 300);
  q.arm(&b, 100);
  q.arm(&c, 200);
  EXPECT_EQ(q.next_due(), 100u);
  EXPECT_EQ(q.pop_due(99), nullptr);
  EXPECT_EQ(q.pop_due(100), &b);
  EXPECT_FALSE(b.armed());
  EXPECT_EQ(q.pop_due(250), &c);
  EXPECT_EQ(q.pop_due(250), nullptr);
  EXPECT_EQ(q.pop_due(1000), &a);
  EXPECT_EQ(q.size(), 0u);
}

TEST(NetTcpTimerQueue, ReArmMovesEitherWayCancelRemoves) {
  TimerQueue q;
  Timer a, b, c;
  q.arm(&a, 100);
  q.arm(&b, 200);
  q.arm(&c, 300);
  q.arm(&a, 400);  // later: b first now
  EXPECT_EQ(q.next_due(), 200u);
  q.arm(&c, 50);  // earlier
  EXPECT_EQ(q.next_due(), 50u);
  EXPECT_EQ(q.size(), 3u);
  q.cancel(&c);
  q.cancel(&c);  // twice: nothing
  EXPECT_FALSE(c.armed());
  EXPECT_EQ(q.next_due(), 200u);
  EXPECT_EQ(q.pop_due(UINT64_MAX - 1), &b);
  EXPECT_EQ(q.pop_due(UINT64_MAX - 1), &a);
  EXPECT_EQ(q.size(), 0u);
}

TEST(NetTcpTimerQueue, RandomRunMatchesAReference) {
  std::mt19937_64 rng(31);
  constexpr int kTimers = 200;
  std::vector<Timer> t(kTimers);
  std::map<int, uint64_t> ref;  // armed timers by index: their deadline
  TimerQueue q;
  uint64_t now = 0;
  for (int step = 0; step < 100000; step++) {
    const int i = static_cast<int>(rng() % kTimers);
    switch (rng() % 4) {
      case 0:
      case 1: {
        const uint64_t due = now + rng() % 5000;
        q.arm(&t[i], due);
        ref[i] = due;
        break;
      }
      case 2:
        q.cancel(&t[i]);
        ref.erase(i);
        break;
      default: {
        now += rng() % 300;
        while (Timer* f = q.pop_due(now)) {
          const int k = static_cast<int>(f - t.data());
          ASSERT_TRUE(ref.count(k)) << "fired a timer not armed";
          ASSERT_LE(ref[k], now);
          for (const auto& [j, due] : ref) ASSERT_GE(due, ref[k]) << "not the earliest";
          ref.erase(k);
        }
        for (const auto& [j, due] : ref) ASSERT_GT(due, now) << "left a due timer";
      }
    }
    ASSERT_EQ(q.size(), ref.size());
    uint64_t earliest = UINT64_MAX;
    for (const auto& [j, due] : ref) earliest = std::min(earliest, due);
    ASSERT_EQ(q.next_due(), earliest);
  }
  for (auto& x : t) q.cancel(&x);
}

}  // namespace
}  // namespace ss::net::tcp
