// Pool: creation, chunks and their registration.
#include "core/mem/pool.h"

#include <sys/mman.h>

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
  if (opt.max_chunks > (uint64_t{0xffffffffu} - 1) >> cs || fs + cs >= 63) return -EINVAL;

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
  // Only caches need a thread's exit or a fork to find the pool: a pool
  // without them (one per connection buffer) stays off the list they scan.
  if (p->cache_cap_) detail::track_pool(p.get());
  *out = std::move(p);
  return 0;
}

Pool::~Pool() {
  if (cache_cap_) detail::untrack_pool(this);
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
  if (opt_.dont_fork && madvise(c->mem->base(), c->mem->len(), MADV_DONTFORK) != 0) return -errno;

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

void* Pool::chunk_base(size_t i) const {
  return i < chunk_count() ? chunks_[i]->mem->base() : nullptr;
}

bool Pool::chunk_huge(size_t i) const { return i < chunk_count() && chunks_[i]->mem->huge(); }

char* Pool::frame_data(uint32_t i) const { return desc(i)->data; }

bool Pool::frame_held(uint32_t i) const {
  return desc(i)->refs.load(std::memory_order_relaxed) != 0;
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

}  // namespace ss::mem
