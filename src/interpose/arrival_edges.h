// Arrivals for an edge-triggered epoll member, counted by the kernel.
// Linux reports EPOLLET at every datagram or connection that arrives, read
// or accepted or not; a preload's own counts see only its own queues, and
// a sleep on a descriptor's level would wake at once while one arrival
// stays unread. An epoll fd holding the sources edge-triggered (a kernel
// socket; an eventfd written at each arrival) has one on its ready list
// from an arrival until the next look: count() looks (no wait) and moves
// by one when any was there; sleep_fd() is readable from the next arrival
// on, or while a descriptor the owner added level-triggered is (its owner
// empties those first).
//
// One source in several epoll sets (each with its own look) shares the
// count: a look that takes an arrival off the set kicks the sleepers, as
// another set's thread may be arming its sleep on the set just emptied.
#pragma once
#include <poll.h>

#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <vector>

#include "core/base/kick.h"

namespace ss::interpose {

// A sleep asked for neither POLLIN nor POLLOUT (POLLRDHUP or POLLPRI may
// be left): an edge-triggered epoll member, its bits reported, waiting
// for its next arrival.
inline bool edge_wait(short events) { return !(events & (POLLIN | POLLOUT)); }

class ArrivalEdges {
 public:
  ArrivalEdges() = default;
  ~ArrivalEdges();
  ArrivalEdges(const ArrivalEdges&) = delete;
  ArrivalEdges& operator=(const ArrivalEdges&) = delete;

  // Arrivals seen on `sources` so far (several between two looks count
  // once, as they make one edge); a source not yet in the set joins it.
  // false when the set cannot be made (out of descriptors, locked in by a
  // seccomp filter: sandbox.h), `*n` then unmoved.
  bool count(std::initializer_list<int> sources, uint64_t* n);
  // The set to sleep on, `level` added once: -1 when it cannot be made.
  // Made, the calling thread joins the sleepers until leave(): `*kick_fd`
  // is its eventfd (kick.h), -1 without one (its sleep then lasts at most
  // deadline.h's kUnwokenSleepMs of `*sleep_ms`).
  int sleep_fd(std::initializer_list<int> sources, const std::vector<pollfd>& level, int* kick_fd,
               int* sleep_ms);
  // After a sleep on sleep_fd(): `kicked`, its eventfd was readable.
  void leave(bool kicked);
  // In a fork child: the set is the parent's (a shared epoll instance
  // would hand one process's edges to the other); the next call makes one.
  void fork_child();

 private:
  bool made_locked(std::initializer_list<int> sources);
  std::mutex mu_;
  int ep_ = -1;               // mu_
  std::vector<int> sources_;  // mu_: in ep_ edge-triggered
  bool level_added_ = false;  // mu_
  bool failed_ = false;       // mu_: not tried again
  uint64_t seen_ = 0;         // mu_
  Kick kick_;                 // mu_: woken when seen_ moves
};

}  // namespace ss::interpose
