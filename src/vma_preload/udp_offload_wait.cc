// Sleeping on an offloaded UDP socket: its wait set is one epoll fd (as
// librsocket's datagram sockets keep one) holding the kernel socket (for
// POLLIN; POLLOUT too while a sleeper wants it) and every rx ring's
// wake-up (an AF_XDP socket is readable while its rx ring holds frames);
// beside it the endpoints' kick, the sleeping thread's eventfd. A sleep
// polls the two, so poll, select and epoll (which nest them in their own
// sleep) and a blocking receive all wake when a frame arrives, and sleep
// for good otherwise.
//
// An edge-triggered epoll member waiting for its next datagram sleeps on
// its ArrivalEdges set instead (interpose/arrival_edges.h).
//
// The kick covers what the rings cannot say: another thread's poll of a
// ring (for a socket of its own) may queue our datagram and leave the ring
// empty before our sleep looks at it. A sleeper joins its endpoints' kicks
// first and then looks at the rings once more, so a datagram queued after
// that look kicks it.
#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>

#include "core/base/log.h"
#include "core/base/deadline.h"
#include "interpose/real.h"
#include "vma_preload/netdev_rings.h"
#include "vma_preload/udp_offload.h"

namespace ss::vma::preload {
namespace {

using interpose::edge_wait;
using interpose::real;

// The tag of an armed target: this bit, kPollOut when it counts as a
// POLLOUT sleeper, kEdgeJoined when it joined the ArrivalEdges' sleepers,
// and one bit per leg whose kick it joined.
constexpr uintptr_t kArmed = uintptr_t{1} << (sizeof(uintptr_t) * 8 - 1);
constexpr uintptr_t kPollOut = kArmed >> 1;
constexpr uintptr_t kEdgeJoined = kArmed >> 2;
constexpr size_t kMaxKickedLegs = sizeof(uintptr_t) * 8 - 3;

bool add(int ep, int fd, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  return real().epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0;
}

}  // namespace

WaitTarget UdpOffload::wait_target(short events, int* sleep_ms) {
  WaitTarget t;
  uintptr_t joined = 0;
  std::vector<int> kicks(legs_.size(), -1);
  for (size_t i = 0; i < legs_.size() && i < kMaxKickedLegs; i++) {
    kicks[i] = legs_[i].ep->join_waiters();
    if (kicks[i] >= 0) joined |= uintptr_t{1} << i;
  }
  if (legs_.size() > kMaxKickedLegs || std::count(kicks.begin(), kicks.end(), -1) > 0)
    cut_sleep_ms(sleep_ms);
  const bool pollout = events & POLLOUT;
  // An edge wait: the kernel socket's next arrival wakes it, not one it
  // holds unread. Without that set (out of descriptors), the wait set below.
  const bool edge = edge_wait(events);
  int edge_fd = -1, edge_kick = -1;
  if (edge) {
    std::vector<pollfd> rings;
    for (const Leg& l : legs_) l.rings->poll_fds(&rings);
    edge_fd = kernel_edges_.sleep_fd({fd_}, rings, &edge_kick, sleep_ms);
  }
  if (edge_fd >= 0) {
    t.fd = edge_fd;
    t.events = POLLIN;
  } else {
    std::lock_guard<std::mutex> lock(wait_mu_);
    if (wait_fd_ < 0) {
      const int ep = real().epoll_create1(EPOLL_CLOEXEC);
      if (ep >= 0 && add(ep, fd_, EPOLLIN)) {
        std::vector<pollfd> rings;
        for (const Leg& l : legs_) l.rings->poll_fds(&rings);
        for (const pollfd& r : rings)
          if (!add(ep, r.fd, static_cast<uint16_t>(r.events))) cut_sleep_ms(sleep_ms);
        wait_fd_ = ep;
      } else if (ep >= 0) {
        real().close(ep);
      }
    }
    if (wait_fd_ >= 0) {
      if (pollout && pollout_sleepers_++ == 0) {
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLOUT;
        ev.data.fd = fd_;
        real().epoll_ctl(wait_fd_, EPOLL_CTL_MOD, fd_, &ev);
      }
      t.fd = wait_fd_;
      t.events = POLLIN;
    } else {  // no wait set: the kernel socket, the rings looked at every millisecond
      SS_DEBUG("fd %d: no wait set (out of descriptors): sleeps of 1 ms", fd_);
      t.fd = fd_;
      t.events = events;
      cut_sleep_ms(sleep_ms, 1);
    }
  }
  // The kicks are this thread's one eventfd (kick.h), polled beside the
  // set, never in it: the set is shared by every thread that sleeps here.
  for (const int k : kicks)
    if (k >= 0) t.kick_fd = k;
  if (edge_kick >= 0) t.kick_fd = edge_kick;
  t.tag =
      kArmed | joined | (pollout && t.fd != fd_ ? kPollOut : 0) | (edge_fd >= 0 ? kEdgeJoined : 0);
  // The rings emptied (a frame left there, ours or not, would keep the
  // sleep from starting), then the last look, now that a datagram queued
  // for us would kick.
  poll_rings();
  if ((events & POLLIN) ? ring_readable() : edge && count_arrivals() != last_arrivals_) {
    after_wait(t);
    return {};
  }
  return t;
}

void UdpOffload::after_wait(const WaitTarget& armed) {
  if (!(armed.tag & kArmed)) return;
  {
    std::lock_guard<std::mutex> lock(wait_mu_);
    if ((armed.tag & kPollOut) && --pollout_sleepers_ == 0) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd_;
      real().epoll_ctl(wait_fd_, EPOLL_CTL_MOD, fd_, &ev);
    }
  }
  pollfd k{armed.kick_fd, POLLIN, 0};
  const bool kicked = k.fd >= 0 && real().poll(&k, 1, 0) == 1;
  for (size_t i = 0; i < legs_.size() && i < kMaxKickedLegs; i++)
    if (armed.tag & (uintptr_t{1} << i)) legs_[i].ep->leave_waiters(kicked);
  if (armed.tag & kEdgeJoined) kernel_edges_.leave(kicked);
}

void UdpOffload::poll_rings() {
  for (Leg& l : legs_) l.rings->stack->poll_rx();
}

bool UdpOffload::queued() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (head_) return true;
  for (Leg& l : legs_)
    if (l.ep->queued()) return true;
  return false;
}

uint64_t UdpOffload::count_arrivals() {
  uint64_t n = 0;
  kernel_edges_.count({fd_}, &n);  // unmoved without its set
  for (Leg& l : legs_) n += l.ep->arrivals();
  return n;
}

uint64_t UdpOffload::arrivals() {
  poll_rings();  // the rings' frames queued first: the count is read after
  const uint64_t n = count_arrivals();
  last_arrivals_ = n;
  return n;
}

}  // namespace ss::vma::preload
