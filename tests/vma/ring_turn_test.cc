// RingTurn: the vma-tcp thread reads a netdev's rings only while the
// program neither looks at them nor sleeps on them, and is woken by a
// program sleep it parked for, once; while the program keeps looking the
// thread looks again less and less often.
#include "vma_preload/ring_turn.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

namespace ss::vma::preload {
namespace {

using Reader = RingTurn::Reader;

TEST(RingTurn, TheThreadReadsOnceTheProgramStopsLooking) {
  RingTurn t;
  uint64_t seen = UINT64_MAX;  // the thread's first look: the program may be looking
  EXPECT_EQ(t.reader(&seen), Reader::kProgramLooks);
  EXPECT_EQ(t.reader(&seen), Reader::kService);
  t.program_looked();
  EXPECT_EQ(t.reader(&seen), Reader::kProgramLooks);
  EXPECT_EQ(t.reader(&seen), Reader::kService);
}

TEST(RingTurn, AProgramThatKeepsLookingSeesTheThreadSeldom) {
  RingTurn t;
  uint64_t seen = UINT64_MAX;
  int waits[6];
  for (int& w : waits) {
    t.program_looked();
    ASSERT_EQ(t.reader(&seen), Reader::kProgramLooks);
    w = t.look_again_ms();
  }
  EXPECT_EQ(waits[0], RingTurn::kLookAgainMs);
  for (int i = 1; i < 6; i++)
    EXPECT_EQ(waits[i], std::min(waits[i - 1] * 2, RingTurn::kLookAgainMaxMs));
  EXPECT_EQ(waits[5], RingTurn::kLookAgainMaxMs);
  // Once the program stopped looking, its next looks are seen soon again.
  EXPECT_EQ(t.reader(&seen), Reader::kService);
  t.program_looked();
  ASSERT_EQ(t.reader(&seen), Reader::kProgramLooks);
  EXPECT_EQ(t.look_again_ms(), RingTurn::kLookAgainMs);
}

TEST(RingTurn, ASleepTheThreadParkedForWakesItOnce) {
  RingTurn t;
  uint64_t seen = UINT64_MAX;
  t.reader(&seen);
  t.enter_sleep();
  EXPECT_EQ(t.reader(&seen), Reader::kProgramSleeps);
  EXPECT_TRUE(t.leave_sleep());
  // Back from the sleep: the program looked.
  EXPECT_EQ(t.reader(&seen), Reader::kProgramLooks);
  EXPECT_EQ(t.reader(&seen), Reader::kService);
}

TEST(RingTurn, ShortSleepsBetweenLooksWakeNobody) {
  RingTurn t;
  uint64_t seen = UINT64_MAX;
  t.reader(&seen);
  t.enter_sleep();
  EXPECT_FALSE(t.leave_sleep());  // the thread did not park for it
  t.enter_sleep();
  // Asleep now, but it woke since the thread's last look: a look soon, no park.
  EXPECT_EQ(t.reader(&seen), Reader::kProgramLooks);
  EXPECT_FALSE(t.leave_sleep());
}

TEST(RingTurn, OnlyTheLastSleeperWakesTheThread) {
  RingTurn t;
  uint64_t seen = UINT64_MAX;
  t.reader(&seen);
  t.enter_sleep();
  t.enter_sleep();
  EXPECT_EQ(t.reader(&seen), Reader::kProgramSleeps);
  EXPECT_FALSE(t.leave_sleep());  // another thread still sleeps on the rings
  EXPECT_TRUE(t.leave_sleep());
}

int g_wakes = 0;
void count_wake() { g_wakes++; }

// A sleep as a scope: its end wakes the parked thread, however it ends.
TEST(RingTurn, ASleepScopeLeavesAtItsEnd) {
  RingTurn t;
  uint64_t seen = UINT64_MAX;
  t.reader(&seen);
  g_wakes = 0;
  {
    const RingTurn::Sleep asleep(t, count_wake);
    EXPECT_EQ(t.reader(&seen), Reader::kProgramSleeps);
  }
  EXPECT_EQ(g_wakes, 1);
  EXPECT_EQ(t.reader(&seen), Reader::kProgramLooks);
}

}  // namespace
}  // namespace ss::vma::preload
