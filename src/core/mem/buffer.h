// Buffer: a move-only handle on one frame of a Pool, and the one buffer
// type underneath an rsocket send/receive buffer, an AF_XDP UMEM frame and a
// vma_buff_t. All holders of a frame share its atomic reference count;
// share() adds one and the last holder to let go recycles the frame (through
// the pool's Recycler, e.g. into a fill ring, else to its free list).
//
// Each handle has its own view of the frame: an offset (headroom in front of
// the payload) and a length, so a holder can strip or prepend headers
// without disturbing the others. A frame may link the next frame of the
// same packet (append/next/unchain); the link is a reference, so releasing
// the head releases the chain.
//
// A handle can be lent out as a bare payload pointer (into_raw) and taken
// back with Pool::from_raw, which refuses (-EINVAL) a pointer that is not
// one of the pool's lent frames: foreign, stale or already given back.
#pragma once
#include <cerrno>
#include <cstddef>
#include <cstdint>

#include "core/base/api.h"
#include "core/mem/descriptor.h"

namespace ss::mem {

class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& o) noexcept : d_(o.d_), off_(o.off_), len_(o.len_) { o.d_ = nullptr; }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      reset();
      d_ = o.d_;
      off_ = o.off_;
      len_ = o.len_;
      o.d_ = nullptr;
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { reset(); }

  // Another handle on the same frame with the same view (empty if this is).
  Buffer share() const {
    if (d_) d_->refs.fetch_add(1, std::memory_order_relaxed);
    return Buffer(d_, off_, len_);
  }
  // Drops this handle's reference now.
  void reset() {
    if (d_) release();
  }
  explicit operator bool() const { return d_ != nullptr; }

  // The view: [data(), data() + size()) with offset() bytes of the frame in
  // front of it and capacity() bytes from data() to the frame's end.
  void* data() const { return d_ ? d_->data + off_ : nullptr; }
  size_t size() const { return d_ ? len_ : 0; }
  size_t offset() const { return d_ ? off_ : 0; }
  size_t capacity() const { return d_ ? frame_size() - off_ : 0; }
  size_t frame_size() const { return d_ ? size_t{1} << d_->chunk->frame_shift : 0; }
  void* frame() const { return d_ ? d_->data : nullptr; }
  // 0, or -EINVAL past the frame's end (or on an empty handle).
  int set_size(size_t n) {
    if (!d_ || n > capacity()) return -EINVAL;
    len_ = static_cast<uint32_t>(n);
    return 0;
  }
  // Sets the whole view (where a device wrote a packet): -EINVAL past the
  // frame's end.
  int set_view(size_t offset, size_t len) {
    if (!d_ || offset > frame_size() || len > frame_size() - offset) return -EINVAL;
    off_ = static_cast<uint32_t>(offset);
    len_ = static_cast<uint32_t>(len);
    return 0;
  }
  // Grows the view by n bytes in front (a header goes there): -EINVAL when
  // the headroom is shorter than n.
  int push_head(size_t n) {
    if (!d_ || n > off_) return -EINVAL;
    off_ -= static_cast<uint32_t>(n);
    len_ += static_cast<uint32_t>(n);
    return 0;
  }
  // Shrinks the view by n bytes at the front (a header consumed).
  int pull_head(size_t n) {
    if (!d_ || n > len_) return -EINVAL;
    off_ += static_cast<uint32_t>(n);
    len_ -= static_cast<uint32_t>(n);
    return 0;
  }

  // The handle of the registrar at this index in the pool (see
  // Pool::add_registrar) for this frame's chunk; zero when there is none.
  RegHandle reg(size_t registrar_index) const {
    return d_ && registrar_index < kMaxRegistrars ? d_->chunk->handles[registrar_index]
                                                  : RegHandle{};
  }
  uint32_t lkey(size_t registrar_index) const { return reg(registrar_index).keys.lkey; }
  uint32_t rkey(size_t registrar_index) const { return reg(registrar_index).keys.rkey; }
  // data() relative to its chunk's start: added to an AF_XDP registrar's
  // handle it is the address a UMEM descriptor carries.
  uint64_t chunk_offset() const {
    return d_ ? static_cast<uint64_t>(d_->data + off_ - d_->chunk->mem->base()) : 0;
  }

  // Links `tail` (and whatever it links) after the last frame of this
  // chain; tail's reference moves into the link. -EINVAL for an empty
  // handle, -EBUSY unless the last frame and tail each have a single holder
  // (so no chain is changed under another holder and no loop can form).
  SS_API int append(Buffer&& tail);
  // A new handle on the next frame of the packet (empty at the end).
  SS_API Buffer next() const;
  // Moves the rest of the chain out into *rest: -EBUSY if this frame is shared.
  int unchain(Buffer* rest);
  // Bytes in this view and every linked one.
  size_t chain_size() const;
  // The chain less its first n bytes: leading frames emptied are let go
  // (the next becomes this handle's). Its last n bytes kept: frames past
  // them are let go. -EINVAL past the chain's end, -EBUSY when a frame to
  // unlink has another holder.
  int chain_pull_head(size_t n);
  int chain_truncate(size_t n);

  // Lends this reference out as data(), for an application or a device that
  // knows only pointers; the handle becomes empty. Pool::from_raw takes the
  // reference back. nullptr for an empty handle.
  SS_API void* into_raw();

  // Current number of holders (diagnostics and tests; racy by nature).
  uint32_t use_count() const { return d_ ? d_->refs.load(std::memory_order_relaxed) : 0; }
  Pool* pool() const { return d_ ? d_->chunk->pool : nullptr; }

 private:
  friend class Pool;
  Buffer(detail::FrameDesc* d, uint32_t off, uint32_t len) : d_(d), off_(off), len_(len) {}
  SS_API void release();  // out of line: the last reference goes back to the pool

  detail::FrameDesc* d_ = nullptr;
  uint32_t off_ = 0, len_ = 0;
};

}  // namespace ss::mem
