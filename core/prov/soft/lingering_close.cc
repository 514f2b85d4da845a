#include "core/prov/soft/lingering_close.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace ss::prov::soft {

namespace {
// A peer that never closes costs us its socket for this long at most.
constexpr std::chrono::seconds kLingerBound{5};
constexpr int kTickMs = 100;

struct Lingering {
  int fd;
  std::chrono::steady_clock::time_point deadline;
};

std::mutex mu;
std::vector<Lingering> waiting;
bool running = false;

// Reads what is there; true once the peer has closed (or failed).
bool drained(int fd) {
  char sink[4096];
  for (;;) {
    ssize_t n = ::recv(fd, sink, sizeof sink, MSG_DONTWAIT);
    if (n > 0) continue;
    return n == 0 || (errno != EAGAIN && errno != EINTR);
  }
}

void run() {
  std::vector<pollfd> fds;
  for (;;) {
    {
      std::lock_guard<std::mutex> g(mu);
      auto now = std::chrono::steady_clock::now();
      for (size_t i = 0; i < waiting.size();) {
        if (drained(waiting[i].fd) || now > waiting[i].deadline) {
          ::close(waiting[i].fd);
          waiting[i] = waiting.back();
          waiting.pop_back();
        } else {
          i++;
        }
      }
      if (waiting.empty()) {
        running = false;
        return;
      }
      fds.clear();
      for (const Lingering& l : waiting) fds.push_back({l.fd, POLLIN, 0});
    }
    ::poll(fds.data(), fds.size(), kTickMs);
  }
}
}  // namespace

void lingering_close(int fd) {
  ::shutdown(fd, SHUT_WR);
  if (drained(fd)) {
    ::close(fd);
    return;
  }
  std::lock_guard<std::mutex> g(mu);
  waiting.push_back({fd, std::chrono::steady_clock::now() + kLingerBound});
  if (!running) {
    running = true;
    std::thread(run).detach();
  }
}

}  // namespace ss::prov::soft
