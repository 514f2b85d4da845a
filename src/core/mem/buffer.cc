#include "core/mem/buffer.h"

#include "core/mem/pool.h"

namespace ss::mem {

void Buffer::release() {
  detail::FrameDesc* d = d_;
  d_ = nullptr;
  // acq_rel: every holder's writes happen-before the frame's next owner.
  if (d->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) Pool::release_frame(d);
}

int Buffer::append(Buffer&& tail) {
  if (!d_ || !tail.d_) return -EINVAL;
  detail::FrameDesc* last = d_;
  while (last->next) last = last->next;
  if (last->refs.load(std::memory_order_acquire) != 1 ||
      tail.d_->refs.load(std::memory_order_acquire) != 1)
    return -EBUSY;
  last->next = tail.d_;
  last->next_off = tail.off_;
  last->next_len = tail.len_;
  tail.d_ = nullptr;
  return 0;
}

Buffer Buffer::next() const {
  if (!d_ || !d_->next) return Buffer();
  d_->next->refs.fetch_add(1, std::memory_order_relaxed);
  return Buffer(d_->next, d_->next_off, d_->next_len);
}

int Buffer::unchain(Buffer* rest) {
  if (!d_ || !rest) return -EINVAL;
  if (d_->refs.load(std::memory_order_acquire) != 1) return -EBUSY;
  Buffer r(d_->next, d_->next_off, d_->next_len);  // adopts the link's reference
  d_->next = nullptr;
  *rest = std::move(r);
  return 0;
}

size_t Buffer::chain_size() const {
  if (!d_) return 0;
  size_t n = len_;
  for (const detail::FrameDesc* f = d_; f->next; f = f->next) n += f->next_len;
  return n;
}

int Buffer::chain_pull_head(size_t n) {
  if (!d_ || n > chain_size()) return -EINVAL;
  while (d_->next && n >= len_) {
    Buffer rest;
    if (const int err = unchain(&rest)) return err;
    n -= len_;
    *this = std::move(rest);
  }
  return pull_head(n);
}

int Buffer::chain_truncate(size_t n) {
  if (!d_ || n > chain_size()) return -EINVAL;
  // The frame the kept bytes end in, and its view's length in its handle
  // or in the link to it.
  detail::FrameDesc* end = d_;
  uint32_t* end_len = &len_;
  while (n > *end_len) {
    n -= *end_len;
    end_len = &end->next_len;
    end = end->next;
  }
  if (end->next) {
    if (end->refs.load(std::memory_order_acquire) != 1) return -EBUSY;
    Buffer cut(end->next, end->next_off, end->next_len);  // adopts the link's reference
    end->next = nullptr;
  }
  *end_len = static_cast<uint32_t>(n);
  return 0;
}

void* Buffer::into_raw() {
  if (!d_) return nullptr;
  void* p = data();
  // The handle's reference becomes a raw one: refs is unchanged, so the
  // frame cannot be recycled while it is lent.
  d_->raw.fetch_add(1, std::memory_order_release);
  d_ = nullptr;
  return p;
}

}  // namespace ss::mem
