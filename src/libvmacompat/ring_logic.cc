#include "libvmacompat/ring_logic.h"

#include <mellanox/vma_extra.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ss::vma {

namespace {

// ring_logic_t's values: VMA_RING_ALLOCATION_LOGIC_RX/_TX's
// (settings_choices.h), and per user id, which only setsockopt sets.
bool valid_ring_logic(int logic) {
  switch (logic) {
    case RING_LOGIC_PER_INTERFACE:
    case RING_LOGIC_PER_IP:
    case RING_LOGIC_PER_SOCKET:
    case RING_LOGIC_PER_THREAD:
    case RING_LOGIC_PER_CORE:
    case RING_LOGIC_PER_CORE_ATTACH_THREADS:
    case RING_LOGIC_PER_USER_ID:
      return true;
    default:
      return false;
  }
}

}  // namespace

int RingLogic::set(const void* val, socklen_t len) {
  vma_ring_alloc_logic_attr a;
  if (!val || len != sizeof a) return -EINVAL;
  std::memcpy(&a, val, sizeof a);
  constexpr uint32_t kKnown = VMA_RING_ALLOC_MASK_RING_PROFILE_KEY |
                              VMA_RING_ALLOC_MASK_RING_USER_ID | VMA_RING_ALLOC_MASK_RING_INGRESS |
                              VMA_RING_ALLOC_MASK_RING_ENGRESS;
  if (!(a.comp_mask & kKnown)) return -EINVAL;
  const bool rx = (a.comp_mask & VMA_RING_ALLOC_MASK_RING_INGRESS) && a.ingress;
  const bool tx = (a.comp_mask & VMA_RING_ALLOC_MASK_RING_ENGRESS) && a.engress;
  if (!rx && !tx) return 0;
  // The program's bytes, read as a number: an enum object may hold only
  // its own values, so a bad one is checked before it is read as one.
  uint32_t logic;
  const auto* bytes = static_cast<const char*>(val);
  std::memcpy(&logic, bytes + offsetof(vma_ring_alloc_logic_attr, ring_alloc_logic), sizeof logic);
  if (!valid_ring_logic(static_cast<int>(logic))) return -EINVAL;
  if ((a.comp_mask & VMA_RING_ALLOC_MASK_RING_PROFILE_KEY) && a.ring_profile_key) return -EINVAL;
  const bool user = a.comp_mask & VMA_RING_ALLOC_MASK_RING_USER_ID;
  std::lock_guard lock(mu_);
  for (Side* s : {rx ? &rx_ : nullptr, tx ? &tx_ : nullptr}) {
    if (!s) continue;
    s->logic = static_cast<int>(logic);
    if (user) s->user_id = a.user_id;
  }
  return 0;
}

RingLogic::Side RingLogic::rx() const {
  std::lock_guard lock(mu_);
  return rx_;
}

RingLogic::Side RingLogic::tx() const {
  std::lock_guard lock(mu_);
  return tx_;
}

}  // namespace ss::vma
