#include "core/res/mr_cache.h"

#include <unistd.h>
#include <urcu/urcu-bp.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <new>

#include "core/base/log.h"

namespace ss::res {

// An immutable, start-sorted array of entries. Replaced whole on change.
struct MrCache::Snapshot {
  size_t n;
  Entry* e[1];  // n entries follow

  static Snapshot* make(size_t n) {
    void* p = malloc(sizeof(Snapshot) + (n ? n - 1 : 0) * sizeof(Entry*));
    if (!p) return nullptr;
    auto* s = static_cast<Snapshot*>(p);
    s->n = n;
    return s;
  }
};

namespace {
uintptr_t page_size() {
  static const uintptr_t ps = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  return ps;
}

bool covers(const MrCache::Entry* e, ibv_pd* pd, uintptr_t start, uintptr_t end, int access) {
  return e->pd == pd && e->start <= start && end <= e->end && (e->access & access) == access;
}

// Index of the first entry whose start is above `addr`.
size_t upper(const MrCache::Entry* const* e, size_t n, uintptr_t addr) {
  return static_cast<size_t>(
      std::upper_bound(e, e + n, addr,
                       [](uintptr_t a, const MrCache::Entry* x) { return a < x->start; }) -
      e);
}
}  // namespace

MrCache::~MrCache() {
  // Process exit: whatever is still registered goes with the process.
  free(snap_);
}

MrCache::Entry* MrCache::find(ibv_pd* pd, const void* addr, size_t len, int access) const {
  const uintptr_t start = reinterpret_cast<uintptr_t>(addr), end = start + len;
  Entry* found = nullptr;
  urcu_bp_read_lock();
  const Snapshot* s = rcu_dereference(snap_);
  if (s)
    for (size_t i = upper(s->e, s->n, start); i-- > 0;)
      if (covers(s->e[i], pd, start, end, access)) {
        found = s->e[i];
        break;
      }
  urcu_bp_read_unlock();
  return found;
}

MrCache::Entry* MrCache::take_locked(ibv_pd* pd, uintptr_t start, uintptr_t end, int access) {
  if (!snap_) return nullptr;
  for (size_t i = upper(snap_->e, snap_->n, start); i-- > 0;)
    if (covers(snap_->e[i], pd, start, end, access)) {
      snap_->e[i]->refs.fetch_add(1, std::memory_order_relaxed);
      return snap_->e[i];
    }
  return nullptr;
}

void MrCache::publish_locked(Snapshot* next) {
  Snapshot* old = snap_;
  rcu_assign_pointer(snap_, next);
  // Readers of the old array finish before it goes.
  urcu_bp_synchronize_rcu();
  free(old);
}

int MrCache::acquire(ibv_pd* pd, const void* addr, size_t len, int access, Entry** out) {
  if (!pd || !addr || !len) return -EINVAL;
  const uintptr_t start = reinterpret_cast<uintptr_t>(addr);
  if (start + len < start) return -EINVAL;
  std::lock_guard<std::mutex> lk(mu_);
  if ((*out = take_locked(pd, start, start + len, access))) return 0;

  // Page-aligned, so a neighbour's registration of the same pages is shared.
  const uintptr_t ps = page_size();
  const uintptr_t s = start & ~(ps - 1), e = (start + len + ps - 1) & ~(ps - 1);
  ibv_mr* mr = ibv_reg_mr(pd, reinterpret_cast<void*>(s), e - s, access);
  if (!mr) {
    int err = errno ? errno : ENOMEM;
    SS_WARN("verbs: ibv_reg_mr of %zu bytes failed: %s", static_cast<size_t>(e - s), strerror(err));
    return -err;
  }
  auto* entry = new (std::nothrow) Entry{pd, s, e, access, mr, {1}};
  size_t n = snap_ ? snap_->n : 0;
  Snapshot* next = entry ? Snapshot::make(n + 1) : nullptr;
  if (!next) {
    delete entry;
    ibv_dereg_mr(mr);
    return -ENOMEM;
  }
  size_t at = snap_ ? upper(snap_->e, n, s) : 0;
  for (size_t i = 0, j = 0; i < n + 1; i++) next->e[i] = i == at ? entry : snap_->e[j++];
  publish_locked(next);
  *out = entry;
  return 0;
}

void MrCache::release(Entry* entry) {
  if (!entry) return;
  std::lock_guard<std::mutex> lk(mu_);
  if (entry->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  size_t n = snap_ ? snap_->n : 0;
  Snapshot* next = n > 1 ? Snapshot::make(n - 1) : nullptr;
  if (n > 1 && !next) {
    // Cannot shrink the array: keep the entry listed, matching nothing.
    SS_WARN("verbs: MR cache out of memory; leaving a dead entry");
    entry->pd = nullptr;
    return;
  }
  for (size_t i = 0, j = 0; i < n; i++)
    if (snap_->e[i] != entry) next->e[j++] = snap_->e[i];
  publish_locked(next);
  if (ibv_dereg_mr(entry->mr)) SS_WARN("verbs: ibv_dereg_mr failed: %s", strerror(errno));
  delete entry;
}

size_t MrCache::size() const {
  std::lock_guard<std::mutex> lk(mu_);
  return snap_ ? snap_->n : 0;
}

}  // namespace ss::res
