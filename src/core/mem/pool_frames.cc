// Pool: the data path. get() and the last release of a frame, per-thread
// caches, the lock-free shared free list, raw pointers given back.
#include <atomic>
#include <cerrno>
#include <cstdint>

#include "core/mem/pool.h"
#include "core/mem/thread_slots.h"

namespace ss::mem {

using detail::FrameDesc;

namespace {

constexpr uint64_t kIndexMask = 0xffffffffu;

}  // namespace

// first..last are already linked through next_free; last's link is set here.
void Pool::push_shared(FrameDesc* first, FrameDesc* last, size_t n) {
  uint64_t old = head_.load(std::memory_order_relaxed);
  uint64_t want;
  do {
    last->next_free.store(static_cast<uint32_t>(old & kIndexMask), std::memory_order_relaxed);
    want = ((old >> 32) + 1) << 32 | (first->index + 1u);
  } while (!head_.compare_exchange_weak(old, want, std::memory_order_release,
                                        std::memory_order_relaxed));
  nfree_.fetch_add(n, std::memory_order_relaxed);
}

FrameDesc* Pool::pop_shared() {
  uint64_t old = head_.load(std::memory_order_acquire);
  for (;;) {
    const uint32_t top = static_cast<uint32_t>(old & kIndexMask);
    if (top == 0) return nullptr;
    FrameDesc* d = desc(top - 1);
    // May be stale if another thread popped d meanwhile; the count in the
    // high bits then makes the CAS fail.
    const uint32_t next = d->next_free.load(std::memory_order_relaxed);
    const uint64_t want = ((old >> 32) + 1) << 32 | next;
    if (head_.compare_exchange_weak(old, want, std::memory_order_acquire,
                                    std::memory_order_acquire)) {
      nfree_.fetch_sub(1, std::memory_order_relaxed);
      return d;
    }
  }
}

FrameDesc* Pool::get_frame() {
  const int slot = cache_cap_ ? detail::thread_slot() : -1;
  if (slot >= 0) {
    ThreadCache& c = caches_[slot];
    uint32_t n = c.n.load(std::memory_order_relaxed);
    if (n == 0) {  // refill half, one pop at a time
      while (n < cache_cap_ / 2) {
        FrameDesc* d = pop_shared();
        if (!d) break;
        c.items[n++] = d->index;
      }
    }
    if (n > 0) {
      c.n.store(n - 1, std::memory_order_relaxed);
      return desc(c.items[n - 1]);
    }
  }
  if (FrameDesc* d = pop_shared()) return d;
  std::lock_guard lock(chunk_mu_);
  if (FrameDesc* d = pop_shared()) return d;  // another thread grew meanwhile
  return grow() == 0 ? pop_shared() : nullptr;
}

Buffer Pool::get() {
  FrameDesc* d = get_frame();
  if (!d) return Buffer();
  d->refs.store(1, std::memory_order_relaxed);
  return Buffer(d, headroom_, 0);
}

void Pool::put_frame(FrameDesc* d) {
  const int slot = cache_cap_ ? detail::thread_slot() : -1;
  if (slot < 0) {
    push_shared(d, d, 1);
    return;
  }
  ThreadCache& c = caches_[slot];
  if (c.n.load(std::memory_order_relaxed) == cache_cap_) spill(&c, cache_cap_ / 2);
  const uint32_t n = c.n.load(std::memory_order_relaxed);
  c.items[n] = d->index;
  c.n.store(n + 1, std::memory_order_relaxed);
}

// Moves the oldest `count` cached frames to the shared list in one push.
void Pool::spill(ThreadCache* c, uint32_t count) {
  const uint32_t n = c->n.load(std::memory_order_relaxed);
  if (count == 0 || count > n) return;
  for (uint32_t i = 0; i + 1 < count; i++)
    desc(c->items[i])->next_free.store(c->items[i + 1] + 1, std::memory_order_relaxed);
  push_shared(desc(c->items[0]), desc(c->items[count - 1]), count);
  for (uint32_t i = count; i < n; i++) c->items[i - count] = c->items[i];
  c->n.store(n - count, std::memory_order_relaxed);
}

void Pool::spill_thread_cache(int slot) {
  if (cache_cap_ && slot >= 0)
    spill(&caches_[slot], caches_[slot].n.load(std::memory_order_relaxed));
}

void Pool::release_frame(FrameDesc* d) {
  while (d) {
    // The chain link is this frame's reference on the next one.
    FrameDesc* next = d->next;
    d->next = nullptr;
    Pool* pool = d->chunk->pool;
    const unsigned phase = pool->recycler_phase_.load(std::memory_order_seq_cst);
    pool->in_recycler_[phase].fetch_add(1, std::memory_order_seq_cst);
    Recycler* r = pool->recycler_.load(std::memory_order_seq_cst);
    bool free_it = true;
    if (r) {
      d->refs.store(1, std::memory_order_relaxed);
      Buffer frame(d, pool->headroom_, 0);
      r->recycle(frame);
      // Left to us: ours alone unless the recycler kept a share.
      free_it = frame.d_ && frame.d_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1;
      frame.d_ = nullptr;
    }
    pool->in_recycler_[phase].fetch_sub(1, std::memory_order_release);
    if (free_it) pool->put_frame(d);
    d = next && next->refs.fetch_sub(1, std::memory_order_acq_rel) == 1 ? next : nullptr;
  }
}

int Pool::from_raw(const void* p, Buffer* out) {
  if (!p || !out) return -EINVAL;
  const auto a = reinterpret_cast<uintptr_t>(p);
  const size_t n = chunk_count();
  for (size_t i = 0; i < n; i++) {
    const auto base = reinterpret_cast<uintptr_t>(chunks_[i]->mem->base());
    if (a < base || a - base >= chunk_bytes()) continue;
    FrameDesc* d = &chunks_[i]->frames[(a - base) >> frame_shift_];
    uint32_t lent = d->raw.load(std::memory_order_acquire);
    do {
      if (lent == 0) return -EINVAL;  // never lent, given back, or recycled
    } while (!d->raw.compare_exchange_weak(lent, lent - 1, std::memory_order_acq_rel,
                                           std::memory_order_acquire));
    *out = Buffer(d, static_cast<uint32_t>(a - reinterpret_cast<uintptr_t>(d->data)), 0);
    return 0;
  }
  return -EINVAL;
}

size_t Pool::free_count() const {
  size_t n = nfree_.load(std::memory_order_relaxed);
  if (cache_cap_)
    for (int i = 0; i < detail::kMaxThreadSlots; i++)
      n += caches_[i].n.load(std::memory_order_relaxed);
  return n;
}

}  // namespace ss::mem
