// Memory a connection has registered. Stream providers check every
// incoming write against it: a key this connection never exposed, or a
// range that leaves the region, fails the connection instead of touching
// memory.
#pragma once
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "core/base/futex_mutex.h"
#include "core/prov/provider.h"

namespace ss::prov::util {

class RegionTable {
 public:
  // Registers [addr, addr+len); keys are unique process-wide.
  MemoryRegion add(void* addr, size_t len, int access);
  void remove(const MemoryRegion& mr);
  // The peer may still write to memory by the key and address it was told
  // in another image of this process (librsocket's exec hand-over): those
  // writes land at `now.addr`, inside the registration keyed now.lkey,
  // instead. Removed with that registration.
  void alias(const MemoryRegion& now, uint32_t wire_key, uint64_t wire_addr, size_t len);
  // No key up to `key` is given out from now on (keys a peer may still use).
  static void reserve_keys(uint32_t key);
  // Where a peer's write of `len` bytes at `remote_addr` under `rkey` lands,
  // or nullptr when the key is unknown, not remotely writable, or out of range.
  uint8_t* resolve(uint32_t rkey, uint64_t remote_addr, uint32_t len) const;
  // In a fork child (one thread): the lock a parent thread held is made
  // free. The async-progress thread only reads under it (resolve); add
  // and remove come from calls on the connection, made under its
  // socket's lock, whose state is as that thread left it.
  void fork_child() { mu_.reset_in_fork_child(); }

 private:
  struct Entry {
    uint64_t base;  // the address the peer knows
    uint64_t length;
    uint32_t key;
    bool remote_write;
    uint8_t* local;  // where base is in this process
    uint32_t owner;  // the key of the registration an alias belongs to (its own for one)
  };
  // The async-progress thread resolves concurrently; every incoming write
  // takes it, so the uncontended case must be cheap.
  mutable FutexMutex mu_;
  std::vector<Entry> entries_;
};

}  // namespace ss::prov::util
