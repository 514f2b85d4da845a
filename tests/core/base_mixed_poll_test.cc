// poll_mixed and select_mixed over fake Pollables (wait_helpers.h) and
// kernel descriptors (a pipe, an eventfd).
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/base/call_mask.h"
#include "core/base/fd_table.h"
#include "core/base/mixed_poll.h"
#include "tests/core/wait_helpers.h"

namespace ss {
namespace {

using testing::FakePollable;

using testing::kLongMs;
using testing::kSleepAtOnce;

class MixedPollTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(pipe2(pipe_, O_CLOEXEC | O_NONBLOCK), 0);
    efd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ASSERT_GE(efd_, 0);
  }
  void TearDown() override {
    ::close(pipe_[0]);
    ::close(pipe_[1]);
    ::close(efd_);
  }
  int add(std::shared_ptr<FakePollable>* out, FdKind kind = FdKind::kRspreloadTcp) {
    return fakes_.add(out, kind);
  }
  int poll(pollfd* fds, nfds_t n, int timeout, const PollTiming& t = kSleepAtOnce) {
    return poll_mixed(fds, n, timeout, t, fakes_.table);
  }
  void put_pipe() { ASSERT_EQ(::write(pipe_[1], "x", 1), 1); }

  testing::PollableTable fakes_;
  int pipe_[2] = {-1, -1};
  int efd_ = -1;
};

TEST_F(MixedPollTest, ReadinessComesFromTheObject) {
  std::shared_ptr<FakePollable> a, b;
  int fa = add(&a), fb = add(&b);
  a->set_ready(POLLIN | POLLOUT);
  pollfd fds[] = {
      {fa, POLLIN, 0}, {fb, POLLIN | POLLOUT, 0}, {pipe_[0], POLLIN, 0}, {-1, POLLIN, 0}};
  EXPECT_EQ(poll(fds, 4, 0), 1);
  EXPECT_EQ(fds[0].revents, POLLIN);  // only what was asked
  EXPECT_EQ(fds[1].revents, 0);       // /dev/null would say ready: never asked
  EXPECT_EQ(fds[2].revents, 0);
  EXPECT_EQ(fds[3].revents, 0);
  b->set_ready(POLLHUP);  // reported unasked, as poll(2)
  fds[1].events = POLLOUT;
  EXPECT_EQ(poll(fds, 4, 0), 2);
  EXPECT_EQ(fds[1].revents, POLLHUP);
}

TEST_F(MixedPollTest, AnyKindOfEntryIsAskedAsPollable) {
  std::shared_ptr<FakePollable> a;
  int fa = add(&a, FdKind::kRsocket);
  a->set_ready(POLLIN);
  pollfd f{fa, POLLIN, 0};
  EXPECT_EQ(poll(&f, 1, 0), 1);
  EXPECT_GT(a->scans, 0);
}

TEST_F(MixedPollTest, KernelDescriptorsMixedIn) {
  std::shared_ptr<FakePollable> a;
  int fa = add(&a);
  put_pipe();
  uint64_t one = 1;
  ASSERT_EQ(::write(efd_, &one, sizeof one), 8);
  pollfd fds[] = {
      {fa, POLLIN, 0}, {pipe_[0], POLLIN, 0}, {efd_, POLLIN, 0}, {pipe_[1], POLLOUT, 0}};
  EXPECT_EQ(poll(fds, 4, -1), 3);
  EXPECT_EQ(fds[0].revents, 0);
  EXPECT_EQ(fds[1].revents, POLLIN);
  EXPECT_EQ(fds[2].revents, POLLIN);
  EXPECT_EQ(fds[3].revents, POLLOUT);
  // A descriptor that is not open: POLLNVAL, as poll(2).
  int closed = dup(0);
  ::close(closed);
  pollfd bad{closed, POLLIN, 0};
  EXPECT_EQ(poll(&bad, 1, 0), 1);
  EXPECT_EQ(bad.revents, POLLNVAL);
}

// PollTiming::os_first false (libvma's VMA_SELECT_SKIP_OS): the kernel
// descriptors wait for a later pass, and a sleep always looks at them after.
TEST_F(MixedPollTest, KernelDescriptorsSkippedOnTheFirstPassWhenAsked) {
  std::shared_ptr<FakePollable> a;
  int fa = add(&a);
  a->set_ready(POLLIN);
  put_pipe();
  pollfd fds[] = {{fa, POLLIN, 0}, {pipe_[0], POLLIN, 0}};
  PollTiming skip = kSleepAtOnce;
  skip.os_first = false;
  skip.os_ratio = 0;
  EXPECT_EQ(poll(fds, 2, 0, skip), 1);
  EXPECT_EQ(fds[1].revents, 0);
  EXPECT_EQ(poll(fds, 2, 0), 2);  // the default looks every pass
  EXPECT_EQ(fds[1].revents, POLLIN);
  a->set_ready(0);  // nothing else: the sleep finds the pipe, the look after it reports it
  EXPECT_EQ(poll(fds, 2, kLongMs, skip), 1);
  EXPECT_EQ(fds[1].revents, POLLIN);
}

TEST(PollTimingTest, LooksAtOsByPass) {
  PollTiming t;
  EXPECT_TRUE(looks_at_os(t, 0, false));
  EXPECT_TRUE(looks_at_os(t, 5, false));
  t.os_first = false;
  t.os_ratio = 3;
  EXPECT_FALSE(looks_at_os(t, 0, false));
  EXPECT_FALSE(looks_at_os(t, 1, false));
  EXPECT_TRUE(looks_at_os(t, 3, false));
  EXPECT_TRUE(looks_at_os(t, 4, true));  // the first pass after a sleep
  t.os_ratio = 0;
  EXPECT_FALSE(looks_at_os(t, 3, false));
  EXPECT_TRUE(looks_at_os(t, 3, true));
}

TEST_F(MixedPollTest, TimeoutReturnsZeroAndLeavesNoWaiter) {
  std::shared_ptr<FakePollable> a, b;
  int fa = add(&a), fb = add(&b);
  pollfd fds[] = {{fa, POLLIN, 0}, {fb, POLLOUT, 0}, {pipe_[0], POLLIN, 0}};
  EXPECT_EQ(poll(fds, 3, 20), 0);
  EXPECT_GT(a->armed, 0);
  EXPECT_EQ(a->armed, a->disarmed);
  EXPECT_EQ(b->armed, b->disarmed);
  a->set_ready(POLLIN);  // a waiter still counted would make the kick readable
  EXPECT_FALSE(a->kick_readable());
  EXPECT_EQ(poll(fds, 3, 0), 1);
}

TEST_F(MixedPollTest, SleeperWokenByAnotherThreadsKick) {
  std::shared_ptr<FakePollable> a, b;
  int fa = add(&a), fb = add(&b);
  std::thread t([&] {
    while (b->armed == 0) std::this_thread::yield();
    b->set_ready(POLLOUT);  // after arming: only the kick can wake the sleeper
  });
  pollfd fds[] = {{fa, POLLIN, 0}, {fb, POLLOUT, 0}, {pipe_[0], POLLIN, 0}};
  int n = poll(fds, 3, kLongMs);
  t.join();
  EXPECT_EQ(n, 1);
  EXPECT_EQ(fds[1].revents, POLLOUT);
  EXPECT_EQ(b->armed, b->disarmed);
  EXPECT_FALSE(b->kick_readable());  // drained by the waiter that saw it
}

TEST_F(MixedPollTest, SleeperWokenByTheObjectsOwnEvent) {
  std::shared_ptr<FakePollable> a;
  int fa = add(&a);
  std::thread t([&] {
    while (a->armed == 0) std::this_thread::yield();
    a->signal_source(POLLIN);  // no kick: the provider's event fd
  });
  pollfd f{fa, POLLIN, 0};
  int n = poll(&f, 1, kLongMs);
  t.join();
  EXPECT_EQ(n, 1);
  EXPECT_EQ(f.revents, POLLIN);
}

TEST_F(MixedPollTest, SleeperWokenByAKernelDescriptor) {
  std::shared_ptr<FakePollable> a;
  int fa = add(&a);
  std::thread t([&] {
    while (a->armed == 0) std::this_thread::yield();
    uint64_t one = 1;
    if (::write(efd_, &one, sizeof one) != 8) abort();
  });
  pollfd fds[] = {{fa, POLLIN, 0}, {efd_, POLLIN, 0}};
  int n = poll(fds, 2, kLongMs);
  t.join();
  EXPECT_EQ(n, 1);
  EXPECT_EQ(fds[1].revents, POLLIN);
}

TEST_F(MixedPollTest, ReadyWhileArmingMeansNoSleep) {
  // Ready between the scan and the arming (no kick was sent: the caller
  // was no waiter yet): the poll looks again instead of sleeping.
  std::shared_ptr<FakePollable> a, b;
  int fa = add(&a), fb = add(&b);
  b->ready_at_next_arm(POLLIN);
  pollfd fds[] = {{fa, POLLIN, 0}, {fb, POLLIN, 0}};
  EXPECT_EQ(poll(fds, 2, -1), 1);  // would sleep forever otherwise
  EXPECT_EQ(fds[1].revents, POLLIN);
  EXPECT_EQ(a->armed, a->disarmed);  // armed before b turned out ready
}

TEST_F(MixedPollTest, AnObjectsDeadlineCutsTheSleep) {
  std::shared_ptr<FakePollable> a;
  int fa = add(&a);
  a->set_sleep_cut(1);
  std::thread t([&] {
    while (a->armed == 0) std::this_thread::yield();
    a->set_ready_silently(POLLIN);  // nobody wakes the sleeper: its deadline does
  });
  pollfd f{fa, POLLIN, 0};
  int n = poll(&f, 1, kLongMs);
  t.join();
  EXPECT_EQ(n, 1);
}

TEST_F(MixedPollTest, WakeUpIntervalBoundsEachSleep) {
  std::shared_ptr<FakePollable> a;
  int fa = add(&a);
  std::thread t([&] {
    while (a->armed == 0) std::this_thread::yield();
    a->set_ready_silently(POLLIN);
  });
  pollfd f{fa, POLLIN, 0};
  int n = poll(&f, 1, kLongMs, {std::chrono::microseconds(0), 1});
  t.join();
  EXPECT_EQ(n, 1);
}

TEST_F(MixedPollTest, TimeOnlyObjectSleepsOnTheRest) {
  std::shared_ptr<FakePollable> a;
  int fa = add(&a);
  a->set_time_only(true);
  pollfd fds[] = {{fa, POLLIN, 0}, {pipe_[0], POLLIN, 0}};
  EXPECT_EQ(poll(fds, 2, 10), 0);
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    put_pipe();
  });
  int n = poll(fds, 2, kLongMs);
  t.join();
  EXPECT_EQ(n, 1);
  EXPECT_EQ(fds[1].revents, POLLIN);
}

TEST_F(MixedPollTest, BusyPhaseFindsReadinessWithoutSleeping) {
  std::shared_ptr<FakePollable> a;
  int fa = add(&a);
  std::thread t([&] {
    while (a->scans < 3) std::this_thread::yield();
    a->set_ready_silently(POLLIN);
  });
  pollfd f{fa, POLLIN, 0};
  // A busy phase far longer than the test: readiness is seen by a scan.
  int n = poll(&f, 1, kLongMs, {std::chrono::microseconds(kLongMs * 1000LL), 0});
  t.join();
  EXPECT_EQ(n, 1);
  EXPECT_EQ(a->armed, 0);
}

// PollTiming::handlers_ran (the VMA preload's count of handlers that ran):
// a move during the busy phase ends the call with EINTR, unslept.
std::atomic<uint64_t> g_handlers{0};
uint64_t handlers_now() { return g_handlers.load(); }

TEST_F(MixedPollTest, HandlerInTheBusyPhaseGivesEintr) {
  std::shared_ptr<FakePollable> a;
  int fa = add(&a);
  std::thread t([&] {
    while (a->scans < 3) std::this_thread::yield();
    g_handlers++;
  });
  pollfd f{fa, POLLIN, 0};
  PollTiming spin{std::chrono::microseconds(kLongMs * 1000LL), 0};
  spin.handlers_ran = handlers_now;
  int n = poll(&f, 1, -1, spin);
  t.join();
  EXPECT_EQ(n, -EINTR);
  EXPECT_EQ(a->armed, 0);
}

// A call's signal mask (ppoll's: CallMask): a signal it lets in, pending
// before the call, ends it; so does one sent once it has armed (caught in
// the busy phase's count, or held to the sleep, whose ppoll lets it in);
// and one pending when the wait counts no handlers.
TEST_F(MixedPollTest, ACallsMaskLetsInItsSignals) {
  testing::ScopedHandler h(false);
  sigset_t block, before;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &block, &before), 0);
  sigset_t during = before;
  sigdelset(&during, SIGUSR1);
  PollTiming counted = kSleepAtOnce;
  counted.handlers_ran = [] { return static_cast<uint64_t>(testing::ScopedHandler::handled); };
  std::shared_ptr<FakePollable> a;
  pollfd f{add(&a), POLLIN, 0};
  pthread_kill(pthread_self(), SIGUSR1);
  {
    const CallMask m(&during);
    EXPECT_EQ(poll(&f, 1, kLongMs, counted), -EINTR) << "pending before the call";
  }
  const pthread_t self = pthread_self();
  std::thread t([&] {
    while (a->armed == 0) std::this_thread::yield();
    pthread_kill(self, SIGUSR1);
  });
  {
    const CallMask m(&during);
    EXPECT_EQ(poll(&f, 1, kLongMs, counted), -EINTR) << "sent once it armed";
  }
  t.join();
  EXPECT_EQ(a->armed, a->disarmed);
  // Uncounted: the thread's mask stays; the sleep's ppoll lets it in.
  pthread_kill(pthread_self(), SIGUSR1);
  {
    const CallMask m(&during);
    EXPECT_EQ(poll(&f, 1, kLongMs), -EINTR) << "pending, handlers uncounted";
  }
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

TEST_F(MixedPollTest, SignalGivesEintrEvenWithRestart) {
  // poll(2) is never restarted, whatever the handler's flags.
  for (bool restart : {false, true}) {
    testing::ScopedHandler h(restart);
    std::shared_ptr<FakePollable> a;
    int fa = add(&a);
    pollfd fds[] = {{fa, POLLIN, 0}, {pipe_[0], POLLIN, 0}};
    int rc = testing::interrupt_until_done([&] { return poll(fds, 2, -1); }, [&] { put_pipe(); });
    EXPECT_EQ(rc, -EINTR) << "restart " << restart;
    EXPECT_EQ(a->armed, a->disarmed);
  }
}

TEST_F(MixedPollTest, BadArguments) {
  EXPECT_EQ(poll(nullptr, 1, 0), -EFAULT);
  EXPECT_EQ(poll(nullptr, 0, 0), 0);
}

TEST_F(MixedPollTest, SelectOverMixedDescriptors) {
  std::shared_ptr<FakePollable> a, b;
  int fa = add(&a), fb = add(&b);
  a->set_ready(POLLIN);
  b->set_ready(POLLOUT);
  fd_set rd, wr;
  FD_ZERO(&rd);
  FD_ZERO(&wr);
  FD_SET(fa, &rd);
  FD_SET(fb, &rd);
  FD_SET(fb, &wr);
  FD_SET(pipe_[0], &rd);
  FD_SET(pipe_[1], &wr);
  int nfds = std::max({fa, fb, pipe_[0], pipe_[1]}) + 1;
  timeval tv{0, 0};
  EXPECT_EQ(select_mixed(nfds, &rd, &wr, nullptr, &tv, kSleepAtOnce, fakes_.table), 3);
  EXPECT_TRUE(FD_ISSET(fa, &rd));
  EXPECT_FALSE(FD_ISSET(fb, &rd));
  EXPECT_TRUE(FD_ISSET(fb, &wr));
  EXPECT_FALSE(FD_ISSET(pipe_[0], &rd));
  EXPECT_TRUE(FD_ISSET(pipe_[1], &wr));
}

TEST_F(MixedPollTest, SelectErrors) {
  fd_set rd;
  FD_ZERO(&rd);
  EXPECT_EQ(select_mixed(-1, &rd, nullptr, nullptr, nullptr, kSleepAtOnce, fakes_.table), -EINVAL);
  EXPECT_EQ(
      select_mixed(FD_SETSIZE + 1, &rd, nullptr, nullptr, nullptr, kSleepAtOnce, fakes_.table),
      -EINVAL);
  timeval neg{-1, 0};
  EXPECT_EQ(select_mixed(1, &rd, nullptr, nullptr, &neg, kSleepAtOnce, fakes_.table), -EINVAL);
  int closed = dup(0);
  ::close(closed);
  FD_SET(closed, &rd);
  timeval zero{0, 0};
  EXPECT_EQ(select_mixed(closed + 1, &rd, nullptr, nullptr, &zero, kSleepAtOnce, fakes_.table),
            -EBADF);
}

}  // namespace
}  // namespace ss
