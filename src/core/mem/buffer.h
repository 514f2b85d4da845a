// Buffer: a move-only handle on one fixed-size buffer of a SlabPool. All
// holders share a single atomic reference count; share() adds one, and the
// last holder to let go returns the buffer to its pool. This one type is what
// an rsocket send/receive buffer, an AF_XDP UMEM frame and a vma_buff_t are
// underneath.
#pragma once
#include <cerrno>
#include <cstddef>
#include <cstdint>

#include "core/mem/descriptor.h"

namespace ss::mem {

class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& o) noexcept : d_(o.d_) { o.d_ = nullptr; }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      reset();
      d_ = o.d_;
      o.d_ = nullptr;
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { reset(); }

  // Another handle on the same buffer (empty if this one is empty).
  Buffer share() const {
    if (d_) d_->refs.fetch_add(1, std::memory_order_relaxed);
    return Buffer(d_);
  }
  // Drops this handle's reference now.
  void reset() {
    if (d_) release();
  }

  explicit operator bool() const { return d_ != nullptr; }
  void* data() const { return d_ ? d_->data : nullptr; }
  size_t capacity() const { return d_ ? d_->slab->buf_size : 0; }
  // Bytes in use; shared by all holders, like the data.
  size_t size() const { return d_ ? d_->size : 0; }
  int set_size(size_t n) {
    if (!d_ || n > d_->slab->buf_size) return -EINVAL;
    d_->size = static_cast<uint32_t>(n);
    return 0;
  }
  // Keys from the registrar at this index in the pool (see
  // SlabPool::add_registrar); 0 for an index with no registrar.
  uint32_t lkey(size_t registrar_index) const {
    return d_ && registrar_index < kMaxRegistrars ? d_->slab->keys[registrar_index].lkey : 0;
  }
  uint32_t rkey(size_t registrar_index) const {
    return d_ && registrar_index < kMaxRegistrars ? d_->slab->keys[registrar_index].rkey : 0;
  }
  // Current number of holders (diagnostics and tests; racy by nature).
  uint32_t use_count() const { return d_ ? d_->refs.load(std::memory_order_relaxed) : 0; }

 private:
  friend class SlabPool;
  explicit Buffer(detail::BufDesc* d) : d_(d) {}
  void release();  // out of line: the last reference goes back to the pool

  detail::BufDesc* d_ = nullptr;
};

}  // namespace ss::mem
