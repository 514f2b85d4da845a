// ServiceThread: the thread lives exactly while it has users, a stopping
// thread never hangs its release (nor eats its successor's wake-up),
// failures come back as -errno, and a fork child gets a fresh thread.
// Scenarios that could hang run in a forked child the test kills after a
// bound, so a regression fails instead of stalling the run.
#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "core/base/service_thread.h"

namespace ss {
namespace {

using namespace std::chrono_literals;

// Threads of this process whose name is `name` (asleep: only those the
// kernel shows sleeping, state S).
int threads_named(const char* name, bool asleep = false) {
  int n = 0;
  DIR* d = opendir("/proc/self/task");
  if (!d) return -1;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const std::string dir = std::string("/proc/self/task/") + e->d_name;
    FILE* f = fopen((dir + "/comm").c_str(), "re");
    if (!f) continue;  // it exited meanwhile
    char comm[32] = {};
    bool named = false;
    if (fgets(comm, sizeof comm, f)) {
      comm[strcspn(comm, "\n")] = 0;
      named = strcmp(comm, name) == 0;
    }
    fclose(f);
    if (named && asleep) {  // "pid (comm) S ...": the state after the name
      FILE* st = fopen((dir + "/stat").c_str(), "re");
      char line[256] = {};
      named = st && fgets(line, sizeof line, st) && strstr(line, ") S ");
      if (st) fclose(st);
    }
    n += named;
  }
  closedir(d);
  return n;
}

// A joined thread leaves /proc/self/task a moment after pthread_join
// returns: wait (bounded) for the count to settle at `want`.
bool settles_at(const char* name, int want) {
  for (int i = 0; i < 5000; i++) {
    if (threads_named(name) == want) return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

// Runs fn in a forked child and returns its result as the exit code, or
// -1 when the child did not finish within limit (it is killed, its
// threads' stacks printed first when gdb is there: a child that hangs
// once in many runs shows the lock it waits on).
int in_child(const std::function<int()>& fn, std::chrono::seconds limit = 30s) {
  pid_t pid = fork();
  if (pid < 0) return -2;
  if (pid == 0) _exit(fn());
  auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      const std::string bt = "command -v gdb >/dev/null && timeout 60 gdb -q -batch -p " +
                             std::to_string(pid) + " -ex 'thread apply all bt' 1>&2";
      if (std::system(bt.c_str()) != 0) std::fprintf(stderr, "(no stacks of the child)\n");
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(5ms);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -3;
}

// A body that sleeps without a timeout: only its own wake-up ends a sleep,
// so a lost stop signal hangs the join.
void sleep_until_stopped(ServiceThread::Run& r) {
  while (!r.stopping()) r.sleep(-1);
}

TEST(ServiceThreadTest, StartsOnFirstUserAndIsGoneAfterTheLast) {
  ServiceThread t({.name = "ss-test-life"}, sleep_until_stopped);
  EXPECT_EQ(threads_named("ss-test-life"), 0);
  ASSERT_EQ(t.hold(), 0);
  EXPECT_EQ(threads_named("ss-test-life"), 1);  // named before hold() returns
  ASSERT_EQ(t.hold(), 0);
  EXPECT_EQ(threads_named("ss-test-life"), 1);  // one thread for all users
  t.release();
  EXPECT_TRUE(t.running());
  EXPECT_EQ(threads_named("ss-test-life"), 1);
  t.release();
  EXPECT_FALSE(t.running());
  EXPECT_TRUE(settles_at("ss-test-life", 0));
  t.release();  // unmatched: ignored, the count stays at zero
  EXPECT_EQ(t.users(), 0);
}

TEST(ServiceThreadTest, LastUserLeavingWhileAnotherArrivesNeverHangs) {
  int rc = in_child([] {
    std::atomic<int> bodies{0};
    ServiceThread t({.name = "ss-test-race"}, [&](ServiceThread::Run& r) {
      bodies++;
      sleep_until_stopped(r);
    });
    auto churn = [&] {
      for (int i = 0; i < 2000; i++) {
        if (t.hold() != 0) return;
        t.wake();
        t.release();
      }
    };
    std::thread a(churn), b(churn);
    a.join();
    b.join();
    if (t.users() != 0 || t.running()) return 2;
    if (bodies.load() < 2) return 3;  // the thread really stopped and restarted
    return settles_at("ss-test-race", 0) ? 0 : 4;
  });
  EXPECT_EQ(rc, 0) << "-1: a release's join hung";
}

TEST(ServiceThreadTest, WakeUpReachesTheCurrentThread) {
  std::atomic<int> wakes{0};
  ServiceThread t({.name = "ss-test-wake"}, [&](ServiceThread::Run& r) {
    while (!r.stopping())
      if (r.sleep(-1) > 0 && !r.stopping()) wakes++;
  });
  auto woken = [&](int want) {
    for (int i = 0; i < 10000 && wakes.load() < want; i++) std::this_thread::sleep_for(1ms);
    return wakes.load() >= want;
  };
  ASSERT_EQ(t.hold(), 0);
  ASSERT_EQ(t.wake(), 0);
  EXPECT_TRUE(woken(1));
  // A successor thread gets its own wake-ups.
  t.release();
  ASSERT_EQ(t.hold(), 0);
  ASSERT_EQ(t.wake(), 0);
  EXPECT_TRUE(woken(2));
  t.release();
}

TEST(ServiceThreadTest, ReleaseFromTheThreadItselfEndsIt) {
  int rc = in_child([] {
    ServiceThread* self = nullptr;
    ServiceThread t({.name = "ss-test-self"}, [&](ServiceThread::Run& r) {
      while (!r.stopping()) {
        self->release();  // as the linger thread does with its last connection
        r.sleep(-1);
      }
    });
    self = &t;
    if (t.hold() != 0) return 2;
    return settles_at("ss-test-self", 0) && !t.running() ? 0 : 3;
  });
  EXPECT_EQ(rc, 0);
}

// A fork right after a thread stopped itself (a listener's last user
// gone after a pre-forking server's first fork): the thread may still be
// in the runtime's teardown. Under ASan (clang 14) a child forked then
// inherits the thread registry's lock and its first pthread_create
// waits forever, unless the fork waits for the thread to be gone.
TEST(ServiceThreadTest, ForkChildOfAThreadStoppingItselfStartsThreads) {
  int rc = in_child([] {
    ServiceThread* self = nullptr;
    ServiceThread t({.name = "ss-test-leave"}, [&](ServiceThread::Run&) { self->release(); });
    self = &t;
    for (int i = 0; i < 100; i++) {
      if (t.hold() != 0) return 2;
      while (t.running()) {
      }
      // From at once to 100 µs later: somewhere in the thread's way out.
      const auto at = std::chrono::steady_clock::now() + std::chrono::microseconds(i % 100);
      while (std::chrono::steady_clock::now() < at) {
      }
      pid_t pid = fork();
      if (pid < 0) return 3;
      if (pid == 0) {
        std::thread th([] {});
        th.join();
        _exit(0);
      }
      int status = 0;
      for (int ms = 0; waitpid(pid, &status, WNOHANG) == 0; ms++) {
        if (ms > 10000) {
          kill(pid, SIGKILL);
          waitpid(pid, &status, 0);
          return 4;
        }
        std::this_thread::sleep_for(1ms);
      }
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 5;
    }
    return 0;
  });
  EXPECT_EQ(rc, 0) << "4: a child forked as a thread left hung in pthread_create";
}

TEST(ServiceThreadTest, ThreadCreationFailureGivesErrno) {
  // A stack no address space can hold: pthread_create really fails.
  ServiceThread t({.name = "ss-test-nostk", .stack_size = size_t{1} << 50}, sleep_until_stopped);
  EXPECT_EQ(t.hold(), -EAGAIN);
  EXPECT_EQ(t.users(), 0);
  EXPECT_FALSE(t.running());
  EXPECT_EQ(threads_named("ss-test-nostk"), 0);
  t.release();  // harmless: nothing was counted
}

TEST(ServiceThreadTest, EventfdFailureGivesErrnoAndALaterHoldWorks) {
  int rc = in_child([] {
    ServiceThread t({.name = "ss-test-nofd"}, sleep_until_stopped);
    rlimit old;
    getrlimit(RLIMIT_NOFILE, &old);
    int lowest_free = dup(0);
    close(lowest_free);
    rlimit low = old;
    low.rlim_cur = lowest_free;  // no descriptor left
    setrlimit(RLIMIT_NOFILE, &low);
    int first = t.hold();
    setrlimit(RLIMIT_NOFILE, &old);
    if (first != -EMFILE) return 2;
    if (t.users() != 0 || threads_named("ss-test-nofd") != 0) return 3;
    if (t.hold() != 0 || threads_named("ss-test-nofd") != 1) return 4;
    t.release();
    return settles_at("ss-test-nofd", 0) ? 0 : 5;
  });
  EXPECT_EQ(rc, 0);
}

TEST(ServiceThreadTest, ForkChildGetsAFreshThread) {
  ServiceThread kept({.name = "ss-test-keep"}, sleep_until_stopped);
  ServiceThread dropped({.name = "ss-test-drop", .child_keeps_users = false}, sleep_until_stopped);
  ASSERT_EQ(kept.hold(), 0);
  ASSERT_EQ(dropped.hold(), 0);
  // Forked only once both threads sleep: a thread still starting may
  // hold a lock of the allocator's (ASan's, clang 14) that the child,
  // which has no such thread, then waits on for good.
  for (int i = 0; i < 5000; i++) {
    if (threads_named("ss-test-keep", true) == 1 && threads_named("ss-test-drop", true) == 1) break;
    std::this_thread::sleep_for(1ms);
  }
  int rc = in_child([&] {
    // No thread crosses fork.
    if (threads_named("ss-test-keep") != 0 || kept.running()) return 2;
    if (kept.users() != 1 || dropped.users() != 0) return 3;
    // An inherited user gets its thread at the next wake-up ...
    if (kept.wake() != 0 || threads_named("ss-test-keep") != 1) return 4;
    // ... and a new user of the dropped service at its hold.
    if (dropped.hold() != 0 || threads_named("ss-test-drop") != 1) return 5;
    kept.release();
    dropped.release();
    return settles_at("ss-test-keep", 0) && settles_at("ss-test-drop", 0) ? 0 : 6;
  });
  EXPECT_EQ(rc, 0);
  // The parent's thread is untouched.
  EXPECT_EQ(threads_named("ss-test-keep"), 1);
  kept.release();
  dropped.release();
  EXPECT_TRUE(settles_at("ss-test-keep", 0));
}

}  // namespace
}  // namespace ss
