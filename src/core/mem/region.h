// Region: a page-aligned, memfd-backed MAP_SHARED mapping. It is the unit of
// memory a provider can hand to a peer process (the shm provider passes the fd
// over SCM_RIGHTS), so every zero-copy buffer lives inside one.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/base/api.h"

namespace ss::mem {

class Region {
 public:
  // Rounds len up to whole pages and creates the memfd (sealed against
  // shrinking, growing and further seals so a peer holding the fd can never
  // make our mapping SIGBUS), then maps it read/write. The Region is recorded
  // in the process-wide registry that find_backing() consults.
  // hugepages: MFD_HUGETLB, len rounded to huge_page_size(); fails (no
  // fallback here: see ChunkMemory) when none are reserved.
  SS_API static int create(size_t len, const char* name, std::unique_ptr<Region>* out,
                           bool hugepages = false);

  // Receiving side: maps a peer's region fd MAP_SHARED with `prot`. Refuses
  // (-EINVAL) an fd shorter than len, and (-EPERM) one that is not sealed
  // against shrinking, since the sender could then truncate it under us.
  static int map_peer(int fd, size_t len, int prot, void** out);
  static int unmap_peer(void* addr, size_t len);

  SS_API ~Region();
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  void* addr() const { return addr_; }
  size_t len() const { return len_; }
  int fd() const { return fd_; }

 private:
  Region(void* addr, size_t len, int fd) : addr_(addr), len_(len), fd_(fd) {}

  void* addr_;
  size_t len_;
  int fd_;
};

size_t page_size();
// The default hugepage size (/proc/meminfo), 0 when the kernel has none.
size_t huge_page_size();

// True when [addr, addr+len) lies entirely inside one live Region; then *fd
// and *offset (from the start of that Region) say where it is backed. The fd
// stays owned by the Region: valid only while the caller keeps it alive.
// Thread-safe and cheap (shared lock + binary search).
bool find_backing(const void* addr, size_t len, int* fd, uint64_t* offset);

}  // namespace ss::mem
