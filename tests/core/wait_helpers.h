// Test helpers for the readiness/wait module: a fake Pollable whose state
// the test sets, and a way to interrupt a blocked call with signals.
#pragma once
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include <fcntl.h>

#include <memory>
#include <utility>
#include <vector>

#include "core/base/fd_table.h"
#include "core/base/kick.h"
#include "core/base/mixed_poll.h"
#include "core/base/pollable.h"

namespace ss::testing {

// Sleep at once, no periodic wake-up: only a wake-up ends a sleep.
constexpr PollTiming kSleepAtOnce{std::chrono::microseconds(0), 0};
// The test's own bound on a wait meant to end by a wake-up (a broken
// wake-up then shows as a 0, not a hang).
constexpr int kLongMs = 30000;

// A Pollable with a provider-like event fd (`source`: an eventfd the test
// writes) and a Kick, as rsocket's Socket has.
class FakePollable final : public Pollable {
 public:
  FakePollable() : source_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~FakePollable() { ::close(source_); }

  // A state change by another thread: the kick wakes sleepers.
  void set_ready(short ev) {
    std::lock_guard<std::mutex> g(mu_);
    ready_ = ev;
    changes_++;
    kick_.wake();
  }
  // An event that leaves readiness as it was (more data on a readable
  // object): only its change count says so.
  void another_event() {
    std::lock_guard<std::mutex> g(mu_);
    changes_++;
    kick_.wake();
  }
  void set_counts_changes(bool on) { counts_changes_ = on; }
  // A change nobody signals (only a re-scan finds it).
  void set_ready_silently(short ev) {
    std::lock_guard<std::mutex> g(mu_);
    ready_ = ev;
  }
  // The provider's event: ready and the source fd readable, no kick.
  void signal_source(short ev) {
    {
      std::lock_guard<std::mutex> g(mu_);
      ready_ = ev;
      changes_++;
    }
    uint64_t one = 1;
    if (::write(source_, &one, sizeof one) < 0) abort();
  }
  void set_time_only(bool on) { time_only_ = on; }
  // Pollable::kernel_served's answer (an epoll set then leaves it to the kernel).
  void set_kernel_served(bool on) { kernel_served_ = on; }
  bool kernel_served() override {
    if (auto fn = std::exchange(on_kernel_served_, nullptr)) fn();
    return kernel_served_;
  }
  // Runs once inside the next kernel_served() (an epoll set asks it after
  // its lookup, before its lock): a change racing the set's call.
  void on_kernel_served(std::function<void()> fn) { on_kernel_served_ = std::move(fn); }
  void set_sleep_cut(int ms) { cut_ms_ = ms; }
  // The next wait_target finds the object ready (a change between the
  // caller's scan and its arming).
  void ready_at_next_arm(short ev) { ready_at_arm_ = ev; }
  // No waiter left: a wake() writes nothing, so the kick stays quiet.
  bool kick_readable() {
    std::lock_guard<std::mutex> g(mu_);
    if (kick_.fd() < 0) return false;
    pollfd p{kick_.fd(), POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
  }

  short readiness(short events) override {
    std::lock_guard<std::mutex> g(mu_);
    scans++;
    return ready_ & (events | POLLERR | POLLHUP);
  }
  WaitTarget wait_target(short events, int* sleep_ms) override {
    std::lock_guard<std::mutex> g(mu_);
    if (ready_at_arm_) {
      ready_ = ready_at_arm_;
      ready_at_arm_ = 0;
    }
    if (ready_ & (events | POLLERR | POLLHUP)) return {};
    if (time_only_) return {WaitTarget::kTimeOnly};
    WaitTarget t{source_, POLLIN, -1};
    if (kick_.join() == 0) t.kick_fd = kick_.fd();
    if (cut_ms_ > 0) *sleep_ms = *sleep_ms < 0 ? cut_ms_ : std::min(*sleep_ms, cut_ms_);
    armed++;
    return t;
  }
  bool change_count(uint64_t* count) override {
    std::lock_guard<std::mutex> g(mu_);
    *count = changes_;
    return counts_changes_;
  }
  void after_wait(const WaitTarget& t, bool kicked) override {
    std::lock_guard<std::mutex> g(mu_);
    if (t.kick_fd >= 0) kick_.leave(kicked);
    uint64_t v;
    if (::read(source_, &v, sizeof v) < 0) { /* not signalled */
    }
    disarmed++;
  }

  std::atomic<int> scans{0}, armed{0}, disarmed{0};

 private:
  std::mutex mu_;
  Kick kick_;
  const int source_;
  short ready_ = 0;
  short ready_at_arm_ = 0;
  bool time_only_ = false;
  bool counts_changes_ = false;
  std::atomic<bool> kernel_served_{false};
  std::function<void()> on_kernel_served_;
  uint64_t changes_ = 0;
  int cut_ms_ = 0;
};

// Fake Pollables in a table of the test's own, each named by a /dev/null
// descriptor (which the kernel would report ready at once: a Pollable's
// readiness must come only from the object), removed and closed at the end.
class PollableTable {
 public:
  ~PollableTable() {
    for (auto& [fd, kind] : entries_) {
      table.remove_object(fd, kind, nullptr);
      ::close(fd);
    }
  }
  // A fresh fake under a fresh descriptor, entered with `kind` (any).
  int add(std::shared_ptr<FakePollable>* out, FdKind kind = FdKind::kRspreloadTcp) {
    int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (fd < 0) abort();
    auto o = std::make_shared<FakePollable>();
    if (table.insert(fd, kind, o) != 0) abort();
    entries_.push_back({fd, kind});
    *out = o;
    return fd;
  }
  FdTable table;

 private:
  std::vector<std::pair<int, FdKind>> entries_;
};

// SIGUSR1's handler for the scope, with or without SA_RESTART.
class ScopedHandler {
 public:
  explicit ScopedHandler(bool restart, int sig = SIGUSR1) : sig_(sig) {
    struct sigaction sa {};
    sa.sa_handler = [](int) { handled++; };
    sa.sa_flags = restart ? SA_RESTART : 0;
    sigemptyset(&sa.sa_mask);
    sigaction(sig_, &sa, &old_);
  }
  ~ScopedHandler() { sigaction(sig_, &old_, nullptr); }
  ScopedHandler(const ScopedHandler&) = delete;
  ScopedHandler& operator=(const ScopedHandler&) = delete;
  static inline std::atomic<int> handled{0};

 private:
  int sig_;
  struct sigaction old_ {};
};

// Runs call() on a thread and sends it SIGUSR1 every 10 ms until it
// returns; a call still blocked after 10 s is released by release() (and
// its result is then whatever that gives). Returns call()'s result.
inline int interrupt_until_done(const std::function<int()>& call,
                                const std::function<void()>& release) {
  std::atomic<bool> done{false};
  int rc = 0;
  std::thread t([&] {
    rc = call();
    done = true;
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done && std::chrono::steady_clock::now() < deadline) {
    pthread_kill(t.native_handle(), SIGUSR1);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!done) release();
  t.join();
  return rc;
}

}  // namespace ss::testing
