// Registrar: how a provider learns about memory. A SlabPool calls reg() for
// every slab (existing and future) of every registrar added to it, so each
// buffer knows its keys without a lookup on the data path.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ss::mem {

class Registrar {
 public:
  virtual ~Registrar() = default;
  // Registers [addr, addr+len); 0 and the keys, or -errno.
  virtual int reg(void* addr, size_t len, uint32_t* lkey, uint32_t* rkey) = 0;
  // Undoes a successful reg() of exactly the same range.
  virtual void dereg(void* addr, size_t len) = 0;
};

}  // namespace ss::mem
