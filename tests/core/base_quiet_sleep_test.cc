// QuietSleep (core/base/signal_depth.h): the preloads' marks are taken
// only around a sleep that asked for them, and Kick::sleep takes them
// with the owner's lock released, so a handler served over the mark finds
// the lock free.
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <mutex>

#include "core/base/kick.h"
#include "core/base/signal_depth.h"

namespace ss {
namespace {

int g_entered = 0, g_left = 0;
bool g_lock_free_at_enter = false;
std::mutex* g_owner_lock = nullptr;

void count_enter() {
  g_entered++;
  if (g_owner_lock && g_owner_lock->try_lock()) {
    g_lock_free_at_enter = true;
    g_owner_lock->unlock();
  }
}
void count_leave() { g_left++; }

class QuietSleepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_entered = g_left = 0;
    g_lock_free_at_enter = false;
    set_quiet_sleep_hooks(count_enter, count_leave);
  }
  void TearDown() override {
    set_quiet_sleep_hooks(nullptr, nullptr);
    g_owner_lock = nullptr;
  }
};

TEST_F(QuietSleepTest, MarksOnlyWhenAsked) {
  { const QuietSleep off(false); }
  EXPECT_EQ(g_entered, 0);
  {
    const QuietSleep on(true);
    EXPECT_EQ(g_entered, 1);
    EXPECT_EQ(g_left, 0);
  }
  EXPECT_EQ(g_left, 1);
}

TEST_F(QuietSleepTest, NothingWithoutHooks) {
  set_quiet_sleep_hooks(nullptr, nullptr);
  { const QuietSleep on(true); }
  EXPECT_EQ(g_entered + g_left, 0);
}

TEST_F(QuietSleepTest, AKickSleepMarksWithTheOwnersLockReleased) {
  std::mutex mu;
  g_owner_lock = &mu;
  Kick kick;
  const int ev = eventfd(1, EFD_CLOEXEC);  // readable: the sleep returns at once
  ASSERT_GE(ev, 0);
  std::unique_lock<std::mutex> lk(mu);
  EXPECT_EQ(kick.sleep(lk, {ev, POLLIN, 0}, 1000, /*quiet=*/true), 0);
  EXPECT_TRUE(lk.owns_lock());
  EXPECT_EQ(g_entered, 1);
  EXPECT_EQ(g_left, 1);
  EXPECT_TRUE(g_lock_free_at_enter);
  EXPECT_EQ(kick.sleep(lk, {ev, POLLIN, 0}, 1000), 0);  // not asked: no mark
  EXPECT_EQ(g_entered, 1);
  close(ev);
}

}  // namespace
}  // namespace ss
