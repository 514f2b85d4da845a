#include "librsocket/linger_service.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "librsocket/socket.h"

namespace ss::rs {

namespace {
// How often a lingering connection is looked at: often enough that the
// peer's close is answered promptly, rarely enough to cost nothing.
constexpr auto kStep = std::chrono::milliseconds(2);
}  // namespace

LingerService::LingerService()
    : thread_({.name = "ss-linger", .child_keeps_users = false},
              [this](ServiceThread::Run& r) { run(r); }) {}

LingerService& LingerService::instance() {
  static LingerService* svc = [] {
    auto* s = new LingerService();  // outlives static destructors
    // A child has no linger thread and no share in the parent's
    // connections: it starts with none (else its exit would wait forever).
    pthread_atfork([] { instance().mu_.lock(); }, [] { instance().mu_.unlock(); },
                   [] {
                     LingerService& l = instance();
                     // Kept, never freed: the parent still owns their resources.
                     static auto* inherited = new std::vector<std::shared_ptr<Socket>>();
                     for (auto& s : l.socks_) {
                       s->forget_linger();  // an rclose here releases at once
                       inherited->push_back(std::move(s));
                     }
                     l.socks_.clear();
                     l.in_hand_ = 0;
                     l.mu_.unlock();
                   });
    // At exit, before the static objects registered earlier are destroyed
    // (an atexit handler runs before those registered before it); every
    // linger ends by its own deadline, so this wait is bounded.
    std::atexit([] { instance().drain(); });
    return s;
  }();
  return *svc;
}

void LingerService::add(std::shared_ptr<Socket> s) {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (std::find(socks_.begin(), socks_.end(), s) != socks_.end()) return;
    // The thread ends by itself once nothing lingers (its own last
    // release), so exit never has to join one.
    if (!exiting_ && thread_.hold() == 0) {
      socks_.push_back(std::move(s));
      return;
    }
  }
  // At exit (the drain has begun) or without a thread: finish it here,
  // bounded by its linger time.
  while (!s->linger_step()) std::this_thread::sleep_for(kStep);
}

void LingerService::drain() {
  std::unique_lock<std::mutex> lk(mu_);
  exiting_ = true;  // later lingers are finished by whoever starts them
  cv_.wait(lk, [this] { return socks_.empty() && in_hand_ == 0; });
}

void LingerService::run(ServiceThread::Run& run) {
  constexpr int kStepMs = std::chrono::milliseconds(kStep).count();
  while (!run.stopping()) {
    std::vector<std::shared_ptr<Socket>> now;
    {
      std::lock_guard<std::mutex> g(mu_);
      now = socks_;
    }
    std::vector<Socket*> done;
    for (auto& s : now)
      if (s->linger_step()) done.push_back(s.get());
    if (!done.empty()) {
      {
        std::lock_guard<std::mutex> g(mu_);
        auto finished = std::stable_partition(socks_.begin(), socks_.end(), [&](const auto& s) {
          return std::find(done.begin(), done.end(), s.get()) == done.end();
        });
        socks_.erase(finished, socks_.end());
        in_hand_ += done.size();
      }
      // The last references may go here: endpoints are torn down outside
      // mu_ (rclose callers wait on it), and before drain hears of it.
      now.clear();
      {
        std::lock_guard<std::mutex> g(mu_);
        in_hand_ -= done.size();
        cv_.notify_all();
      }
      for (size_t i = 0; i < done.size(); i++) thread_.release();  // the last stops this thread
      continue;
    }
    now.clear();
    run.sleep(kStepMs);
  }
}

}  // namespace ss::rs
