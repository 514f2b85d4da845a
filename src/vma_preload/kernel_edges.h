// The kernel socket's arrivals for an edge-triggered epoll member. Linux
// reports EPOLLET at every datagram or connection that arrives, read or
// accepted or not; the offload's own counts see the rings only, and a
// sleep on the kernel socket's level would wake at once while one of its
// arrivals stays unread. An epoll fd holding the kernel socket
// edge-triggered has it on its ready list from an arrival until the next
// look: count() looks (no wait) and moves by one when it was there;
// sleep_fd() is readable from the next arrival on, or while a frame waits
// on a ring descriptor the owner added (level-triggered: its owner
// empties the rings first).
#pragma once
#include <poll.h>

#include <cstdint>
#include <mutex>
#include <vector>

namespace ss::vma::preload {

// A sleep asked for neither POLLIN nor POLLOUT (POLLRDHUP or POLLPRI may
// be left): an edge-triggered epoll member, its bits reported, waiting
// for its next arrival.
inline bool edge_wait(short events) { return !(events & (POLLIN | POLLOUT)); }

class KernelEdges {
 public:
  KernelEdges() = default;
  ~KernelEdges();
  KernelEdges(const KernelEdges&) = delete;
  KernelEdges& operator=(const KernelEdges&) = delete;

  // Arrivals seen on kernel socket `fd` so far (several between two
  // looks count once, as they make one edge). The set is made at the
  // first call; without it (out of descriptors) the count stays.
  uint64_t count(int fd);
  // The set to sleep on, `rings` added at the first call: -1 when it
  // cannot be made.
  int sleep_fd(int fd, const std::vector<pollfd>& rings);

 private:
  bool made_locked(int fd);
  std::mutex mu_;
  int ep_ = -1;               // mu_
  bool rings_added_ = false;  // mu_
  bool failed_ = false;       // mu_: not tried again
  uint64_t seen_ = 0;         // mu_
};

}  // namespace ss::vma::preload
