#include "librsocket/keepalive_service.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "librsocket/socket.h"

namespace ss::rs {

KeepaliveService& KeepaliveService::instance() {
  static KeepaliveService* svc = new KeepaliveService();  // outlives static destructors
  return *svc;
}

unsigned default_keepalive_seconds() {
  char buf[32] = {};
  int fd = ::open("/proc/sys/net/ipv4/tcp_keepalive_time", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 7200;
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  long v = n > 0 ? strtol(buf, nullptr, 10) : 0;
  return v > 0 ? static_cast<unsigned>(v) : 7200;
}

void KeepaliveService::add(const std::shared_ptr<Socket>& s, unsigned interval_s) {
  std::lock_guard<std::mutex> g(mu_);
  auto interval = std::chrono::seconds(std::max(interval_s, 1u));
  auto due = std::chrono::steady_clock::now() + interval;
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const Entry& e) { return e.raw == s.get(); });
  if (it != entries_.end())
    *it = {s, s.get(), interval, due};
  else
    entries_.push_back({s, s.get(), interval, due});
  if (!thread_.joinable()) {
    thread_ = std::thread([this, gen = generation_] { run(gen); });
    pthread_setname_np(thread_.native_handle(), "ss-keepalive");
  }
  cv_.notify_all();
}

void KeepaliveService::remove(Socket* s) {
  std::thread done;
  {
    std::lock_guard<std::mutex> g(mu_);
    entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                  [s](const Entry& e) { return e.raw == s; }),
                   entries_.end());
    if (entries_.empty() && thread_.joinable()) {
      generation_++;
      done = std::move(thread_);
    }
    cv_.notify_all();
  }
  if (done.joinable()) {
    if (done.get_id() == std::this_thread::get_id())
      done.detach();
    else
      done.join();
  }
}

void KeepaliveService::run(uint64_t generation) {
  std::unique_lock<std::mutex> lk(mu_);
  while (generation == generation_) {
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
    if (!due.empty()) {
      lk.unlock();
      for (auto& s : due) s->send_keepalive();
      due.clear();
      lk.lock();
      continue;
    }
    cv_.wait_until(lk, next);
  }
}

}  // namespace ss::rs
