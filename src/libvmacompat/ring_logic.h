// A socket's ring allocation logic (vma_extra(7)): VMA_RING_ALLOCATION_LOGIC_RX
// and _TX at first, then what setsockopt(SO_VMA_RING_ALLOC_LOGIC) sets for
// receive (ingress) and send (engress), each with its user id. libvma picks
// a socket's rings by it; here a netdev has one set of rings that all its
// sockets share (the same ring fds whatever the logic), so the logic is
// checked as libvma checks it and kept, and changes no ring.
#pragma once
#include "core/base/api.h"
#include <sys/socket.h>

#include <cstdint>
#include <mutex>

namespace ss::vma {

class RingLogic {
 public:
  struct Side {
    int logic = 0;         // ring_logic_t
    uint32_t user_id = 0;  // VMA_RING_ALLOC_MASK_RING_USER_ID's, else 0
  };
  RingLogic(int rx, int tx) : rx_{rx, 0}, tx_{tx, 0} {}

  // setsockopt's value, a struct vma_ring_alloc_logic_attr: 0, or -EINVAL
  // with nothing changed when val is null, len is not the struct's size,
  // comp_mask has none of the four known bits, or a side the value names
  // (its mask bit and its ingress/engress bit set) has a logic that is not
  // ring_logic_t's or a ring_profile_key (no profile exists here:
  // vma_add_ring_profile is not there). A value naming no side changes
  // nothing, as in libvma.
  SS_API int set(const void* val, socklen_t len);
  SS_API Side rx() const;
  SS_API Side tx() const;

 private:
  mutable std::mutex mu_;
  Side rx_, tx_;
};

}  // namespace ss::vma
