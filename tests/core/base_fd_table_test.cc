// FdTable: entries per kind, a lookup of the wrong kind, the per-thread
// lookup cache staying true to the table, and lock-free lookups while
// entries are removed and reinserted.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <poll.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <urcu/urcu-bp.h>

#include "core/base/fd_table.h"
#include "core/base/signal_depth.h"
#include "core/base/sanitizer.h"

namespace ss {
namespace {

struct Obj {
  static constexpr uint32_t kAlive = 0xa11ce, kDead = 0xdead;
  explicit Obj(int f) : fd(f) {}
  ~Obj() { magic = kDead; }
  int fd;
  volatile uint32_t magic = kAlive;
};

struct PollableObj final : Obj, Pollable {
  using Obj::Obj;
  short readiness(short) override { return POLLIN; }
  WaitTarget wait_target(short, int*) override { return {}; }
  void after_wait(const WaitTarget&, bool) override {}
};

constexpr FdKind kKinds[] = {FdKind::kRsocket, FdKind::kRspreloadTcp, FdKind::kKernel};

// Each kind's entry, and a Pollable found as one whatever its kind.
TEST(FdTableTest, InsertGetRemovePerKind) {
  FdTable t;
  int fd = 10;
  for (FdKind k : kKinds) {
    auto o = std::make_shared<PollableObj>(fd);
    ASSERT_EQ(t.insert(fd, k, o), 0);
    EXPECT_EQ(t.kind(fd), k);
    EXPECT_EQ(t.get<PollableObj>(fd, k), o);
    EXPECT_EQ(t.get<PollableObj>(fd, k), o);  // again, from the thread's cache
    EXPECT_EQ(t.get_pollable(fd).get(), static_cast<Pollable*>(o.get()));
    EXPECT_EQ(t.remove<PollableObj>(fd, k), o);
    EXPECT_EQ(t.kind(fd), FdKind::kNone);
    EXPECT_EQ(t.get<PollableObj>(fd, k), nullptr);
    std::shared_ptr<void> none;
    EXPECT_EQ(t.remove_object(fd, k, &none), -EBADF);
    fd++;
  }
}

TEST(FdTableTest, GetOfAnotherKindFindsNothing) {
  FdTable t;
  auto o = std::make_shared<Obj>(7);
  ASSERT_EQ(t.insert(7, FdKind::kRsocket, o), 0);
  ASSERT_EQ(t.get<Obj>(7, FdKind::kRsocket), o);  // now cached for this thread
  EXPECT_EQ(t.get<Obj>(7, FdKind::kRspreloadTcp), nullptr);
  EXPECT_EQ(t.get<Obj>(7, FdKind::kKernel), nullptr);
  // A remove of another kind leaves the entry alone.
  std::shared_ptr<void> out;
  EXPECT_EQ(t.remove_object(7, FdKind::kKernel, &out), -EBADF);
  EXPECT_EQ(out, nullptr);
  EXPECT_EQ(t.get<Obj>(7, FdKind::kRsocket), o);
}

// replace changes an entry only while it is still the expected one: a
// removed entry (a close that won the race) is never brought back.
TEST(FdTableTest, ReplaceOnlyWhileTheEntryIsUnchanged) {
  FdTable t;
  auto o = std::make_shared<PollableObj>(9);
  auto other = std::make_shared<PollableObj>(9);
  EXPECT_EQ(t.replace(9, FdKind::kRsocket, FdKind::kKernel, o), -ESTALE);  // no entry
  EXPECT_EQ(t.kind(9), FdKind::kNone);
  ASSERT_EQ(t.insert(9, FdKind::kRsocket, o), 0);
  EXPECT_EQ(t.replace(9, FdKind::kRspreloadTcp, FdKind::kKernel, o), -ESTALE);  // another kind
  EXPECT_EQ(t.replace(9, FdKind::kRsocket, FdKind::kKernel, other), -ESTALE);   // another object
  EXPECT_EQ(t.get<PollableObj>(9, FdKind::kRsocket), o);
  ASSERT_EQ(t.replace(9, FdKind::kRsocket, FdKind::kKernel, o), 0);
  EXPECT_EQ(t.kind(9), FdKind::kKernel);
  EXPECT_EQ(t.get<PollableObj>(9, FdKind::kKernel), o);
  EXPECT_EQ(t.get_pollable(9).get(), static_cast<Pollable*>(o.get()));
  EXPECT_EQ(t.remove<PollableObj>(9, FdKind::kKernel), o);
  EXPECT_EQ(t.replace(9, FdKind::kKernel, FdKind::kRsocket, o), -ESTALE);  // removed: stays so
  EXPECT_EQ(t.kind(9), FdKind::kNone);
}

TEST(FdTableTest, KernelPassThroughNeedsNoObject) {
  FdTable t;
  ASSERT_EQ(t.insert(3, FdKind::kKernel, nullptr), 0);
  EXPECT_EQ(t.kind(3), FdKind::kKernel);
  EXPECT_EQ(t.remove_object(3, FdKind::kKernel, nullptr), 0);
  EXPECT_EQ(t.kind(3), FdKind::kNone);
}

TEST(FdTableTest, APollableSharesTheEntrysOwnership) {
  FdTable t;
  auto o = std::make_shared<PollableObj>(20);
  std::weak_ptr<PollableObj> seen = o;
  ASSERT_EQ(t.insert(20, FdKind::kRspreloadTcp, std::move(o)), 0);
  std::shared_ptr<Pollable> p = t.get_pollable(20);
  ASSERT_NE(p, nullptr);
  t.remove<PollableObj>(20, FdKind::kRspreloadTcp);
  EXPECT_FALSE(seen.expired());  // a poll in progress keeps its object
  p.reset();
  EXPECT_TRUE(seen.expired());
  EXPECT_EQ(t.get_pollable(20), nullptr);
}

TEST(FdTableTest, NoPollableForOtherObjects) {
  FdTable t;
  auto o = std::make_shared<Obj>(30);
  ASSERT_EQ(t.insert(30, FdKind::kRspreloadTcp, o), 0);
  ASSERT_EQ(t.insert(31, FdKind::kKernel, nullptr), 0);
  EXPECT_EQ(t.get_pollable(30), nullptr);
  ASSERT_EQ(t.get<Obj>(30, FdKind::kRspreloadTcp), o);  // cached now
  EXPECT_EQ(t.get_pollable(30), nullptr);
  EXPECT_EQ(t.get_pollable(31), nullptr);
  EXPECT_EQ(t.get_pollable(32), nullptr);
  // A Pollable entered as an opaque object is not one.
  auto q = std::make_shared<PollableObj>(33);
  ASSERT_EQ(t.insert(33, FdKind::kRspreloadTcp, std::shared_ptr<void>(q)), 0);
  EXPECT_EQ(t.get_pollable(33), nullptr);
}

TEST(FdTableTest, OutOfRangeDescriptors) {
  FdTable t;
  auto o = std::make_shared<Obj>(0);
  EXPECT_EQ(t.insert(-1, FdKind::kRsocket, o), -EBADF);
  EXPECT_EQ(t.insert(1 << 20, FdKind::kRsocket, o), -ENOMEM);
  EXPECT_EQ(t.get<Obj>(-1, FdKind::kRsocket), nullptr);
  EXPECT_EQ(t.kind(1 << 20), FdKind::kNone);
}

TEST(FdTableTest, ReusedDescriptorReplacesTheCachedEntry) {
  FdTable t;
  auto a = std::make_shared<Obj>(5), b = std::make_shared<Obj>(5);
  ASSERT_EQ(t.insert(5, FdKind::kRsocket, a), 0);
  ASSERT_EQ(t.get<Obj>(5, FdKind::kRsocket), a);
  ASSERT_EQ(t.insert(5, FdKind::kRspreloadTcp, b), 0);  // the kernel reused 5
  EXPECT_EQ(t.get<Obj>(5, FdKind::kRsocket), nullptr);
  EXPECT_EQ(t.get<Obj>(5, FdKind::kRspreloadTcp), b);
}

TEST(FdTableTest, TheCacheKeepsNoRemovedObjectAlive) {
  FdTable t;
  auto o = std::make_shared<Obj>(9);
  std::weak_ptr<Obj> seen = o;
  ASSERT_EQ(t.insert(9, FdKind::kRsocket, std::move(o)), 0);
  ASSERT_NE(t.get<Obj>(9, FdKind::kRsocket), nullptr);  // cached
  t.remove<Obj>(9, FdKind::kRsocket);
  EXPECT_TRUE(seen.expired());
}

TEST(FdTableTest, TablesDoNotShareCachedLookups) {
  // Both tables see the same history: a cache keyed on descriptor and a
  // per-table generation alone would hand one table's object to the other.
  FdTable t1, t2;
  auto a = std::make_shared<Obj>(4), b = std::make_shared<Obj>(4);
  ASSERT_EQ(t1.insert(4, FdKind::kRsocket, a), 0);
  ASSERT_EQ(t2.insert(4, FdKind::kRsocket, b), 0);
  EXPECT_EQ(t1.get<Obj>(4, FdKind::kRsocket), a);
  EXPECT_EQ(t2.get<Obj>(4, FdKind::kRsocket), b);
  EXPECT_EQ(t1.get<Obj>(4, FdKind::kRsocket), a);
}

// A signal handler's lookup on a thread that is inside one (3, 7 and 11
// share an entry of the thread's cache, which the main loop rewrites on
// every call): neither the interrupted lookup nor any later one gets
// another descriptor's object. Before, the handler's write landed in the
// middle of the interrupted one's: a VMA preload program's recv on one
// socket went to another socket for good.
FdTable* g_signal_table = nullptr;
std::atomic<int> g_signal_wrong{0}, g_signal_runs{0};
void look_up_eleven(int) {
  const auto o = g_signal_table->get<int>(11, FdKind::kRspreloadTcp);
  if (!o || *o != 11) g_signal_wrong++;
  g_signal_runs++;
}

TEST(FdTableTest, LookupsFromASignalHandlerLeaveTheCacheRight) {
  FdTable t;
  g_signal_table = &t;
  for (int fd : {3, 7, 11})
    ASSERT_EQ(t.insert(fd, FdKind::kRspreloadTcp, std::make_shared<int>(fd)), 0);
  struct sigaction sa {
  }, old{};
  sa.sa_handler = look_up_eleven;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(sigaction(SIGALRM, &sa, &old), 0);
  itimerval every{{0, 20}, {0, 20}}, off{};
  ASSERT_EQ(setitimer(ITIMER_REAL, &every, nullptr), 0);
  int wrong = 0;
  for (int i = 0; i < 9000000 && g_signal_runs < 60000; i++) {
    const int fd = i % 2 ? 3 : 7;
    const auto o = t.get<int>(fd, FdKind::kRspreloadTcp);
    if (!o || *o != fd) wrong++;
  }
  setitimer(ITIMER_REAL, &off, nullptr);
  sigaction(SIGALRM, &old, nullptr);
  EXPECT_GT(g_signal_runs.load(), 100) << "the handler hardly ran";
  EXPECT_EQ(wrong, 0) << "the main loop got another descriptor's object";
  EXPECT_EQ(g_signal_wrong.load(), 0) << "the handler got another descriptor's object";
  for (int fd : {3, 7, 11}) EXPECT_EQ(*t.get<int>(fd, FdKind::kRspreloadTcp), fd);
}

// body() in a fork child, which exits 0 when it returns true: the
// child's wait status, or -1 when it still ran after a minute (killed).
template <class Body>
int in_child(Body body) {
  const pid_t child = fork();
  if (child == 0) _exit(body() ? 0 : 1);
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 600 && child > 0 && (done = waitpid(child, &status, WNOHANG)) == 0; i++)
    poll(nullptr, 0, 100);
  if (child < 0 || done == 0) {
    if (child > 0) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
    }
    return -1;
  }
  return status;
}

// A signal handler that removes an entry while its thread is inside a
// lookup: it must not wait for the grace period of the lookup it
// interrupted (that hung for good before), and what it retired is freed
// by the next remove that takes its object. The handler allocates
// nothing (entries made before). In a child, so a hang fails the test.
constexpr int kFirstOfPool = 100, kPool = 20000;
std::atomic<int> g_in_get{0}, g_over_get{0}, g_next_gone{kFirstOfPool};
std::atomic<int> g_made{0}, g_freed{0};
std::shared_ptr<int> counted(int v) {
  g_made++;
  return std::shared_ptr<int>(new int(v), [](int* p) {
    g_freed++;
    delete p;
  });
}
void remove_the_next(int) {
  ++signal_handlers_running();  // as the preloads' trampoline counts it
  g_over_get += g_in_get.load();
  const int fd = g_next_gone++;
  std::shared_ptr<void> o;
  if (fd < kFirstOfPool + kPool &&
      (g_signal_table->remove_object(fd, FdKind::kRspreloadTcp, &o) != 0 || !o ||
       *static_cast<int*>(o.get()) != fd))
    g_signal_wrong++;
  --signal_handlers_running();
}

TEST(FdTableTest, ASignalHandlerRemovesOverALookup) {
  const int status = in_child([] {
    FdTable t;
    g_signal_table = &t;
    for (int fd : {3, 7}) t.insert(fd, FdKind::kRspreloadTcp, counted(fd));
    for (int fd = kFirstOfPool; fd < kFirstOfPool + kPool; fd++)
      t.insert(fd, FdKind::kRspreloadTcp, counted(fd));
    struct sigaction sa {};
    sa.sa_handler = remove_the_next;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, nullptr);
    // On until 100 ticks landed during a get.
    itimerval every{{0, 200}, {0, 200}}, off{};
    setitimer(ITIMER_REAL, &every, nullptr);
    int wrong = 0;
    for (int i = 0; i < 500000000 && g_over_get < 100 && g_next_gone < kFirstOfPool + kPool; i++) {
      const int fd = i % 2 ? 3 : 7;
      g_in_get = 1;
      const auto o = t.get<int>(fd, FdKind::kRspreloadTcp);
      g_in_get = 0;
      if (!o || *o != fd) wrong++;
    }
    setitimer(ITIMER_REAL, &off, nullptr);
    const int gone = std::min<int>(g_next_gone, kFirstOfPool + kPool) - kFirstOfPool;
    const bool none_freed = g_freed == 0;                  // each in a handler's limbo
    auto three = t.remove<int>(3, FdKind::kRspreloadTcp);  // takes what the handlers left
    const bool three_right = three && *three == 3;
    three.reset();
    const bool all_freed = g_freed == gone + 1;
    for (int fd = kFirstOfPool + gone; fd < kFirstOfPool + kPool; fd++)
      t.remove_object(fd, FdKind::kRspreloadTcp, nullptr);
    t.remove_object(7, FdKind::kRspreloadTcp, nullptr);
    return wrong == 0 && g_signal_wrong == 0 && g_over_get >= 100 && none_freed && three_right &&
           all_freed;
  });
  ASSERT_NE(status, -1) << "the child hung (a handler waited for the lookup it interrupted)";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "a lookup or the handler got a wrong object, a handler freed one or the next remove "
         "did not take them all, or few ticks came during a get";
}

// Thread U removes an entry while it holds a lock that thread T's signal
// handler wants, T's handler having interrupted a read: a grace period
// waited for under the lock would wait for T's read, whose end waits for
// the lock. Under RetireLater it is waited for after the unlock. In a
// child, so a hang fails the test.
std::mutex g_wanted;
std::atomic<bool> g_handler_waits{false};
void want_the_lock(int) {
  g_handler_waits = true;
  std::lock_guard<std::mutex> hold(g_wanted);
}

TEST(FdTableTest, ARemoveUnderALockAHandlerWantsWaitsAfterIt) {
  const int status = in_child([] {
    FdTable t;
    t.insert(5, FdKind::kRspreloadTcp, std::make_shared<int>(5));
    struct sigaction sa {};
    sa.sa_handler = want_the_lock;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, nullptr);
    std::unique_lock<std::mutex> held(g_wanted);
    std::thread reader([&] {
      (void)t.kind(5);  // registered with RCU
      urcu_bp_read_lock();
      raise(SIGUSR1);  // its handler waits for g_wanted inside the read
      urcu_bp_read_unlock();
    });
    while (!g_handler_waits) poll(nullptr, 0, 1);
    std::shared_ptr<void> o;
    {
      const FdTable::RetireLater later;
      t.remove_object(5, FdKind::kRspreloadTcp, &o);
      held.unlock();
    }
    reader.join();
    return o && *static_cast<int*>(o.get()) == 5;
  });
  ASSERT_NE(status, -1) << "the child hung (a grace period waited for under the handler's lock)";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the remove lost its object";
}

TEST(FdTableTest, ConcurrentLookupsDuringRemove) {
  FdTable t;
  // Each remove waits out the readers' grace period (about 1 ms with the
  // readers spinning on this machine's two cores, 3 under TSan): a few
  // thousand removes are seconds, and races show in the first ones.
#ifdef SS_TSAN
  constexpr int kRounds = 30;
#else
  constexpr int kRounds = 100;
#endif
  constexpr int kFds = 64, kBase = 100, kReaders = 3;
  for (int fd = kBase; fd < kBase + kFds; fd++)
    ASSERT_EQ(t.insert(fd, FdKind::kRsocket, std::make_shared<Obj>(fd)), 0);
  std::atomic<bool> done{false};
  std::atomic<long> bad{0}, found{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; r++)
    readers.emplace_back([&, r] {
      while (!done.load(std::memory_order_relaxed))
        for (int i = 0; i < kFds; i++) {
          int fd = kBase + (i + r * 7) % kFds;
          auto o = t.get<Obj>(fd, FdKind::kRsocket);
          if (!o) continue;
          found.fetch_add(1, std::memory_order_relaxed);
          if (o->magic != Obj::kAlive || o->fd != fd) bad.fetch_add(1);
        }
    });
  for (int round = 0; round < kRounds; round++)
    for (int fd = kBase; fd < kBase + kFds; fd++) {
      auto o = t.remove<Obj>(fd, FdKind::kRsocket);
      if (!o || o->fd != fd) bad.fetch_add(1);
      o.reset();  // the table's reference was the last unless a reader holds one
      if (t.insert(fd, FdKind::kRsocket, std::make_shared<Obj>(fd))) bad.fetch_add(1);
    }
  done = true;
  for (auto& th : readers) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(found.load(), 0);
}

}  // namespace
}  // namespace ss
