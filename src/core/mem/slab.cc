#include "core/mem/slab.h"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <new>

#include "core/base/log.h"

namespace ss::mem {

using detail::BufDesc;
using detail::Slab;

namespace {

constexpr size_t kAlign = 64;

void dereg_slab(Registrar* r, Slab* s, size_t idx) {
  if (!s->keys[idx].registered) return;
  r->dereg(s->region->addr(), s->region->len());
  s->keys[idx] = detail::SlabKeys{};
}

}  // namespace

int SlabPool::create(size_t buf_size, size_t bufs_per_slab, size_t max_slabs,
                     std::unique_ptr<SlabPool>* out) {
  if (!out || buf_size == 0 || bufs_per_slab == 0 || max_slabs == 0) return -EINVAL;
  // BufDesc::size is 32 bits; larger buffers are not a use case.
  if (buf_size > UINT32_MAX - (kAlign - 1)) return -EINVAL;
  buf_size = (buf_size + kAlign - 1) & ~(kAlign - 1);
  if (bufs_per_slab > SIZE_MAX / buf_size) return -EINVAL;

  std::unique_ptr<SlabPool> pool(new (std::nothrow) SlabPool(buf_size, bufs_per_slab, max_slabs));
  if (!pool) return -ENOMEM;
  pool->slabs_.reset(new (std::nothrow) std::unique_ptr<Slab>[max_slabs]);
  if (!pool->slabs_) return -ENOMEM;
  {
    std::lock_guard lock(pool->slab_mu_);
    BufDesc* first = nullptr;
    int err = pool->grow_locked(&first);
    if (err) return err;
    pool->put(first);
  }
  *out = std::move(pool);
  return 0;
}

SlabPool::~SlabPool() {
  std::lock_guard lock(slab_mu_);
  size_t total = nslabs_ * bufs_per_slab_;
  size_t nfree = free_count();
  if (nfree != total)
    SS_ERROR("mem: slab pool destroyed with %zu of %zu buffers still held", total - nfree, total);
  for (size_t i = 0; i < kMaxRegistrars; i++) {
    if (!registrars_[i]) continue;
    for (size_t s = 0; s < nslabs_; s++) dereg_slab(registrars_[i], slabs_[s].get(), i);
  }
}

int SlabPool::grow_locked(BufDesc** first) {
  if (nslabs_ >= max_slabs_) return -ENOMEM;
  std::unique_ptr<Slab> s(new (std::nothrow) Slab);
  if (!s) return -ENOMEM;
  s->pool = this;
  s->buf_size = buf_size_;
  s->descs.reset(new (std::nothrow) BufDesc[bufs_per_slab_]);
  if (!s->descs) return -ENOMEM;
  int err = Region::create(buf_size_ * bufs_per_slab_, "slipstream-slab", &s->region);
  if (err) return err;

  for (size_t i = 0; i < kMaxRegistrars; i++) {
    if (!registrars_[i]) continue;
    detail::SlabKeys& k = s->keys[i];
    err = registrars_[i]->reg(s->region->addr(), s->region->len(), &k.lkey, &k.rkey);
    if (err) {
      // Once loudly (typically RLIMIT_MEMLOCK); after that alloc() keeps
      // retrying on the data path, so stay quiet.
      static std::atomic<bool> warned{false};
      if (!warned.exchange(true))
        SS_WARN("mem: registering a new %zu-byte slab failed: %d", s->region->len(), err);
      else
        SS_DEBUG("mem: registering a new %zu-byte slab failed: %d", s->region->len(), err);
      for (size_t j = 0; j < i; j++)
        if (registrars_[j]) dereg_slab(registrars_[j], s.get(), j);
      return err;
    }
    k.registered = true;
  }

  char* base = static_cast<char*>(s->region->addr());
  for (size_t i = 0; i < bufs_per_slab_; i++) {
    s->descs[i].data = base + i * buf_size_;
    s->descs[i].slab = s.get();
  }
  BufDesc* descs = s->descs.get();
  slabs_[nslabs_++] = std::move(s);

  // Buffers 1..n-1 go on the free list in one critical section, in order so
  // that they come back out low addresses first.
  {
    std::lock_guard lock(free_mu_);
    for (size_t i = bufs_per_slab_; i-- > 1;) {
      descs[i].next_free = free_;
      free_ = &descs[i];
    }
    nfree_ += bufs_per_slab_ - 1;
  }
  *first = &descs[0];
  return 0;
}

int SlabPool::add_registrar(Registrar* r) {
  if (!r) return -EINVAL;
  std::lock_guard lock(slab_mu_);
  int idx = -1;
  for (size_t i = 0; i < kMaxRegistrars; i++) {
    if (registrars_[i] == r) return -EEXIST;
    if (!registrars_[i] && idx < 0) idx = static_cast<int>(i);
  }
  if (idx < 0) return -ENOSPC;
  for (size_t s = 0; s < nslabs_; s++) {
    Slab* sl = slabs_[s].get();
    detail::SlabKeys& k = sl->keys[idx];
    int err = r->reg(sl->region->addr(), sl->region->len(), &k.lkey, &k.rkey);
    if (err) {
      for (size_t t = 0; t < s; t++) dereg_slab(r, slabs_[t].get(), idx);
      k = detail::SlabKeys{};
      return err;
    }
    k.registered = true;
  }
  registrars_[idx] = r;
  return idx;
}

int SlabPool::remove_registrar(Registrar* r) {
  if (!r) return -EINVAL;
  std::lock_guard lock(slab_mu_);
  for (size_t i = 0; i < kMaxRegistrars; i++) {
    if (registrars_[i] != r) continue;
    for (size_t s = 0; s < nslabs_; s++) dereg_slab(r, slabs_[s].get(), i);
    registrars_[i] = nullptr;
    return 0;
  }
  return -ENOENT;
}

BufDesc* SlabPool::pop() {
  std::lock_guard lock(free_mu_);
  BufDesc* d = free_;
  if (d) {
    free_ = d->next_free;
    nfree_--;
  }
  return d;
}

void SlabPool::put(BufDesc* d) {
  std::lock_guard lock(free_mu_);
  d->next_free = free_;
  free_ = d;
  nfree_++;
}

Buffer SlabPool::alloc() {
  BufDesc* d = pop();
  if (!d) {
    std::lock_guard lock(slab_mu_);
    d = pop();  // another thread may have grown the pool meanwhile
    if (!d && grow_locked(&d) != 0) return Buffer();
  }
  d->size = 0;
  d->refs.store(1, std::memory_order_relaxed);
  return Buffer(d);
}

size_t SlabPool::slab_count() const {
  std::lock_guard lock(slab_mu_);
  return nslabs_;
}

size_t SlabPool::free_count() const {
  std::lock_guard lock(free_mu_);
  return nfree_;
}

}  // namespace ss::mem
