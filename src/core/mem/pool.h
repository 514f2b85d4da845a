// Pool: frames of one power-of-two size in chunks of memory, handed out as
// Buffers. The chunk layout is the caller's choice: max_chunks = 1 is one
// contiguous area created up front (frame i at base + i * frame_size: an
// AF_XDP UMEM); more chunks grow on demand, each registered with every
// Registrar added to the pool (verbs slabs). Chunk memory is shared (memfd)
// or private, on hugepages where allowed and available (ChunkMemory).
//
// get() and a last release take no lock: each thread has a small cache of
// free frames per pool, refilled from and spilled to a lock-free shared
// list in batches; a thread's cache goes back to the shared list when the
// thread exits. A Recycler, when set, sees every released frame first (a
// ring provider puts it straight back into its fill ring).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "core/base/api.h"
#include "core/mem/buffer.h"
#include "core/mem/chunk_memory.h"
#include "core/mem/descriptor.h"
#include "core/mem/registrar.h"

namespace ss::mem {

struct PoolOptions {
  size_t frame_size = 2048;      // rounded up to a power of two, at least 64
  size_t headroom = 0;           // offset of a new handle's view; < frame_size
  size_t frames_per_chunk = 64;  // rounded up to a power of two
  size_t max_chunks = 1;         // 1: one contiguous area (a UMEM)
  Backing backing = Backing::kShared;
  bool hugepages = false;                // allowed (the caller's setting); used if available
  const char* name = "slipstream-pool";  // memfd name, shown in /proc/PID/maps
  // MADV_DONTFORK on the chunks: a fork child gets no copy of them (memory
  // a device pins is copied whole at fork otherwise). The frames held at
  // the fork can follow as copies (fork_frames.h).
  bool dont_fork = false;
};

// Sees every frame whose last holder let go, as a fresh handle (view:
// headroom, size 0). It takes the frame (moves it out, e.g. into a fill
// ring) or leaves it, and what it leaves goes to the free list. Called on the
// releasing thread, so it must be thread-safe and must not block.
class Recycler {
 public:
  virtual ~Recycler() = default;
  virtual void recycle(Buffer& frame) = 0;
};

class Pool {
 public:
  // -EINVAL for zero sizes, headroom >= frame size or more than 2^32 - 2
  // frames; the first chunk is made now so a system that cannot provide the
  // memory fails here, not on the data path.
  SS_API static int create(const PoolOptions& opt, std::unique_ptr<Pool>* out);
  // Deregisters every chunk from every registrar. Every Buffer (and raw
  // pointer) must have been given back first; one still out is logged.
  SS_API ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // A frame with one holder, view (headroom, 0); an empty Buffer when the
  // pool is exhausted (max_chunks reached, or a new chunk could not be made
  // or registered). Frames cached by other threads are not searched.
  SS_API Buffer get();

  // Takes back a reference lent with Buffer::into_raw: p may point anywhere
  // inside the frame; the handle's view starts at p with size 0. -EINVAL
  // (and *out untouched) when p is not inside one of this pool's frames or
  // that frame has no lent reference (stale, or already given back). A
  // frame recycled and lent again accepts its old pointer: a bare pointer
  // carries no generation.
  SS_API int from_raw(const void* p, Buffer* out);

  // Registers all existing and future chunks with r. Returns the index to
  // pass to Buffer::reg() (>= 0), or -errno: -EEXIST if r is already added,
  // -ENOSPC beyond kMaxRegistrars, or reg()'s error (after undoing the
  // chunks it had registered). r must outlive the pool or be removed. Add
  // registrars before frames circulate among threads.
  SS_API int add_registrar(Registrar* r);
  // Deregisters every chunk from r and frees its index: 0 or -ENOENT.
  SS_API int remove_registrar(Registrar* r);

  // r (or nullptr) sees released frames from now on. Returns once no
  // release is inside the previous one (recycle never blocks: a short
  // wait), so the previous one may be destroyed then.
  void set_recycler(Recycler* r) {
    std::lock_guard lock(recycler_mu_);
    recycler_.store(r, std::memory_order_seq_cst);
    // Releases from now on count in the other half: only those that may
    // have seen the previous recycler are waited for (a stream of new
    // ones never starves the wait).
    const unsigned old = recycler_phase_.fetch_xor(1, std::memory_order_seq_cst);
    while (in_recycler_[old].load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
  }

  size_t frame_size() const { return size_t{1} << frame_shift_; }
  size_t headroom() const { return headroom_; }
  size_t frames_per_chunk() const { return size_t{1} << chunk_shift_; }
  size_t max_chunks() const { return max_chunks_; }
  size_t chunk_count() const { return nchunks_.load(std::memory_order_acquire); }
  size_t frame_count() const { return chunk_count() << chunk_shift_; }
  // Frames in chunk i: [chunk_base(i), chunk_base(i) + chunk_bytes()).
  SS_API void* chunk_base(size_t i) const;
  size_t chunk_bytes() const { return frames_per_chunk() << frame_shift_; }
  SS_API bool chunk_huge(size_t i) const;
  // Frame i (i < frame_count()): its first byte, and whether anyone holds
  // it now (a handle or a raw reference; a snapshot, others may change it).
  char* frame_data(uint32_t i) const;
  bool frame_held(uint32_t i) const;
  // Frames nobody holds: on the shared list or in a thread's cache (exact
  // once the pool is quiet).
  size_t free_count() const;

  // Internal (Buffer, thread exit).
  static void release_frame(detail::FrameDesc* d);
  void spill_thread_cache(int slot);

 private:
  static constexpr uint32_t kMaxCache = 32;  // frames a thread may keep per pool
  // Only its thread touches items; n is atomic so free_count() may read it.
  struct alignas(64) ThreadCache {
    std::atomic<uint32_t> n{0};
    uint32_t items[kMaxCache];
  };

  Pool(const PoolOptions& opt, uint32_t frame_shift, uint32_t chunk_shift);
  detail::FrameDesc* desc(uint32_t index) const {
    return &chunks_[index >> chunk_shift_]->frames[index & ((1u << chunk_shift_) - 1)];
  }
  void spill(ThreadCache* c, uint32_t count);
  detail::FrameDesc* pop_shared();
  void push_shared(detail::FrameDesc* first, detail::FrameDesc* last, size_t n);
  detail::FrameDesc* get_frame();
  void put_frame(detail::FrameDesc* d);
  int grow();

  const uint32_t frame_shift_, chunk_shift_;
  const uint32_t headroom_;
  const size_t max_chunks_;
  PoolOptions opt_;
  char name_[32];  // opt_.name points here

  // Slow path: chunk growth and registrars. Held across provider calls
  // (registration can take milliseconds), never on get()/release.
  mutable std::mutex chunk_mu_;
  std::unique_ptr<std::unique_ptr<detail::Chunk>[]> chunks_;  // max_chunks_ slots
  std::atomic<size_t> nchunks_{0};  // published with release after the slot
  Registrar* registrars_[kMaxRegistrars] = {};

  std::atomic<Recycler*> recycler_{nullptr};
  // Releases between their load of recycler_ and the end of its recycle(),
  // by the phase they read first: raised before the load, so set_recycler()
  // sees it or they see the new one.
  std::atomic<int> in_recycler_[2] = {0, 0};
  std::atomic<unsigned> recycler_phase_{0};
  std::mutex recycler_mu_;  // set_recycler's, one at a time

  // The shared free list: a Treiber stack of frame indices (+1) in the low
  // 32 bits, a change count in the high 32 against ABA.
  std::atomic<uint64_t> head_{0};
  std::atomic<size_t> nfree_{0};

  uint32_t cache_cap_ = 0;  // 0: no per-thread caches (tiny pools)
  std::unique_ptr<ThreadCache[]> caches_;
};

}  // namespace ss::mem
