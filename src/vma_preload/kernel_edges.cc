#include "vma_preload/kernel_edges.h"

#include <sys/epoll.h>

#include <cerrno>

#include "core/base/log.h"
#include "interpose/real.h"

namespace ss::vma::preload {

using interpose::real;

KernelEdges::~KernelEdges() {
  if (ep_ >= 0) real().close(ep_);
}

bool KernelEdges::made_locked(int fd) {
  if (ep_ >= 0) return true;
  if (failed_) return false;
  const int ep = real().epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLET;
  ev.data.fd = fd;
  if (ep < 0 || real().epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
    SS_WARN(
        "fd %d: no epoll set for its kernel socket's edges (%s): EPOLLET reports its rings' "
        "arrivals only",
        fd, ep < 0 ? "out of descriptors" : "epoll_ctl refused");
    if (ep >= 0) real().close(ep);
    failed_ = true;
    return false;
  }
  ep_ = ep;
  return true;
}

uint64_t KernelEdges::count(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!made_locked(fd)) return seen_;
  epoll_event evs[8];
  const int n = real().epoll_wait(ep_, evs, 8, 0);
  for (int i = 0; i < n; i++)
    if (evs[i].data.fd == fd) {
      seen_++;
      break;
    }
  return seen_;
}

int KernelEdges::sleep_fd(int fd, const std::vector<pollfd>& rings) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!made_locked(fd)) return -1;
  if (!rings_added_) {
    for (const pollfd& r : rings) {
      epoll_event ev{};
      ev.events = static_cast<uint16_t>(r.events);
      ev.data.fd = r.fd;
      if (real().epoll_ctl(ep_, EPOLL_CTL_ADD, r.fd, &ev) < 0 && errno != EEXIST) return -1;
    }
    rings_added_ = true;
  }
  return ep_;
}

}  // namespace ss::vma::preload
