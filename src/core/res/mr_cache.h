// MR cache: memory registrations keyed by (protection domain, address
// range). Lookups (the data path: is this buffer registered?) take no lock:
// readers see an immutable sorted snapshot under liburcu's bulletproof RCU;
// writers (register/deregister, the slow path) build a new snapshot under a
// mutex and free the old one after a grace period.
//
// A registration lives while someone holds it: the last release
// deregisters. Keeping unused registrations would pin pages the program may
// unmap and later reuse at the same address for other memory, which a
// cache cannot see without intercepting munmap.
#pragma once
#include <infiniband/verbs.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace ss::res {

class MrCache {
 public:
  struct Entry {
    ibv_pd* pd;
    uintptr_t start, end;  // page-aligned [start, end)
    int access;
    ibv_mr* mr;
    std::atomic<int> refs;
  };

  MrCache() = default;
  ~MrCache();
  MrCache(const MrCache&) = delete;
  MrCache& operator=(const MrCache&) = delete;

  // A registration of `pd` covering [addr, addr+len) with at least
  // `access` (IBV_ACCESS_* flags), shared with earlier holders when one
  // exists. 0 and *out, or -errno (from ibv_reg_mr).
  int acquire(ibv_pd* pd, const void* addr, size_t len, int access, Entry** out);
  // Drops one hold; the last one deregisters.
  void release(Entry* e);

  // Lock-free: an entry covering the range, or nullptr. The pointer is
  // valid while the caller holds a reference it acquired earlier for the
  // same range (the lookup itself pins nothing).
  Entry* find(ibv_pd* pd, const void* addr, size_t len, int access) const;

  size_t size() const;  // live registrations (tests)

 private:
  struct Snapshot;
  // Under mu_: the covering entry with one more reference, or nullptr.
  Entry* take_locked(ibv_pd* pd, uintptr_t start, uintptr_t end, int access);
  void publish_locked(Snapshot* next);

  mutable std::mutex mu_;
  Snapshot* snap_ = nullptr;  // RCU-published
};

}  // namespace ss::res
