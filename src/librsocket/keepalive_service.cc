#include "librsocket/keepalive_service.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "core/base/proc_sys.h"
#include "librsocket/socket.h"

namespace ss::rs {

KeepaliveService::KeepaliveService()
    : thread_({.name = "ss-keepalive"}, [this](ServiceThread::Run& r) { run(r); }) {}

KeepaliveService& KeepaliveService::instance() {
  static KeepaliveService* svc = new KeepaliveService();  // outlives static destructors
  return *svc;
}

unsigned default_keepalive_seconds() {
  const long v = proc_sys_number("net/ipv4/tcp_keepalive_time", 0, 7200);
  return v > 0 ? static_cast<unsigned>(v) : 7200;
}

int KeepaliveService::add(const std::shared_ptr<Socket>& s, unsigned interval_s) {
  std::lock_guard<std::mutex> g(mu_);
  auto interval = std::chrono::seconds(std::max(interval_s, 1u));
  auto due = std::chrono::steady_clock::now() + interval;
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const Entry& e) { return e.raw == s.get(); });
  if (it != entries_.end()) {
    *it = {s, s.get(), interval, due};
  } else {
    if (int rc = thread_.hold()) return rc;
    entries_.push_back({s, s.get(), interval, due});
  }
  thread_.wake();  // it sleeps until the earliest due time
  return 0;
}

void KeepaliveService::remove(Socket* s) {
  size_t gone;
  {
    std::lock_guard<std::mutex> g(mu_);
    auto left = std::remove_if(entries_.begin(), entries_.end(),
                               [s](const Entry& e) { return e.raw == s; });
    gone = entries_.end() - left;
    entries_.erase(left, entries_.end());
  }
  while (gone--) thread_.release();  // outside mu_: the last one joins the thread
}

void KeepaliveService::run(ServiceThread::Run& run) {
  std::unique_lock<std::mutex> lk(mu_);
  while (!run.stopping()) {
    auto now = std::chrono::steady_clock::now();
    auto next = now + std::chrono::hours(1);
    std::vector<std::shared_ptr<Socket>> due;
    for (Entry& e : entries_) {
      if (e.due <= now) {
        if (auto s = e.sock.lock()) due.push_back(std::move(s));
        e.due = now + e.interval;
      }
      next = std::min(next, e.due);
    }
    lk.unlock();
    if (!due.empty()) {
      for (auto& s : due) s->send_keepalive();
      due.clear();
    } else {
      auto ms = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
      run.sleep(static_cast<int>(ms));
    }
    lk.lock();
  }
}

}  // namespace ss::rs
