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

#include "core/base/kick.h"
#include "core/base/pollable.h"

namespace ss::testing {

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
    kick_.wake();
  }
  // A change nobody signals (only a re-scan finds it).
  void set_ready_silently(short ev) {
    std::lock_guard<std::mutex> g(mu_);
    ready_ = ev;
  }
  // The provider's event: ready and the source fd readable, no kick.
  void signal_source(short ev) {
    set_ready_silently(ev);
    uint64_t one = 1;
    if (::write(source_, &one, sizeof one) < 0) abort();
  }
  void set_time_only(bool on) { time_only_ = on; }
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
  void after_wait(const WaitTarget& t, bool kicked) override {
    std::lock_guard<std::mutex> g(mu_);
    if (t.kick_fd >= 0) kick_.leave(kicked);
    uint64_t v;
    if (::read(source_, &v, sizeof v) < 0) { /* not signalled */ }
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
  int cut_ms_ = 0;
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
