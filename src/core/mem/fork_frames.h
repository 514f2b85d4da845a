// ForkFrames: the frames of a MADV_DONTFORK pool (PoolOptions::dont_fork)
// that a process holds when it forks, copied into the child at their own
// addresses. Without them, a child reading a packet a zero-copy receive
// lent its parent would fault there. In the child each chunk's range is
// memory of its own (private, unreserved: only what is written takes
// pages): the held frames copied, every other frame zeros. What it writes
// stays its own, and it sees none of the frames that arrive later (the
// kernel's fork would copy a device's pinned memory whole).
//
// take() runs in the parent before the fork (a prepare handler, not in a
// signal handler), place() in the child, drop() in the parent after it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/base/api.h"
#include "core/mem/pool.h"

namespace ss::mem {

class ForkFrames {
 public:
  ForkFrames() = default;
  ForkFrames(const ForkFrames&) = delete;
  ForkFrames& operator=(const ForkFrames&) = delete;
  ~ForkFrames() { drop(); }

  // Copies the frames of pool that someone holds, except those `skip`
  // marks by frame index (a ring's own: no program sees them; skip may be
  // shorter than the pool), and notes its chunks. Adds to what earlier
  // calls took. The frames copied, or -ENOMEM (this pool's then not
  // taken).
  SS_API int take(const Pool& pool, const std::vector<uint8_t>& skip);
  // In the child: each chunk's range mapped anew, the frames copied in,
  // then the copy freed. 0, or the first failure's -errno (a mapping
  // already in a chunk's range is left alone: that chunk's frames are not
  // placed).
  SS_API int place();
  // Frees the copy.
  SS_API void drop();
  size_t frames() const {
    size_t n = 0;
    for (const Taken& t : taken_) n += t.frames.size();
    return n;
  }

 private:
  struct Frame {
    char* at;      // the frame's address
    size_t chunk;  // in Taken::chunks
  };
  // One take(): the pool's chunks, its held frames and their bytes (one
  // private mapping, frame k at k * frame_size).
  struct Taken {
    std::vector<char*> chunks;
    size_t chunk_bytes = 0, frame_size = 0;
    std::vector<Frame> frames;
    char* copy = nullptr;
    size_t len = 0;
  };
  std::vector<Taken> taken_;
};

}  // namespace ss::mem
