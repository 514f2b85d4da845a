#include "librsocket/linger_service.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <system_error>
#include <thread>

#include "librsocket/socket.h"

namespace ss::rs {

namespace {
// How often a lingering connection is looked at: often enough that the
// peer's close is answered promptly, rarely enough to cost nothing.
constexpr auto kStep = std::chrono::milliseconds(2);
}  // namespace

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
                     l.running_ = false;
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
    if (!exiting_) {
      socks_.push_back(s);
      if (running_) return;
      try {
        // Detached: it ends by itself once nothing lingers, so no thread is
        // left behind and exit never has to join one.
        std::thread t([this] { run(); });
        pthread_setname_np(t.native_handle(), "ss-linger");  // named before it is seen
        t.detach();
        running_ = true;
        return;
      } catch (const std::system_error&) {
        socks_.pop_back();  // no thread to be had: the caller does it
      }
    }
  }
  // At exit (the drain has begun) or without a thread: finish it here,
  // bounded by its linger time.
  while (!s->linger_step()) std::this_thread::sleep_for(kStep);
}

void LingerService::drain() {
  std::unique_lock<std::mutex> lk(mu_);
  exiting_ = true;  // later lingers are finished by whoever starts them
  cv_.wait(lk, [this] { return socks_.empty(); });
}

void LingerService::run() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!socks_.empty()) {
    std::vector<std::shared_ptr<Socket>> now = socks_;
    lk.unlock();
    std::vector<Socket*> done;
    for (auto& s : now)
      if (s->linger_step()) done.push_back(s.get());
    lk.lock();
    auto finished = std::stable_partition(socks_.begin(), socks_.end(), [&](const auto& s) {
      return std::find(done.begin(), done.end(), s.get()) == done.end();
    });
    socks_.erase(finished, socks_.end());
    lk.unlock();
    // The last references may go here: endpoints are torn down outside mu_
    // (rclose callers wait on it), and before an empty list is reported.
    now.clear();
    lk.lock();
    if (socks_.empty()) break;
    cv_.wait_for(lk, kStep);
  }
  running_ = false;
  cv_.notify_all();
}

}  // namespace ss::rs
