// SlabPool: memory in registered slabs (each a Region, so it can be handed
// to a peer), carved into fixed-size buffers. Every slab is registered with
// every Registrar added to the pool, so a Buffer's keys are a field read.
#pragma once
#include <cstddef>
#include <memory>
#include <mutex>

#include "core/mem/buffer.h"
#include "core/mem/descriptor.h"
#include "core/mem/registrar.h"

namespace ss::mem {

class SlabPool {
 public:
  // buf_size is rounded up to 64 B (cache line; buffers stay aligned since
  // slabs are page-aligned). One slab is created now so that a system which
  // cannot provide memory fails here, not on the data path; more are added
  // on demand up to max_slabs.
  static int create(size_t buf_size, size_t bufs_per_slab, size_t max_slabs,
                    std::unique_ptr<SlabPool>* out);
  // Deregisters every slab from every registrar. Every Buffer must have been
  // released first (an outstanding one is logged as an error).
  ~SlabPool();
  SlabPool(const SlabPool&) = delete;
  SlabPool& operator=(const SlabPool&) = delete;

  // Registers all existing and future slabs with r. Returns the index to
  // pass to Buffer::lkey()/rkey() (>= 0), or -errno: -EEXIST if r is already
  // added, -ENOSPC beyond kMaxRegistrars, or reg()'s error (after undoing the
  // slabs it had registered). r must outlive the pool or be removed.
  int add_registrar(Registrar* r);
  // Deregisters every slab from r and frees its index: 0 or -ENOENT.
  int remove_registrar(Registrar* r);

  // A buffer with one reference and size 0, or an empty Buffer when the pool
  // is exhausted (max_slabs reached, or a new slab could not be made or
  // registered). Thread-safe.
  Buffer alloc();

  size_t buf_size() const { return buf_size_; }
  size_t bufs_per_slab() const { return bufs_per_slab_; }
  size_t max_slabs() const { return max_slabs_; }
  size_t slab_count() const;
  size_t free_count() const;

 private:
  friend class Buffer;
  SlabPool(size_t buf_size, size_t bufs_per_slab, size_t max_slabs)
      : buf_size_(buf_size), bufs_per_slab_(bufs_per_slab), max_slabs_(max_slabs) {}
  detail::BufDesc* pop();
  void put(detail::BufDesc* d);
  // With slab_mu_ held: adds a slab, hands back one of its buffers and frees
  // the rest. 0 or -errno.
  int grow_locked(detail::BufDesc** first);

  const size_t buf_size_, bufs_per_slab_, max_slabs_;

  // Slow path: slab growth and registrars. Held across provider calls
  // (memory registration can take milliseconds), hence separate from free_mu_.
  mutable std::mutex slab_mu_;
  std::unique_ptr<std::unique_ptr<detail::Slab>[]> slabs_;  // max_slabs_ slots
  size_t nslabs_ = 0;
  Registrar* registrars_[kMaxRegistrars] = {};

  // Fast path: the free list, held for a few instructions. Next step when it
  // shows up in profiles: per-thread caches refilled in batches.
  mutable std::mutex free_mu_;
  detail::BufDesc* free_ = nullptr;  // LIFO: the warmest buffer goes out next
  size_t nfree_ = 0;
};

}  // namespace ss::mem
