// Registrar: how a provider learns about memory. A Pool calls reg() for
// every chunk (existing and future) of every registrar added to it and keeps
// the handle per chunk, so a buffer's handle is a field read on the data path.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ss::mem {

// What a provider needs to address registered memory; opaque to the pool.
union RegHandle {
  struct Keys {
    uint32_t lkey;
    uint32_t rkey;
  } keys;           // verbs: the memory region's keys
  uint64_t offset;  // AF_XDP: where the chunk starts inside the UMEM
};
static_assert(sizeof(RegHandle) == 8);

class Registrar {
 public:
  virtual ~Registrar() = default;
  // Registers [addr, addr+len); 0 and the handle, or -errno.
  virtual int reg(void* addr, size_t len, RegHandle* out) = 0;
  // Undoes a successful reg() of exactly the same range.
  virtual void dereg(void* addr, size_t len, const RegHandle& h) = 0;
};

}  // namespace ss::mem
