#include "core/mem/pool.h"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <new>

#include "core/base/log.h"
#include "core/mem/thread_slots.h"

namespace ss::mem {

using detail::Chunk;
using detail::FrameDesc;

namespace {

constexpr uint32_t kMinFrameShift = 6;  // 64 B: a cache line
constexpr uint32_t kMaxCache = 32;      // frames a thread may keep per pool
constexpr uint64_t kIndexMask = 0xffffffffu;

uint32_t log2_ceil(size_t n) {
  uint32_t s = 0;
  while ((size_t{1} << s) < n) s++;
  return s;
}

void dereg_chunk(Registrar* r, Chunk* c, size_t idx, size_t bytes) {
  if (!c->registered[idx]) return;
  r->dereg(c->mem->base(), bytes, c->handles[idx]);
  c->handles[idx] = RegHandle{};
  c->registered[idx] = false;
}

}  // namespace

// Only its thread touches items; n is atomic so free_count() may read it.
struct alignas(64) Pool::ThreadCache {
  std::atomic<uint32_t> n{0};
  uint32_t items[kMaxCache];
};

Pool::Pool(const PoolOptions& opt, uint32_t frame_shift, uint32_t chunk_shift)
    : frame_shift_(frame_shift),
      chunk_shift_(chunk_shift),
      headroom_(static_cast<uint32_t>(opt.headroom)),
      max_chunks_(opt.max_chunks),
      opt_(opt) {
  snprintf(name_, sizeof name_, "%s", opt.name ? opt.name : "slipstream-pool");
  opt_.name = name_;
}

int Pool::create(const PoolOptions& opt, std::unique_ptr<Pool>* out) {
  if (!out || opt.frame_size == 0 || opt.frames_per_chunk == 0 || opt.max_chunks == 0)
    return -EINVAL;
  if (opt.frame_size > (size_t{1} << 31) || opt.frames_per_chunk > (size_t{1} << 31))
    return -EINVAL;
  uint32_t fs = log2_ceil(opt.frame_size);
  if (fs < kMinFrameShift) fs = kMinFrameShift;
  const uint32_t cs = log2_ceil(opt.frames_per_chunk);
  if (opt.headroom >= (size_t{1} << fs)) return -EINVAL;
  // Indices (+1) must fit the free list's 32 bits, chunk bytes a size_t.
  if (opt.max_chunks > (kIndexMask - 1) >> cs || fs + cs >= 63) return -EINVAL;

  std::unique_ptr<Pool> p(new (std::nothrow) Pool(opt, fs, cs));
  if (!p) return -ENOMEM;
  p->chunks_.reset(new (std::nothrow) std::unique_ptr<Chunk>[opt.max_chunks]);
  if (!p->chunks_) return -ENOMEM;
  // Caches small enough that all threads together hold a fraction of the
  // pool: a thread must not starve because others sit on free frames.
  const size_t total = (opt.max_chunks << cs);
  const size_t cap = total / 16 > kMaxCache ? kMaxCache : total / 16;
  if (cap >= 4) {
    p->caches_.reset(new (std::nothrow) ThreadCache[detail::kMaxThreadSlots]);
    if (!p->caches_) return -ENOMEM;
    p->cache_cap_ = static_cast<uint32_t>(cap);
  }
  {
    std::lock_guard lock(p->chunk_mu_);
    int err = p->grow();
    if (err) return err;
  }
  detail::track_pool(p.get());
  *out = std::move(p);
  return 0;
}

Pool::~Pool() {
  detail::untrack_pool(this);
  std::lock_guard lock(chunk_mu_);
  const size_t total = frame_count(), nfree = free_count();
  if (nfree != total)
    SS_ERROR("mem: pool destroyed with %zu of %zu frames still held", total - nfree, total);
  const size_t n = chunk_count();
  for (size_t i = 0; i < kMaxRegistrars; i++) {
    if (!registrars_[i]) continue;
    for (size_t c = 0; c < n; c++) dereg_chunk(registrars_[i], chunks_[c].get(), i, chunk_bytes());
  }
}

// With chunk_mu_ held: adds a chunk, registers it, and puts all its frames
// on the shared list. 0 or -errno.
int Pool::grow() {
  const size_t n = nchunks_.load(std::memory_order_relaxed);
  if (n >= max_chunks_) return -ENOMEM;
  std::unique_ptr<Chunk> c(new (std::nothrow) Chunk);
  if (!c) return -ENOMEM;
  c->pool = this;
  c->frame_shift = frame_shift_;
  const size_t nframes = frames_per_chunk();
  c->frames.reset(new (std::nothrow) FrameDesc[nframes]);
  if (!c->frames) return -ENOMEM;
  int err = ChunkMemory::create(chunk_bytes(), opt_.backing, opt_.hugepages, opt_.name, &c->mem);
  if (err) return err;

  for (size_t i = 0; i < kMaxRegistrars; i++) {
    if (!registrars_[i]) continue;
    err = registrars_[i]->reg(c->mem->base(), chunk_bytes(), &c->handles[i]);
    if (err) {
      // Once loudly (typically RLIMIT_MEMLOCK); after that get() keeps
      // retrying on the data path, so stay quiet.
      static std::atomic<bool> warned{false};
      if (!warned.exchange(true))
        SS_WARN("mem: registering a new %zu-byte chunk failed: %d", chunk_bytes(), err);
      else
        SS_DEBUG("mem: registering a new %zu-byte chunk failed: %d", chunk_bytes(), err);
      for (size_t j = 0; j < i; j++)
        if (registrars_[j]) dereg_chunk(registrars_[j], c.get(), j, chunk_bytes());
      return err;
    }
    c->registered[i] = true;
  }

  FrameDesc* f = c->frames.get();
  for (size_t i = 0; i < nframes; i++) {
    f[i].data = c->mem->base() + (i << frame_shift_);
    f[i].chunk = c.get();
    f[i].index = static_cast<uint32_t>((n << chunk_shift_) | i);
    // Linked in order so frames come out low addresses first.
    f[i].next_free.store(i + 1 < nframes ? f[i].index + 2 : 0, std::memory_order_relaxed);
  }
  chunks_[n] = std::move(c);
  nchunks_.store(n + 1, std::memory_order_release);
  push_shared(&f[0], &f[nframes - 1], nframes);
  return 0;
}

FrameDesc* Pool::desc(uint32_t index) const {
  return &chunks_[index >> chunk_shift_]->frames[index & ((1u << chunk_shift_) - 1)];
}

void* Pool::chunk_base(size_t i) const {
  return i < chunk_count() ? chunks_[i]->mem->base() : nullptr;
}

bool Pool::chunk_huge(size_t i) const { return i < chunk_count() && chunks_[i]->mem->huge(); }

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
  uint32_t n = c.n.load(std::memory_order_relaxed);
  if (n == cache_cap_) {  // full: the older half goes back in one push
    const uint32_t keep = cache_cap_ / 2;
    for (uint32_t i = 0; i + 1 < keep; i++)
      desc(c.items[i])->next_free.store(c.items[i + 1] + 1, std::memory_order_relaxed);
    push_shared(desc(c.items[0]), desc(c.items[keep - 1]), keep);
    for (uint32_t i = keep; i < n; i++) c.items[i - keep] = c.items[i];
    n -= keep;
  }
  c.items[n] = d->index;
  c.n.store(n + 1, std::memory_order_relaxed);
}

void Pool::spill_thread_cache(int slot) {
  if (!cache_cap_ || slot < 0) return;
  ThreadCache& c = caches_[slot];
  const uint32_t n = c.n.load(std::memory_order_relaxed);
  if (n == 0) return;
  for (uint32_t i = 0; i + 1 < n; i++)
    desc(c.items[i])->next_free.store(c.items[i + 1] + 1, std::memory_order_relaxed);
  push_shared(desc(c.items[0]), desc(c.items[n - 1]), n);
  c.n.store(0, std::memory_order_relaxed);
}

void Pool::release_frame(FrameDesc* d) {
  while (d) {
    // The chain link is this frame's reference on the next one.
    FrameDesc* next = d->next;
    d->next = nullptr;
    Pool* pool = d->chunk->pool;
    Recycler* r = pool->recycler_.load(std::memory_order_acquire);
    bool free_it = true;
    if (r) {
      d->refs.store(1, std::memory_order_relaxed);
      Buffer frame(d, pool->headroom_, 0);
      r->recycle(frame);
      // Left to us: ours alone unless the recycler kept a share.
      free_it = frame.d_ && frame.d_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1;
      frame.d_ = nullptr;
    }
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

int Pool::add_registrar(Registrar* r) {
  if (!r) return -EINVAL;
  std::lock_guard lock(chunk_mu_);
  int idx = -1;
  for (size_t i = 0; i < kMaxRegistrars; i++) {
    if (registrars_[i] == r) return -EEXIST;
    if (!registrars_[i] && idx < 0) idx = static_cast<int>(i);
  }
  if (idx < 0) return -ENOSPC;
  const size_t n = chunk_count();
  for (size_t c = 0; c < n; c++) {
    Chunk* ch = chunks_[c].get();
    int err = r->reg(ch->mem->base(), chunk_bytes(), &ch->handles[idx]);
    if (err) {
      for (size_t t = 0; t < c; t++) dereg_chunk(r, chunks_[t].get(), idx, chunk_bytes());
      ch->handles[idx] = RegHandle{};
      return err;
    }
    ch->registered[idx] = true;
  }
  registrars_[idx] = r;
  return idx;
}

int Pool::remove_registrar(Registrar* r) {
  if (!r) return -EINVAL;
  std::lock_guard lock(chunk_mu_);
  for (size_t i = 0; i < kMaxRegistrars; i++) {
    if (registrars_[i] != r) continue;
    const size_t n = chunk_count();
    for (size_t c = 0; c < n; c++) dereg_chunk(r, chunks_[c].get(), i, chunk_bytes());
    registrars_[i] = nullptr;
    return 0;
  }
  return -ENOENT;
}

size_t Pool::free_count() const {
  size_t n = nfree_.load(std::memory_order_relaxed);
  if (cache_cap_)
    for (int i = 0; i < detail::kMaxThreadSlots; i++)
      n += caches_[i].n.load(std::memory_order_relaxed);
  return n;
}

}  // namespace ss::mem
