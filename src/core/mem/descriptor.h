// Internal to core/mem: the headers that describe slabs and buffers. They
// live outside the data (one descriptor array per slab) so buffer memory is
// all payload, page-aligned and ready to hand to a NIC or a peer.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/mem/region.h"

namespace ss::mem {

class SlabPool;

// Registrars a pool can hold at once (one per provider that needs keys).
inline constexpr size_t kMaxRegistrars = 8;

namespace detail {

struct BufDesc;

struct SlabKeys {
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  bool registered = false;
};

struct Slab {
  SlabPool* pool = nullptr;
  size_t buf_size = 0;                 // every buffer's capacity
  std::unique_ptr<Region> region;      // the memory
  std::unique_ptr<BufDesc[]> descs;    // one per buffer
  SlabKeys keys[kMaxRegistrars];       // indexed like the pool's registrars
};

// 32 bytes: two per cache line. refs is the one reference count every
// holder of the buffer shares.
struct alignas(32) BufDesc {
  char* data = nullptr;
  Slab* slab = nullptr;
  BufDesc* next_free = nullptr;        // free-list link, meaningless while allocated
  uint32_t size = 0;                   // bytes in use
  std::atomic<uint32_t> refs{0};
};
static_assert(sizeof(BufDesc) == 32);

}  // namespace detail
}  // namespace ss::mem
