#include "librsocket/listen_service.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>

#include "core/base/log.h"
#include "librsocket/socket.h"

namespace ss::rs {

namespace {
// Bounds how late a silent peer's hello is dropped.
constexpr int kHousekeepingMs = 1000;
}

ListenService::ListenService()
    : thread_({.name = "ss-listen"}, [this](ServiceThread::Run& r) { run(r); }) {}

ListenService& ListenService::instance() {
  static ListenService* svc = new ListenService();  // outlives static destructors
  return *svc;
}

int ListenService::add(std::shared_ptr<Socket> s) {
  std::lock_guard<std::mutex> g(mu_);
  if (int rc = thread_.hold()) return rc;
  listeners_.push_back(std::move(s));
  thread_.wake();
  return 0;
}

void ListenService::remove(Socket* s) {
  std::shared_ptr<Socket> keep;  // released outside the lock
  {
    std::lock_guard<std::mutex> g(mu_);
    auto it = std::find_if(listeners_.begin(), listeners_.end(),
                           [s](const std::shared_ptr<Socket>& l) { return l.get() == s; });
    if (it == listeners_.end()) return;
    keep = std::move(*it);
    listeners_.erase(it);
    thread_.wake();
  }
  thread_.release();  // outside mu_: the last one joins the thread
}

void ListenService::run(ServiceThread::Run& run) {
  std::vector<pollfd> fds;
  std::vector<std::shared_ptr<Socket>> socks;
  while (!run.stopping()) {
    {
      std::lock_guard<std::mutex> g(mu_);
      socks = listeners_;
    }
    fds.assign(1, pollfd{});  // [0]: the thread's wake-up
    for (auto& s : socks) fds.push_back({s->listener_fd(), POLLIN, 0});
    int n = run.poll(fds, kHousekeepingMs);
    if (n < 0 && n != -EINTR) SS_WARN("listen service: poll failed: errno %d", -n);
    // Serve every listener: also expires hellos that never came.
    for (auto& s : socks) s->serve_requests();
    socks.clear();
  }
}

}  // namespace ss::rs
