// Internal to core/mem: the descriptors of chunks and frames. They live
// outside the data (one descriptor array per chunk) so frame memory is all
// payload, aligned and ready to hand to a NIC, the kernel or a peer.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/mem/chunk_memory.h"
#include "core/mem/registrar.h"

namespace ss::mem {

class Pool;

// Registrars a pool can hold at once (one per provider that needs handles).
inline constexpr size_t kMaxRegistrars = 8;

namespace detail {

struct FrameDesc;

struct Chunk {
  Pool* pool = nullptr;
  uint32_t frame_shift = 0;  // frame size = 1 << frame_shift
  std::unique_ptr<ChunkMemory> mem;
  std::unique_ptr<FrameDesc[]> frames;     // frames_per_chunk of them
  RegHandle handles[kMaxRegistrars] = {};  // indexed like the pool's registrars
  bool registered[kMaxRegistrars] = {};
};

// One per frame; a cache line, so neighbours' counters never share one.
struct alignas(64) FrameDesc {
  char* data = nullptr;  // frame start (frame_size bytes, a power of two)
  Chunk* chunk = nullptr;
  uint32_t index = 0;  // in the pool: chunk number << shift | frame number
  // Holders: handles plus raw references. 0 = not held (free, cached, or
  // owned by a recycler such as a fill ring).
  std::atomic<uint32_t> refs{0};
  // References lent out as raw payload pointers (Buffer::into_raw). Only
  // Pool::from_raw takes them back, by CAS, so a pointer given back twice or
  // after the frame was recycled finds 0 and gets -EINVAL.
  std::atomic<uint32_t> raw{0};
  // Free-list link: index + 1 of the next free frame, 0 at the end. Atomic
  // because a lock-free pop may read it while its owner rewrites it.
  std::atomic<uint32_t> next_free{0};
  // The next frame of the same packet, with the view of it the chain holds
  // (one reference on it); written only while this frame has one holder.
  FrameDesc* next = nullptr;
  uint32_t next_off = 0, next_len = 0;
};
static_assert(sizeof(FrameDesc) == 64);

}  // namespace detail
}  // namespace ss::mem
