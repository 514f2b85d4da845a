// SpinLimit: a spin ends once its thread was preempted (and the thread's
// next spins are skipped for a while), and when more threads spin than
// the process has cores. Time is handed in: no clock is read.
#include "core/base/spin_phase.h"

#include <gtest/gtest.h>

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

TEST(SpinLimit, APreemptedSpinEndsAndTheNextSleepsForAWhile) {
  on_new_thread([] {
    const clock::time_point t0{milliseconds(1000)};
    {
      SpinLimit s;
      EXPECT_TRUE(s.go_on(t0));
      EXPECT_FALSE(s.go_on(t0 + SpinLimit::kPreempted + microseconds(1)));
      EXPECT_FALSE(s.go_on(t0 + SpinLimit::kPreempted + microseconds(2)));  // for good
    }
    {
      SpinLimit s;  // the thread's next wait, soon after: no spin
      EXPECT_FALSE(s.go_on(t0 + milliseconds(5)));
    }
    {
      SpinLimit s;  // long after: spins again, and a clean end starts the backoff over
      EXPECT_TRUE(s.go_on(t0 + milliseconds(2000)));
      EXPECT_TRUE(s.go_on(t0 + milliseconds(2000) + microseconds(10)));
    }
    SpinLimit s;
    EXPECT_TRUE(s.go_on(t0 + milliseconds(2001)));
  });
}

TEST(SpinLimit, NoMoreSpinnersThanCores) {
  on_new_thread([] {
    const clock::time_point t{milliseconds(1000)};
    std::vector<std::unique_ptr<SpinLimit>> spinners;
    for (int i = 0; i < process_cores(); i++) {
      spinners.push_back(std::make_unique<SpinLimit>());
      EXPECT_TRUE(spinners.back()->go_on(t)) << i;
    }
    SpinLimit one_too_many;
    EXPECT_FALSE(one_too_many.go_on(t));
    spinners.pop_back();  // a spinner left: room for one
    SpinLimit next;
    EXPECT_TRUE(next.go_on(t));
  });
}

}  // namespace
}  // namespace ss
