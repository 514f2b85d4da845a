// descriptor_shortage: counts the free descriptor numbers below
// RLIMIT_NOFILE, and makes no descriptor while it looks: another thread's
// eventfd near the limit never fails because of the probe. The reserve:
// what a failed step gave back stays taken from the program, and makes
// room for the next step; a number released while none other is free
// stays taken.
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/base/fd_spare.h"

namespace ss {
namespace {

// A low RLIMIT_NOFILE with every number below it taken but `free_left`;
// restored at the end.
class FdSpareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &old_));
    rlimit low = old_;
    low.rlim_cur = std::min<rlim_t>(old_.rlim_cur, 512);
    ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &low));
    lowered_ = true;
    base_ = eventfd(0, EFD_CLOEXEC);
    ASSERT_GE(base_, 0);
    for (int fd; (fd = fcntl(base_, F_DUPFD_CLOEXEC, 0)) >= 0;) used_.push_back(fd);
    ASSERT_EQ(EMFILE, errno) << "could not use up the descriptor numbers";
  }
  void TearDown() override {
    for (int fd : used_) ::close(fd);
    if (base_ >= 0) ::close(base_);
    if (lowered_) setrlimit(RLIMIT_NOFILE, &old_);
  }
  void leave_free(size_t n) {
    for (size_t i = 0; i < n && !used_.empty(); i++) {
      ::close(used_.back());
      used_.pop_back();
    }
  }

  // How many of `n` eventfds could be made (kept, closed at the end).
  int made(int n) {
    for (int i = 0; i < n; i++) {
      int fd = eventfd(0, EFD_CLOEXEC);
      if (fd < 0) return i;
      used_.push_back(fd);
    }
    return n;
  }
  // The reserve's file made (here, or by an earlier test: it stays), and
  // every number but `n` taken again.
  void prepared_with_free(size_t n) {
    leave_free(2);
    reserve_prepare();
    for (int fd; (fd = eventfd(0, EFD_CLOEXEC)) >= 0;) used_.push_back(fd);
    leave_free(n);
  }

  rlimit old_{};
  bool lowered_ = false;
  int base_ = -1;
  std::vector<int> used_;
};

TEST_F(FdSpareTest, CountsFreeNumbersBelowTheLimit) {
  EXPECT_EQ(-EMFILE, descriptor_shortage(1));
  leave_free(3);
  EXPECT_EQ(0, descriptor_shortage(1));
  EXPECT_EQ(0, descriptor_shortage(3));
  EXPECT_EQ(-EMFILE, descriptor_shortage(4));
}

// One number free: a thread probing for five (the verbs listener's
// question per request) while another makes and closes eventfds. A probe
// that made descriptors would take that number now and then.
TEST_F(FdSpareTest, ProbeTakesNoDescriptorFromAnotherThread) {
  leave_free(1);
  constexpr int kMakes = 20000;
  std::atomic<bool> probing{false}, done{false};
  std::atomic<int> wrong_answers{0}, probes{0};
  std::thread prober([&] {
    while (!done.load()) {
      if (descriptor_shortage(5) != -EMFILE) wrong_answers++;
      probes++;
      probing = true;
    }
  });
  while (!probing.load()) std::this_thread::yield();
  int emfile = 0;
  for (int i = 0; i < kMakes; i++) {
    int fd = eventfd(0, EFD_CLOEXEC);
    if (fd >= 0)
      ::close(fd);
    else if (errno == EMFILE)
      emfile++;
  }
  done = true;
  prober.join();
  EXPECT_EQ(0, emfile) << "eventfd failed with EMFILE while another thread probed " << probes.load()
                       << " times";
  EXPECT_EQ(0, wrong_answers.load());
}

// A step made 3 descriptors and failed (the program took the rest):
// its clean-up's numbers go to the reserve, so the program's own call
// still fails; the next step's probe counts them and gets them back,
// and a finished step's leftovers are taken again.
TEST_F(FdSpareTest, AFailedStepsNumbersStayTakenUntilTheNextStep) {
  leave_free(3);
  reserve_free();
  EXPECT_LT(eventfd(0, EFD_CLOEXEC), 0) << "a number the failed step gave back was free";
  EXPECT_EQ(EMFILE, errno);
  EXPECT_EQ(-EMFILE, descriptor_shortage(3)) << "a probe without the reserve counted it";
  EXPECT_EQ(0, descriptor_shortage(3, true)) << "the reserve's numbers are the next step's room";
  int made = eventfd(0, EFD_CLOEXEC);  // the step makes one of three, then finishes
  ASSERT_GE(made, 0);
  used_.push_back(made);
  reserve_again();
  EXPECT_LT(eventfd(0, EFD_CLOEXEC), 0) << "the step's leftover room went to the program";
  EXPECT_EQ(-EMFILE, descriptor_shortage(3, true));
  EXPECT_EQ(0, descriptor_shortage(2, true));  // the two kept, given back
  reserve_again();
}

// The program made room (more numbers free than the reserve takes): the
// reserve holds none of them.
TEST_F(FdSpareTest, NoReserveOnceTheProgramMadeRoom) {
  leave_free(kReserveMost + 1);
  reserve_free();
  EXPECT_EQ(kReserveMost + 1, made(kReserveMost + 1)) << "numbers taken by the reserve";
}

// A program that closes every descriptor (a daemon) and reuses a
// reserve's number: giving the reserve back leaves its file open.
TEST_F(FdSpareTest, AReusedReserveNumberStaysTheProgramsOwn) {
  leave_free(2);
  reserve_free();
  int reused = -1;
  for (int fd = 0; fd < 512 && reused < 0; fd++) {
    char path[64], target[128] = {};
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    if (readlink(path, target, sizeof target - 1) <= 0 || !strstr(target, "slipstream-reserve"))
      continue;
    ::close(fd);  // one of the reserve's, closed by the program
    reused = eventfd(0, EFD_CLOEXEC);
    ASSERT_EQ(fd, reused);
  }
  ASSERT_GE(reused, 0) << "no number in the reserve";
  used_.push_back(reused);
  EXPECT_EQ(0, descriptor_shortage(2, true));  // gives the reserve back
  EXPECT_GE(fcntl(reused, F_GETFD), 0) << "the program's reused number was closed";
}

// A probe the step never settled (it ended some other way) is settled by
// the next probe: a step that needed no reserve takes nothing after it.
TEST_F(FdSpareTest, ALaterProbeWithRoomSettlesAnUnsettledOne) {
  leave_free(2);
  reserve_free();
  ASSERT_EQ(0, descriptor_shortage(2, true));  // gave 2, never taken back
  ASSERT_EQ(0, descriptor_shortage(1, true));  // a step with room of its own
  reserve_again();
  int fd = eventfd(0, EFD_CLOEXEC);
  EXPECT_GE(fd, 0) << "a step that needed no reserve took the program's numbers";
  if (fd >= 0) used_.push_back(fd);
}

// The reserve holds numbers; the program closes many of its own: the
// next probe ends the reserve, its numbers the program's again.
TEST_F(FdSpareTest, TheReserveEndsOnceTheProgramMadeRoom) {
  leave_free(3);
  reserve_free();
  leave_free(kReserveMost + 1);
  ASSERT_EQ(0, descriptor_shortage(1, true));
  EXPECT_EQ(kReserveMost + 4, made(kReserveMost + 4)) << "numbers still in the reserve";
}

// A step that began with room (its probe found more than it needs)
// closes its descriptor just after the program took the rest: the number
// stays taken, and the next probe with room gives it back.
TEST_F(FdSpareTest, AStepsNumberReleasedWithNoOtherFreeStaysTaken) {
  prepared_with_free(2);
  ASSERT_EQ(0, descriptor_shortage(1, true));
  const int step = eventfd(0, EFD_CLOEXEC);
  ASSERT_GE(step, 0);
  ASSERT_EQ(1, made(1));  // the program takes the last number
  release_number(step);
  EXPECT_LT(eventfd(0, EFD_CLOEXEC), 0) << "the released number went to the program";
  EXPECT_EQ(EMFILE, errno);
  reserve_again();
  leave_free(kReserveMost + 1);
  ASSERT_EQ(0, descriptor_shortage(1, true));  // room: the reserve ends
  reserve_again();
  EXPECT_EQ(kReserveMost + 2, made(kReserveMost + 2)) << "numbers still kept";
}

// The step's own descriptor took the last number (it began with just
// the room it needs), or the close is no step's: a close, the number the
// program's again.
TEST_F(FdSpareTest, ANumberTheProgramNeverTookIsClosed) {
  prepared_with_free(1);
  ASSERT_EQ(0, descriptor_shortage(1, true));
  int step = eventfd(0, EFD_CLOEXEC);
  ASSERT_GE(step, 0);
  release_number(step);
  reserve_again();
  EXPECT_EQ(1, made(1)) << "a step that filled the table itself kept its number";
  leave_free(1);
  step = eventfd(0, EFD_CLOEXEC);  // outside a step: a connect's memfd
  ASSERT_GE(step, 0);
  release_number(step);
  EXPECT_EQ(1, made(1)) << "a close outside a step kept its number";
}

// A listener's end gives the program back what the reserve kept.
TEST_F(FdSpareTest, AListenersEndEndsTheReserve) {
  prepared_with_free(3);
  reserve_free();
  EXPECT_LT(eventfd(0, EFD_CLOEXEC), 0) << "the reserve took nothing";
  reserve_end();
  EXPECT_EQ(3, made(3)) << "numbers still kept after the listener's end";
}

// With another number free the program is not out: the number is
// closed, free at once.
TEST_F(FdSpareTest, ANumberReleasedBesideAFreeOneIsClosed) {
  prepared_with_free(3);
  ASSERT_EQ(0, descriptor_shortage(1, true));
  const int step = eventfd(0, EFD_CLOEXEC);
  ASSERT_GE(step, 0);
  release_number(step);
  reserve_again();
  EXPECT_EQ(3, made(3)) << "numbers kept though the program had room";
}

}  // namespace
}  // namespace ss
