#include "librsocket/listen_service.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "core/base/log.h"
#include "librsocket/socket.h"

namespace ss::rs {

namespace {
// Bounds how late a silent peer's hello is dropped.
constexpr int kHousekeepingMs = 1000;
}

ListenService& ListenService::instance() {
  static ListenService* svc = new ListenService();  // outlives static destructors
  return *svc;
}

void ListenService::wake() {
  uint64_t one = 1;
  if (::write(wake_fd_, &one, sizeof one) < 0) SS_DEBUG("listen service wake failed");
}

int ListenService::add(std::shared_ptr<Socket> s) {
  std::lock_guard<std::mutex> g(mu_);
  if (!thread_.joinable()) {
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) return -errno;
    wake_fd_ = fd;
    listeners_.push_back(std::move(s));
    thread_ = std::thread([this, gen = generation_, fd] { run(gen, fd); });
  } else {
    listeners_.push_back(std::move(s));
    wake();
  }
  return 0;
}

void ListenService::remove(Socket* s) {
  std::thread done;
  std::shared_ptr<Socket> keep;  // released outside the lock
  {
    std::lock_guard<std::mutex> g(mu_);
    auto it = std::find_if(listeners_.begin(), listeners_.end(),
                           [s](const std::shared_ptr<Socket>& l) { return l.get() == s; });
    if (it == listeners_.end()) return;
    keep = std::move(*it);
    listeners_.erase(it);
    wake();
    if (listeners_.empty() && thread_.joinable()) {
      generation_++;
      done = std::move(thread_);
      wake_fd_ = -1;  // the stopping thread closes its own
    }
  }
  if (done.joinable()) {
    if (done.get_id() == std::this_thread::get_id())
      done.detach();
    else
      done.join();
  }
}

void ListenService::run(uint64_t generation, int wake_fd) {
  std::vector<pollfd> fds;
  std::vector<std::shared_ptr<Socket>> socks;
  for (;;) {
    {
      std::lock_guard<std::mutex> g(mu_);
      if (generation != generation_) break;
      socks = listeners_;
    }
    fds.clear();
    fds.push_back({wake_fd, POLLIN, 0});
    for (auto& s : socks) fds.push_back({s->listener_fd(), POLLIN, 0});
    int n = ::poll(fds.data(), fds.size(), kHousekeepingMs);
    if (n < 0 && errno != EINTR) SS_WARN("listen service: poll failed: errno %d", errno);
    if (fds[0].revents) {
      uint64_t v;
      if (::read(wake_fd, &v, sizeof v) < 0) { /* already drained */ }
    }
    // Serve every listener: also expires hellos that never came.
    for (auto& s : socks) s->serve_requests();
    socks.clear();
  }
  ::close(wake_fd);  // nobody writes it since the generation moved on
}

}  // namespace ss::rs
