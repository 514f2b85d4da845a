// descriptor_shortage: counts the free descriptor numbers below
// RLIMIT_NOFILE, and makes no descriptor while it looks: another thread's
// eventfd near the limit never fails because of the probe.
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
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

}  // namespace
}  // namespace ss
