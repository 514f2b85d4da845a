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
  static int create(size_t len, const char* name, std::unique_ptr<Region>* out,
                    bool hugepages = false);

  // Receiving side: maps a peer's region fd MAP_SHARED with `prot`. Refuses
  // (-EINVAL) an fd shorter than len, and (-EPERM) one that is not sealed
  // against shrinking, since the sender could then truncate it under us.
  SS_API static int map_peer(int fd, size_t len, int prot, void** out);
  SS_API static int unmap_peer(void* addr, size_t len);

  ~Region();
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  void* addr() const { return addr_; }
  size_t len() const { return len_; }
  // The memfd while the Region still holds it (see take_backing), else -1.
  int fd() const;

 private:
  Region(void* addr, size_t len) : addr_(addr), len_(len) {}

  void* addr_;
  size_t len_;
};

size_t page_size();
// The default hugepage size (/proc/meminfo), 0 when the kernel has none.
size_t huge_page_size();

// True when [addr, addr+len) lies entirely inside one live Region; then *fd
// and *offset (from the start of that Region) say where it is backed. The fd
// stays owned by the Region: valid only while the caller keeps it alive.
// Thread-safe and cheap (shared lock + binary search). False once the
// Region's fd was taken or dropped.
SS_API bool find_backing(const void* addr, size_t len, int* fd, uint64_t* offset);

// A Region's memfd exists to be handed to a peer, and every open one counts
// against the process's descriptor limit, while the mapping needs none. So
// it is handed over once: the first connection that registers the memory
// either takes it (take_backing: as find_backing, but the fd is the
// caller's, to pass and close) or drops it (drop_backing: closes it; no
// peer will map this memory). Later registrations find no fd and do
// without (the shm provider writes such memory through its stream).
bool take_backing(const void* addr, size_t len, int* fd, uint64_t* offset);
void drop_backing(const void* addr, size_t len);

}  // namespace ss::mem
