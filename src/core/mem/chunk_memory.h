// ChunkMemory: one mapping a Pool carves into frames. Which kind is the
// pluggable part of a pool: shared (a sealed memfd Region a peer process can
// map, as the shm provider needs) or private (anonymous pages no other
// process maps: an AF_XDP UMEM, verbs slabs), each on hugepages when the
// caller allows them and the kernel has them reserved, else on normal pages.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/mem/region.h"

namespace ss::mem {

enum class Backing : uint8_t { kShared, kPrivate };

class ChunkMemory {
 public:
  // len is rounded up to whole pages (hugepages when used). With hugepages
  // allowed but unavailable, falls back to normal pages and says so in one
  // info line per process. 0 or -errno.
  static int create(size_t len, Backing backing, bool hugepages, const char* name,
                    std::unique_ptr<ChunkMemory>* out);
  ~ChunkMemory();
  ChunkMemory(const ChunkMemory&) = delete;
  ChunkMemory& operator=(const ChunkMemory&) = delete;

  char* base() const { return base_; }
  size_t len() const { return len_; }
  bool huge() const { return huge_; }
  // The memfd behind a shared chunk (find_backing() knows it); null if private.
  const Region* region() const { return region_.get(); }

 private:
  ChunkMemory() = default;
  static int map_private(size_t len, bool huge, ChunkMemory* m);

  char* base_ = nullptr;
  size_t len_ = 0;
  bool huge_ = false;
  std::unique_ptr<Region> region_;
};

}  // namespace ss::mem
