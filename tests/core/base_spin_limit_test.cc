// SpinLimit: a spin ends once its thread was preempted (and the thread's
// next spins are skipped for a while), and when more threads would spin
// than spinners_allowed().
#include "core/base/spin_phase.h"

#include <gtest/gtest.h>

#include <sched.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace ss {
namespace {

using clock = SpinLimit::clock;
using std::chrono::microseconds;
using std::chrono::milliseconds;

// Each test runs on a thread of its own: the backoff is per thread.
template <class F>
void on_new_thread(F f) {
  std::thread t(f);
  t.join();
}

TEST(SpinLimit, GoesOnWhileLooksFollowEachOther) {
  on_new_thread([] {
    SpinLimit s;
    clock::time_point t{milliseconds(1000)};
    for (int i = 0; i < 1000; i++, t += microseconds(5)) EXPECT_TRUE(s.go_on(t));
  });
}

// A long look without a switch (a slow scan) goes on; a spin whose thread
// another busy thread on its core preempts ends, and the thread's next
// wait soon after does not spin.
TEST(SpinLimit, APreemptedSpinEndsAndTheNextSleepsForAWhile) {
  on_new_thread([] {
    const clock::time_point t0 = clock::now();
    {
      SpinLimit s;
      EXPECT_TRUE(s.go_on(t0));
      EXPECT_TRUE(s.go_on(t0 + SpinLimit::kPreempted + microseconds(1)));
    }
    // This thread and a hog on one core: the scheduler preempts one.
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    std::atomic<bool> stop{false};
    std::thread hog([&] {
      sched_setaffinity(0, sizeof one, &one);
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
    bool ended = false;
    clock::time_point when;
    {
      SpinLimit s;
      const clock::time_point give_up = clock::now() + std::chrono::seconds(10);  // a failsafe
      while (!ended && (when = clock::now()) < give_up) ended = !s.go_on(when);
    }
    stop = true;
    hog.join();
    ASSERT_TRUE(ended) << "never preempted";
    SpinLimit next;  // the thread's next wait, soon after: no spin
    EXPECT_FALSE(next.go_on(when + milliseconds(5)));
    SpinLimit later;  // long after: spins again
    EXPECT_TRUE(later.go_on(when + std::chrono::seconds(5)));
  });
}

// A process on every core leaves one to the rest; one pinned to some
// spins on all of them (a program pinned to one core spins there).
TEST(SpinLimit, AllowedSpinnersLeaveOneCoreToTheRest) {
  EXPECT_EQ(spinners_allowed(2, 2), 1);
  EXPECT_EQ(spinners_allowed(8, 8), 7);
  EXPECT_EQ(spinners_allowed(1, 1), 0);
  EXPECT_EQ(spinners_allowed(1, 2), 1);
  EXPECT_EQ(spinners_allowed(4, 8), 4);
}

TEST(SpinLimit, AtMostTheAllowedSpin) {
  on_new_thread([] {
    const clock::time_point t{milliseconds(1000)};
    std::vector<std::unique_ptr<SpinLimit>> spinners;
    for (int i = 0; i < spinners_allowed(); i++) {
      spinners.push_back(std::make_unique<SpinLimit>());
      EXPECT_TRUE(spinners.back()->go_on(t)) << i;
    }
    SpinLimit one_too_many;
    EXPECT_FALSE(one_too_many.go_on(t));
    if (spinners.empty()) return;  // nobody may spin
    spinners.pop_back();           // a spinner left: room for one
    SpinLimit next;
    EXPECT_TRUE(next.go_on(t));
  });
}

}  // namespace
}  // namespace ss
