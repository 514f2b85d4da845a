#include "interpose/arrival_edges.h"

#include <sys/epoll.h>

#include <algorithm>
#include <cerrno>
#include <new>

#include "core/base/deadline.h"
#include "core/base/log.h"
#include "core/base/sandbox.h"
#include "interpose/real.h"

namespace ss::interpose {

namespace {
// A level-triggered member's mark in the set's data: its events move no count.
constexpr uint64_t kLevel = uint64_t{1} << 32;
}  // namespace

ArrivalEdges::~ArrivalEdges() {
  if (ep_ >= 0) real().close(ep_);
}

bool ArrivalEdges::made_locked(std::initializer_list<int> sources) {
  if (failed_) return false;
  if (ep_ < 0) {
    // Locked in: no new descriptor (sandbox.h), and not tried again.
    const int ep = sandbox::locked_in() ? -1 : real().epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) {
      SS_WARN("no epoll set for edge-triggered arrivals (%s): EPOLLET reports as level",
              sandbox::locked_in() ? "locked in by a seccomp filter" : "out of descriptors");
      failed_ = true;
      return false;
    }
    ep_ = ep;
  }
  for (const int fd : sources) {
    if (fd < 0 || std::find(sources_.begin(), sources_.end(), fd) != sources_.end()) continue;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLET;
    ev.data.u64 = static_cast<uint32_t>(fd);
    if (real().epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev) < 0 && errno != EEXIST) {
      SS_WARN("fd %d: not in the set for edge-triggered arrivals: EPOLLET reports as level", fd);
      failed_ = true;
      return false;
    }
    sources_.push_back(fd);
  }
  return true;
}

bool ArrivalEdges::count(std::initializer_list<int> sources, uint64_t* n) {
  std::lock_guard<std::mutex> lock(mu_);
  *n = seen_;
  if (!made_locked(sources)) return false;
  epoll_event evs[8];
  const int got = real().epoll_wait(ep_, evs, 8, 0);
  for (int i = 0; i < got; i++)
    if (!(evs[i].data.u64 & kLevel)) {
      seen_++;
      kick_.wake();
      break;
    }
  *n = seen_;
  return true;
}

int ArrivalEdges::sleep_fd(std::initializer_list<int> sources, const std::vector<pollfd>& level,
                           int* kick_fd, int* sleep_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  *kick_fd = -1;
  if (!made_locked(sources)) return -1;
  if (!level_added_) {
    for (const pollfd& p : level) {
      epoll_event ev{};
      ev.events = static_cast<uint16_t>(p.events);
      ev.data.u64 = kLevel | static_cast<uint32_t>(p.fd);
      if (real().epoll_ctl(ep_, EPOLL_CTL_ADD, p.fd, &ev) < 0 && errno != EEXIST) return -1;
    }
    level_added_ = true;
  }
  if (kick_.join() == 0)
    *kick_fd = kick_.fd();
  else
    cut_sleep_ms(sleep_ms);
  return ep_;
}

void ArrivalEdges::leave(bool kicked) {
  std::lock_guard<std::mutex> lock(mu_);
  kick_.leave(kicked);
}

void ArrivalEdges::fork_child() {
  new (&mu_) std::mutex;  // a parent thread may have held it
  kick_.fork_child();
  if (ep_ >= 0) real().close(ep_);
  ep_ = -1;
  sources_.clear();
  level_added_ = false;
  failed_ = false;
}

}  // namespace ss::interpose
