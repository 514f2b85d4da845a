#include "vma_preload/tcp_park.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <iterator>
#include <mutex>

#include "core/base/log.h"
#include "interpose/real.h"
#include "vma_preload/socket_record.h"

namespace ss::vma::preload {
namespace {

using Clock = std::chrono::steady_clock;

struct Parked {
  std::shared_ptr<SocketRecord> rec;
  int kernel_fd;  // a duplicate of the closed descriptor: the kernel socket
  Clock::time_point until;
};

std::mutex g_mu;
std::vector<Parked>* g_parked = new std::vector<Parked>;  // g_mu; never freed: used at exit

// The parked connections `pick` chooses, to their kernel sockets.
template <typename F>
void to_kernel(const F& pick, const char* why) {
  std::vector<Parked> due;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    const auto picked = std::partition(g_parked->begin(), g_parked->end(),
                                       [&](const Parked& p) { return !pick(p); });
    std::move(picked, g_parked->end(), std::back_inserter(due));
    g_parked->erase(picked, g_parked->end());
  }
  for (Parked& p : due) {
    p.rec->hand_parked_to_kernel(p.kernel_fd, why);
    interpose::real().close(p.kernel_fd);
  }
}

}  // namespace

bool park_tcp(std::shared_ptr<SocketRecord> rec, int fd) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_parked->size() >= kMaxParked) return false;
  const int dup = interpose::real().fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return false;
  g_parked->push_back({std::move(rec), dup, Clock::now() + std::chrono::milliseconds(kParkMs)});
  SS_DEBUG("fd %d: closed after a fork: the connection waits %d ms for a fork child to take it", fd,
           kParkMs);
  return true;
}

void parked_fork_child() {
  new (&g_mu) std::mutex;  // a parent thread may have held it
  for (const Parked& p : *g_parked) interpose::real().close(p.kernel_fd);
  g_parked = new std::vector<Parked>;  // the parent's list left as it is
}

void parked_expire(bool all) {
  const Clock::time_point now = Clock::now();
  to_kernel([&](const Parked& p) { return all || p.until <= now; },
            "closed here after a fork; no fork child took it");
}

void parked_to_kernel(uint64_t id) {
  to_kernel([&](const Parked& p) { return p.rec->id == id; },
            "closed here after a fork; a fork child asked for the kernel's");
}

int parked_give(uint64_t id, std::string* ifname, std::vector<uint8_t>* bytes) {
  Parked p;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = std::find_if(g_parked->begin(), g_parked->end(),
                           [&](const Parked& q) { return q.rec->id == id; });
    if (it == g_parked->end()) {
      bool open = false;
      for_each_record([&](int, const std::shared_ptr<SocketRecord>& s) {
        open = s->id == id;
        return !open;
      });
      return open ? -EBUSY : -ENOENT;
    }
    p = std::move(*it);
    g_parked->erase(it);
  }
  const int err = p.rec->give_tcp_to_stack(ifname, bytes);
  if (err < 0)
    p.rec->hand_parked_to_kernel(p.kernel_fd,
                                 "closed here after a fork; no fork child could take it");
  interpose::real().close(p.kernel_fd);
  return err;
}

}  // namespace ss::vma::preload
