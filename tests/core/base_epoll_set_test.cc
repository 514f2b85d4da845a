// EpollSet over fake Pollables (wait_helpers.h) and kernel descriptors:
// level- and edge-triggered, one-shot, epoll_ctl's errors, wake-ups of a
// sleeper, nesting through the real epoll fd, EINTR.
#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "core/base/epoll_set.h"
#include "core/base/mixed_poll.h"
#include "tests/core/wait_helpers.h"

namespace ss {
namespace {

using testing::FakePollable;
using testing::kLongMs;
using testing::kSleepAtOnce;

class EpollSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(EpollSet::create(EPOLL_CLOEXEC, &set_), 0);
    ASSERT_EQ(pipe2(pipe_, O_CLOEXEC | O_NONBLOCK), 0);
  }
  void TearDown() override {
    set_.reset();
    ::close(pipe_[0]);
    ::close(pipe_[1]);
  }
  int add(std::shared_ptr<FakePollable>* out) { return fakes_.add(out); }
  int ctl(int op, int fd, uint32_t events, uint64_t tag) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = tag;
    return set_->ctl(op, fd, &ev, fakes_.table);
  }
  // The tags reported by one wait.
  std::multiset<uint64_t> wait(int timeout, int max = 16) {
    epoll_event evs[16];
    int n = set_->wait(evs, max, timeout, kSleepAtOnce);
    EXPECT_GE(n, 0) << "-errno " << -n;
    std::multiset<uint64_t> tags;
    // A copy: epoll_event is packed, its u64 not aligned for a reference.
    for (int i = 0; i < n; i++) tags.insert(uint64_t{evs[i].data.u64});
    return tags;
  }
  // A long wait, during which another thread does act() once `fake` is
  // armed again (so only a wake-up can end the sleep): the tags reported.
  std::multiset<uint64_t> wait_until(FakePollable* fake, const std::function<void()>& act) {
    const int armed = fake->armed;
    std::thread t([&] {
      while (fake->armed == armed) std::this_thread::yield();
      act();
    });
    std::multiset<uint64_t> got = wait(kLongMs);
    t.join();
    return got;
  }
  // As wait_until, but the wait has no timeout: after act(), a watchdog
  // gives the sleeper kLongMs, then wakes it through the pipe (tag 99).
  std::multiset<uint64_t> wait_watched(FakePollable* fake, const std::function<void()>& act) {
    EXPECT_EQ(ctl(EPOLL_CTL_ADD, pipe_[0], EPOLLIN, 99), 0);
    const int armed = fake->armed;
    std::atomic<bool> back{false};
    std::thread t([&] {
      while (fake->armed == armed) std::this_thread::yield();
      act();
      const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(kLongMs);
      while (!back.load() && std::chrono::steady_clock::now() < end)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (!back.load()) put_pipe();
    });
    std::multiset<uint64_t> got = wait(-1);
    back.store(true);
    t.join();
    return got;
  }
  void put_pipe() { ASSERT_EQ(::write(pipe_[1], "x", 1), 1); }
  void drain_pipe() {
    char b[64];
    while (::read(pipe_[0], b, sizeof b) > 0) {
    }
  }

  testing::PollableTable fakes_;
  std::unique_ptr<EpollSet> set_;
  int pipe_[2] = {-1, -1};
};

using Tags = std::multiset<uint64_t>;

TEST_F(EpollSetTest, LevelTriggeredOverMixedDescriptors) {
  std::shared_ptr<FakePollable> a, b;
  int fa = add(&a), fb = add(&b);
  ASSERT_EQ(ctl(EPOLL_CTL_ADD, fa, EPOLLIN, 1), 0);
  ASSERT_EQ(ctl(EPOLL_CTL_ADD, fb, EPOLLOUT, 2), 0);
  ASSERT_EQ(ctl(EPOLL_CTL_ADD, pipe_[0], EPOLLIN, 3), 0);
  EXPECT_EQ(wait(0), Tags{});  // /dev/null behind fa, fb: never asked
  a->set_ready(POLLIN | POLLOUT);
  put_pipe();
  epoll_event evs[4];
  ASSERT_EQ(set_->wait(evs, 4, 0, kSleepAtOnce), 2);
  for (int i = 0; i < 2; i++) {
    if (evs[i].data.u64 == 1) {
      EXPECT_EQ(evs[i].events, static_cast<uint32_t>(EPOLLIN));  // only what was asked
    }
  }
  EXPECT_EQ(wait(0), (Tags{1, 3}));  // level: again while ready
  drain_pipe();
  a->set_ready(0);
  b->set_ready(POLLHUP);  // unasked, reported as epoll does
  EXPECT_EQ(wait(-1), Tags{2});
}

// PollTiming::os_first false: the set's kernel part waits for a later
// pass; a sleep looks at it after.
TEST_F(EpollSetTest, KernelPartSkippedOnTheFirstPassWhenAsked) {
  std::shared_ptr<FakePollable> a;
  int fa = add(&a);
  ASSERT_EQ(ctl(EPOLL_CTL_ADD, fa, EPOLLIN, 1), 0);
  ASSERT_EQ(ctl(EPOLL_CTL_ADD, pipe_[0], EPOLLIN, 3), 0);
  a->set_ready(POLLIN);
  put_pipe();
  PollTiming skip = kSleepAtOnce;
  skip.os_first = false;
  skip.os_ratio = 0;
  epoll_event evs[4];
  ASSERT_EQ(set_->wait(evs, 4, 0, skip), 1);
  EXPECT_EQ(+evs[0].data.u64, 1u);
  EXPECT_EQ(wait(0), (Tags{1, 3}));  // the default looks every pass
  a->set_ready(0);
  ASSERT_EQ(set_->wait(evs, 4, kLongMs, skip), 1);
  EXPECT_EQ(+evs[0].data.u64, 3u);
}

TEST_F(EpollSetTest, AKernelServedObjectGoesToTheKernelPart) {
  // The fake under the pipe's number: served by the kernel, the set asks
  // the pipe (edge state the kernel's), never the object.
  auto fake = std::make_shared<FakePollable>();
  fake->set_kernel_served(true);
  ASSERT_EQ(fakes_.table.insert(pipe_[0], FdKind::kRspreloadTcp, fake), 0);
  ASSERT_EQ(ctl(EPOLL_CTL_ADD, pipe_[0], EPOLLIN | EPOLLET, 5), 0);
  EXPECT_TRUE(set_->kernel_only());
  fake->set_ready(POLLIN);
  EXPECT_EQ(wait(0), Tags{});  // the object's readiness is not asked
  put_pipe();
  EXPECT_EQ(wait(0), Tags{5});
  EXPECT_EQ(wait(0), Tags{});  // the kernel's edge: once
  EXPECT_EQ(fake->scans.load(), 0);
  // Once a member, always one: served by the kernel later, it stays.
  std::shared_ptr<FakePollable> m;
  const int fm = add(&m);
  ASSERT_EQ(ctl(EPOLL_CTL_ADD, fm, EPOLLIN, 6), 0);
  m->set_kernel_served(true);
  m->set_ready(POLLIN);
  EXPECT_EQ(ctl(EPOLL_CTL_MOD, fm, EPOLLIN, 7), 0);
  EXPECT_FALSE(set_->kernel_only());
  EXPECT_EQ(wait(0), Tags{7});
  fakes_.table.remove_object(pipe_[0], FdKind::kRspreloadTcp, nullptr);
}

TEST_F(EpollSetTest, AnAddRacingAMoveToTheKernelEndsInTheKernelPart) {
  // The fake under the pipe's number, as a connection a preload moves to
  // the kernel (librspreload's late fallback) while the add runs: between
  // the set's lookup and its lock, the table forgets it and every set
  // moves its members (to_kernel: none here yet); the object goes with
  // its entry. The add must watch the kernel's descriptor, not a member
  // that never reports.
  auto fake = std::make_shared<FakePollable>();
  ASSERT_EQ(fakes_.table.insert(pipe_[0], FdKind::kRspreloadTcp, fake), 0);
  FakePollable* moving = fake.get();
  fake->on_kernel_served([this, moving] {
    fakes_.table.remove_object(pipe_[0], FdKind::kRspreloadTcp, nullptr);
    set_->to_kernel(moving);
  });
  fake.reset();  // the table's and the add's references hold it
  ASSERT_EQ(ctl(EPOLL_CTL_ADD, pipe_[0], EPOLLIN, 5), 0);
  EXPECT_TRUE(set_->kernel_only());
  put_pipe();
  EXPECT_EQ(wait(0), Tags{5});
}

TEST_F(EpollSetTest, EdgeTriggeredReportsEachEventOnce) {
  std::shared_ptr<FakePollable> a;
  int fa = add(&a);
  a->set_counts_changes(true);
  ASSERT_EQ(ctl(EPOLL_CTL_ADD, fa, EPOLLIN | EPOLLOUT | EPOLLET, 1), 0);
  a->set_ready(POLLIN);
  EXPECT_EQ(wait(0), Tags{1});
  EXPECT_EQ(wait(0), Tags{});  // still readable: no new edge
  a->another_event();          // more data on a readable object
  EXPECT_EQ(wait(0), Tags{1});
  EXPECT_EQ(wait(0), Tags{});
  a->set_ready_silently(POLLIN | POLLOUT);  // a bit rose
  EXPECT_EQ(wait(0), Tags{1});
  // The kernel part keeps its own edges.
  ASSERT_EQ(ctl(EPOLL_CTL_ADD, pipe_[0], EPOLLIN | EPOLLET, 2), 0);
  put_pipe();
  EXPECT_EQ(wait(0), Tags{2});
  EXPECT_EQ(wait(0), Tags{});
  put_pipe();
  EXPECT_EQ(wait(0), Tags{2});
}

TEST_F(EpollSetTest, EdgeTriggeredWithoutAChangeCountIsLevelTriggered) {
  std::shared_ptr<FakePollable> a;
  int fa = add(&a);
  ASSERT_EQ(ctl(EPOLL_CTL_ADD, fa, EPOLLIN | EPOLLET, 1), 0);
  a->set_ready(POLLIN);
  EXPECT_EQ(wait(0), Tags{1});
  EXPECT_EQ(wait(0), Tags{1});  // spurious, never lost
}

TEST_F(EpollSetTest, EdgeTriggeredSleeperWokenByANewEvent) {
  std::shared_ptr<FakePollable> a;
  int fa = add(&a);
  a->set_counts_changes(true);
  ASSERT_EQ(ctl(EPOLL_CTL_ADD, fa, EPOLLIN | EPOLLET, 1), 0);
  a->set_ready(POLLIN);
  EXPECT_EQ(wait(0), Tags{1});
  // Readable all along: only the event wakes it.
  EXPECT_EQ(wait_until(a.get(), [&] { a->another_event(); }), Tags{1});
}

TEST_F(EpollSetTest, OneShotUntilModified) {
  std::shared_ptr<FakePollable> a;
  int fa = add(&a);
  ASSERT_EQ(ctl(EPOLL_CTL_ADD, fa, EPOLLIN | EPOLLONESHOT, 1), 0);
  ASSERT_EQ(ctl(EPOLL_CTL_ADD, pipe_[0], EPOLLIN | EPOLLONESHOT, 2), 0);
  a->set_ready(POLLIN);
  put_pipe();
  EXPECT_EQ(wait(0), (Tags{1, 2}));
  a->set_ready(POLLIN);
  put_pipe();
  EXPECT_EQ(wait(0), Tags{});
  ASSERT_EQ(ctl(EPOLL_CTL_MOD, fa, EPOLLIN | EPOLLONESHOT, 3), 0);
  ASSERT_EQ(ctl(EPOLL_CTL_MOD, pipe_[0], EPOLLIN, 4), 0);
  EXPECT_EQ(wait(0), (Tags{3, 4}));
  EXPECT_EQ(wait(0), Tags{4});
}

TEST_F(EpollSetTest, CtlErrorsAsTheKernelGivesThem) {
  std::shared_ptr<FakePollable> a;
  int fa = add(&a);
  EXPECT_EQ(ctl(EPOLL_CTL_MOD, fa, EPOLLIN, 1), -ENOENT);
  EXPECT_EQ(ctl(EPOLL_CTL_DEL, fa, 0, 0), -ENOENT);
  ASSERT_EQ(ctl(EPOLL_CTL_ADD, fa, EPOLLIN, 1), 0);
  EXPECT_EQ(ctl(EPOLL_CTL_ADD, fa, EPOLLIN, 1), -EEXIST);
  EXPECT_EQ(set_->ctl(EPOLL_CTL_ADD, fa, nullptr, fakes_.table), -EFAULT);
  EXPECT_EQ(ctl(EPOLL_CTL_DEL, fa, 0, 0), 0);
  EXPECT_EQ(ctl(EPOLL_CTL_DEL, fa, 0, 0), -ENOENT);
  EXPECT_EQ(ctl(EPOLL_CTL_MOD, pipe_[0], EPOLLIN, 1), -ENOENT);
  ASSERT_EQ(ctl(EPOLL_CTL_ADD, pipe_[0], EPOLLIN, 1), 0);
  EXPECT_EQ(ctl(EPOLL_CTL_ADD, pipe_[0], EPOLLIN, 1), -EEXIST);
  int closed = dup(0);
  ::close(closed);
  EXPECT_EQ(ctl(EPOLL_CTL_ADD, closed, EPOLLIN, 1), -EBADF);
  EXPECT_EQ(ctl(EPOLL_CTL_ADD, set_->kernel_fd(), EPOLLIN, 1), -EINVAL);  // itself
  char path[] = "/tmp/ss-epoll-XXXXXX";
  int file = mkstemp(path);
  ASSERT_GE(file, 0);
  unlink(path);
  EXPECT_EQ(ctl(EPOLL_CTL_ADD, file, EPOLLIN, 1), -EPERM);  // a regular file
  ::close(file);
  epoll_event ev;
  EXPECT_EQ(set_->wait(&ev, 0, 0, kSleepAtOnce), -EINVAL);
}

TEST_F(EpollSetTest, SleeperWokenByAKickAndByTheKernelPart) {
  std::shared_ptr<FakePollable> a;
  int fa = add(&a);
  ASSERT_EQ(ctl(EPOLL_CTL_ADD, fa, EPOLLOUT, 1), 0);
  ASSERT_EQ(ctl(EPOLL_CTL_ADD, pipe_[0], EPOLLIN, 2), 0);
  EXPECT_EQ(wait_until(a.get(), [&] { a->set_ready(POLLOUT); }), Tags{1});
  EXPECT_EQ(a->armed, a->disarmed);
  a->set_ready(0);
  EXPECT_EQ(wait_until(a.get(), [&] { put_pipe(); }), Tags{2});
}

// A sleep is armed from the members it saw: one added, or a one-shot one
// re-armed, while the thread sleeps must wake it. The sleeper waits with
// no timeout and no wake-up interval (kSleepAtOnce); a watchdog writes the
// pipe (tag 99) if it is still asleep after kLongMs, so a missed wake-up
// shows as 99 among the tags, never as a hang.
TEST_F(EpollSetTest, SleeperSeesAMemberAddedDuringItsSleep) {
  std::shared_ptr<FakePollable> a, idle;
  int fa = add(&a), fi = add(&idle);
  ASSERT_EQ(ctl(EPOLL_CTL_ADD, fi, EPOLLIN, 2), 0);  // armed: the thread sleeps
  a->set_ready(POLLIN);
  EXPECT_EQ(wait_watched(idle.get(), [&] { EXPECT_EQ(ctl(EPOLL_CTL_ADD, fa, EPOLLIN, 1), 0); }),
            Tags{1});
}

TEST_F(EpollSetTest, SleeperSeesAOneShotMemberRearmedDuringItsSleep) {
  std::shared_ptr<FakePollable> a, idle;
  int fa = add(&a), fi = add(&idle);
  ASSERT_EQ(ctl(EPOLL_CTL_ADD, fi, EPOLLIN, 2), 0);
  ASSERT_EQ(ctl(EPOLL_CTL_ADD, fa, EPOLLIN | EPOLLONESHOT, 1), 0);
  a->set_ready(POLLIN);
  EXPECT_EQ(wait(0), Tags{1});  // reported: disabled until MOD
  EXPECT_EQ(wait_watched(idle.get(),
                         [&] { EXPECT_EQ(ctl(EPOLL_CTL_MOD, fa, EPOLLIN | EPOLLONESHOT, 1), 0); }),
            Tags{1});
}

TEST_F(EpollSetTest, NestedThroughTheRealEpollFd) {
  std::unique_ptr<EpollSet> outer;
  ASSERT_EQ(EpollSet::create(EPOLL_CLOEXEC, &outer), 0);
  ASSERT_EQ(ctl(EPOLL_CTL_ADD, pipe_[0], EPOLLIN, 1), 0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 9;
  ASSERT_EQ(outer->ctl(EPOLL_CTL_ADD, set_->kernel_fd(), &ev, fakes_.table), 0);
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    put_pipe();
  });
  epoll_event got{};
  int n = outer->wait(&got, 1, kLongMs, kSleepAtOnce);
  t.join();
  ASSERT_EQ(n, 1);
  EXPECT_EQ(+got.data.u64, 9u);
  EXPECT_EQ(wait(0), Tags{1});  // the inner set says which
}

// A mixed set in the fd table (under its real epoll fd, as a preload
// would enter it) is a Pollable: nested in another set, its Pollables
// count too, and looking at it consumes nothing.
class NestedEpollSetTest : public EpollSetTest {
 protected:
  void SetUp() override {
    EpollSetTest::SetUp();
    std::unique_ptr<EpollSet> inner;
    ASSERT_EQ(EpollSet::create(EPOLL_CLOEXEC, &inner), 0);
    inner_ = std::move(inner);
    ASSERT_EQ(fakes_.table.insert(inner_->kernel_fd(), FdKind::kRspreloadTcp, inner_), 0);
    fa_ = add(&a_);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLET;
    ev.data.u64 = 7;
    a_->set_counts_changes(true);
    ASSERT_EQ(inner_->ctl(EPOLL_CTL_ADD, fa_, &ev, fakes_.table), 0);
    ASSERT_EQ(ctl(EPOLL_CTL_ADD, inner_->kernel_fd(), EPOLLIN, 9), 0);
  }
  void TearDown() override {
    fakes_.table.remove_object(inner_->kernel_fd(), FdKind::kRspreloadTcp, nullptr);
    EpollSetTest::TearDown();
  }
  std::shared_ptr<EpollSet> inner_;
  std::shared_ptr<FakePollable> a_;
  int fa_ = -1;
};

TEST_F(NestedEpollSetTest, InnerPollablesMakeTheInnerSetReady) {
  EXPECT_EQ(wait(0), Tags{});
  a_->set_ready(POLLIN);
  EXPECT_EQ(wait(0), Tags{9});
  EXPECT_EQ(wait(0), Tags{9});  // level-triggered in the outer set
  // The inner set's edge is still there to take.
  epoll_event ev{};
  ASSERT_EQ(inner_->wait(&ev, 1, 0, kSleepAtOnce), 1);
  EXPECT_EQ(+ev.data.u64, 7u);
  EXPECT_EQ(wait(0), Tags{});  // taken: nothing new inside
  pollfd p{inner_->kernel_fd(), POLLIN, 0};
  EXPECT_EQ(poll_mixed(&p, 1, 0, kSleepAtOnce, fakes_.table), 0);
  a_->another_event();
  EXPECT_EQ(poll_mixed(&p, 1, 0, kSleepAtOnce, fakes_.table), 1);
}

TEST_F(NestedEpollSetTest, SleeperWokenThroughTheInnerSet) {
  // A kick, seen through the second epoll fd.
  EXPECT_EQ(wait_until(a_.get(), [&] { a_->set_ready(POLLIN); }), Tags{9});
  EXPECT_EQ(a_->armed, a_->disarmed);
  EXPECT_FALSE(a_->kick_readable());  // the waiter that saw it drained it
  // And through the inner set's kernel part.
  ASSERT_EQ(inner_->ctl(EPOLL_CTL_ADD, pipe_[0], nullptr, fakes_.table), -EFAULT);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 8;
  ASSERT_EQ(inner_->ctl(EPOLL_CTL_ADD, pipe_[0], &ev, fakes_.table), 0);
  epoll_event taken{};
  ASSERT_EQ(inner_->wait(&taken, 1, 0, kSleepAtOnce), 1);  // a's edge
  EXPECT_EQ(wait_until(a_.get(), [&] { put_pipe(); }), Tags{9});
}

TEST_F(NestedEpollSetTest, LoopsAreRefused) {
  // The outer set holds inner_: entered in the table, it cannot go into
  // inner_ (ELOOP, as the kernel says).
  std::shared_ptr<EpollSet> outer(std::move(set_));
  const int outer_fd = outer->kernel_fd();
  ASSERT_EQ(fakes_.table.insert(outer_fd, FdKind::kRspreloadTcp, outer), 0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  EXPECT_EQ(inner_->ctl(EPOLL_CTL_ADD, outer_fd, &ev, fakes_.table), -ELOOP);
  EXPECT_EQ(outer->ctl(EPOLL_CTL_ADD, outer_fd, &ev, fakes_.table), -EINVAL);  // itself
  fakes_.table.remove_object(outer_fd, FdKind::kRspreloadTcp, nullptr);
}

TEST_F(EpollSetTest, ReadyMembersTakeTurnsWhenMaxeventsIsSmall) {
  std::shared_ptr<FakePollable> a, b;
  int fa = add(&a), fb = add(&b);
  ASSERT_EQ(ctl(EPOLL_CTL_ADD, fa, EPOLLIN, 1), 0);
  ASSERT_EQ(ctl(EPOLL_CTL_ADD, fb, EPOLLIN, 2), 0);
  a->set_ready(POLLIN);
  b->set_ready(POLLIN);
  Tags seen;
  for (int i = 0; i < 2; i++) {
    Tags one = wait(0, 1);
    ASSERT_EQ(one.size(), 1u);
    seen.insert(*one.begin());
  }
  EXPECT_EQ(seen, (Tags{1, 2}));
}

TEST_F(EpollSetTest, AClosedObjectLeavesTheSet) {
  std::shared_ptr<FakePollable> a;
  int fa = add(&a);
  ASSERT_EQ(ctl(EPOLL_CTL_ADD, fa, EPOLLIN, 1), 0);
  a->set_ready(POLLIN);
  EXPECT_EQ(wait(0), Tags{1});
  fakes_.table.remove_object(fa, FdKind::kRspreloadTcp, nullptr);  // its close
  a.reset();
  EXPECT_EQ(wait(0), Tags{});
  EXPECT_EQ(ctl(EPOLL_CTL_DEL, fa, 0, 0), -EPERM);  // now /dev/null, which the kernel refuses
}

TEST_F(EpollSetTest, SignalGivesEintr) {
  testing::ScopedHandler h(true);  // epoll_wait is never restarted
  std::shared_ptr<FakePollable> a;
  int fa = add(&a);
  ASSERT_EQ(ctl(EPOLL_CTL_ADD, fa, EPOLLIN, 1), 0);
  ASSERT_EQ(ctl(EPOLL_CTL_ADD, pipe_[0], EPOLLIN, 2), 0);
  epoll_event ev;
  int rc = testing::interrupt_until_done([&] { return set_->wait(&ev, 1, -1, kSleepAtOnce); },
                                         [&] { put_pipe(); });
  EXPECT_EQ(rc, -EINTR);
  EXPECT_EQ(a->armed, a->disarmed);
}

}  // namespace
}  // namespace ss
