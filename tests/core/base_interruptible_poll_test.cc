// interruptible_poll and Kick: a signal handler without SA_RESTART fails
// the sleep with EINTR, one with it restarts (0: look again), as the
// kernel does for a socket call; poll and select never restart. A Kick
// wakes a sleeper another thread's state change concerns, falls back to
// short sleeps without a descriptor, and leaves nothing pending.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/base/interruptible_poll.h"
#include "core/base/kick.h"
#include "tests/core/wait_helpers.h"

namespace ss {
namespace {

using testing::interrupt_until_done;
using testing::ScopedHandler;

struct Pipe {
  Pipe() {
    if (pipe2(fd, O_CLOEXEC | O_NONBLOCK) != 0) abort();
  }
  ~Pipe() {
    ::close(fd[0]);
    ::close(fd[1]);
  }
  void put() const {
    if (::write(fd[1], "x", 1) != 1) abort();
  }
  int fd[2];
};

// A sleep on an empty pipe, interrupted by SIGUSR1 with the given
// handler; the pipe releases a call deaf to the signal.
int interrupted_sleep(bool restart_handler, bool restartable, pollfd* out) {
  ScopedHandler h(restart_handler);
  Pipe p;
  *out = {p.fd[0], POLLIN, 0};
  return interrupt_until_done([&] { return interruptible_poll(out, 1, -1, restartable); },
                              [&] { p.put(); });
}

TEST(InterruptiblePollTest, HandlerWithoutRestartGivesEintr) {
  pollfd p;
  EXPECT_EQ(interrupted_sleep(false, true, &p), -EINTR);
}

TEST(InterruptiblePollTest, HandlerWithRestartWakesToLookAgain) {
  pollfd p;
  const int before = ScopedHandler::handled;
  EXPECT_EQ(interrupted_sleep(true, true, &p), 0);  // not the pipe's release: nothing readable
  EXPECT_EQ(p.revents, 0);
  EXPECT_GT(ScopedHandler::handled, before);
}

TEST(InterruptiblePollTest, PollIsNeverRestarted) {
  pollfd p;
  EXPECT_EQ(interrupted_sleep(true, false, &p), -EINTR);
}

TEST(InterruptiblePollTest, AHandlerOfABlockedSignalDoesNotCount) {
  // SIGUSR2's handler lacks SA_RESTART, but the sleeping thread blocks
  // SIGUSR2: only SIGUSR1's (with SA_RESTART) can have run.
  ScopedHandler other(false, SIGUSR2);
  sigset_t usr2, old;
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &usr2, &old), 0);  // the thread inherits it
  pollfd p;
  int rc = interrupted_sleep(true, true, &p);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  EXPECT_EQ(rc, 0);
}

TEST(InterruptiblePollTest, ReadyAndTimeoutAsPoll) {
  Pipe p;
  pollfd f{p.fd[0], POLLIN, 0};
  EXPECT_EQ(interruptible_poll(&f, 1, 1), 0);
  p.put();
  EXPECT_EQ(interruptible_poll(&f, 1, -1), 1);
  EXPECT_EQ(f.revents, POLLIN);
  pollfd bad{-5, POLLIN, 0};  // negative: ignored, as poll(2)
  EXPECT_EQ(interruptible_poll(&bad, 1, 0), 0);
  EXPECT_EQ(interruptible_poll(nullptr, 1, 0), -EFAULT);
}

// A blocking call's sleep (Kick::sleep) woken by another thread's kick.
TEST(KickTest, SleeperWokenByAnotherThreadsKick) {
  std::mutex mu;
  Kick k;
  Pipe never;  // the object's own event, which never comes
  bool asleep = false;
  int rc = 1;
  std::thread sleeper([&] {
    std::unique_lock<std::mutex> lk(mu);
    asleep = true;
    rc = k.sleep(lk, {never.fd[0], POLLIN, 0}, 0);  // unbounded: only the kick ends it
    asleep = false;
  });
  for (;;) {
    std::lock_guard<std::mutex> g(mu);
    if (asleep) {  // it holds mu_ until it has joined and unlocked in sleep()
      k.wake();
      break;
    }
  }
  sleeper.join();
  EXPECT_EQ(rc, 0);
  // The last waiter drained the kick it saw; no waiter, no write.
  pollfd p{k.fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0);
  k.wake();
  EXPECT_EQ(::poll(&p, 1, 0), 0);
}

TEST(KickTest, SleepEndsOnTheObjectsOwnEvent) {
  std::mutex mu;
  Kick k;
  Pipe ev;
  ev.put();
  std::unique_lock<std::mutex> lk(mu);
  EXPECT_EQ(k.sleep(lk, {ev.fd[0], POLLIN, 0}, 0), 0);
  EXPECT_TRUE(lk.owns_lock());
}

TEST(KickTest, SleepInterruptedGivesEintr) {
  ScopedHandler h(false);
  std::mutex mu;
  Kick k;
  Pipe never;
  int rc = interrupt_until_done(
      [&] {
        std::unique_lock<std::mutex> lk(mu);
        return k.sleep(lk, {never.fd[0], POLLIN, 0}, 0);
      },
      [&] { never.put(); });
  EXPECT_EQ(rc, -EINTR);
}

TEST(KickTest, WithoutADescriptorSleepsBrieflyInstead) {
  // No descriptor can be made: a new thread's eventfd fails with EMFILE and
  // an unbounded sleep becomes a short one (which this test would otherwise
  // wait on forever).
  rlimit old;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
  Pipe never;
  int lowest = dup(0);
  ASSERT_GE(lowest, 0);
  ::close(lowest);
  rlimit low = old;
  low.rlim_cur = static_cast<rlim_t>(lowest);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  std::mutex mu;
  Kick k;
  int join_rc = 0, rc = 0, fd = 0;
  std::thread([&] {  // no eventfd yet: this thread never joined a kick
    std::unique_lock<std::mutex> lk(mu);
    join_rc = k.join();
    rc = k.sleep(lk, {never.fd[0], POLLIN, 0}, 0);
    fd = k.fd();
  })
      .join();
  setrlimit(RLIMIT_NOFILE, &old);
  EXPECT_EQ(join_rc, -EMFILE);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(fd, -1);
}

TEST(KickTest, OneDescriptorPerThreadWhateverItWaitsOn) {
  // A thread asleep on many objects polls one eventfd; the objects hold
  // none, and a kick of any of them wakes it.
  std::mutex mu;
  std::vector<std::unique_ptr<Kick>> kicks;
  for (int i = 0; i < 100; i++) kicks.push_back(std::make_unique<Kick>());
  std::unique_lock<std::mutex> lk(mu);
  std::set<int> fds;
  for (auto& k : kicks) {
    ASSERT_EQ(k->join(), 0);
    fds.insert(k->fd());
  }
  ASSERT_EQ(fds.size(), 1u);
  pollfd p{*fds.begin(), POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0);
  kicks[57]->wake();
  EXPECT_EQ(::poll(&p, 1, 0), 1);
  for (auto& k : kicks) k->leave(true);
  // The last leave drained it: the next sleep starts quiet.
  ASSERT_EQ(kicks[3]->join(), 0);
  EXPECT_EQ(::poll(&p, 1, 0), 0);
  kicks[3]->leave(false);
}

TEST(KickTest, AKickWhileAsleepEndsTheSleep) {
  std::mutex mu;
  Kick k;
  Pipe never;
  std::unique_lock<std::mutex> lk(mu);
  std::thread waker([&] {
    std::lock_guard<std::mutex> g(mu);  // the sleep let it go: joined by then
    k.wake();
  });
  EXPECT_EQ(k.sleep(lk, {never.fd[0], POLLIN, 0}, 0), 0);
  lk.unlock();
  waker.join();
}

}  // namespace
}  // namespace ss
