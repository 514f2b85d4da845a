#include "core/mem/thread_slots.h"

#include <pthread.h>

#include <bitset>
#include <mutex>
#include <new>
#include <vector>

#include "core/mem/pool.h"

namespace ss::mem::detail {
namespace {

constexpr int kNone = -1, kUnset = -2;

struct Registry {
  std::mutex mu;
  std::bitset<kMaxThreadSlots> used;
  std::vector<Pool*> pools;
};
Registry& registry();

struct SlotHolder {
  int slot = kUnset;
  ~SlotHolder() {
    if (slot < 0) return;
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    for (Pool* p : r.pools) p->spill_thread_cache(slot);
    r.used.reset(static_cast<size_t>(slot));
    // The thread may still get and release frames (a later thread_local's
    // destructor; exit's handlers run after the exiting thread's): the
    // shared lists from here, never the slot another thread may take now.
    slot = kNone;
  }
};

thread_local SlotHolder t_slot;

// fork() copies only the calling thread: the other threads' caches would be
// stranded in the child. The registry lock is held across fork so the child
// sees it consistent, then hands those caches back to their pools.
void before_fork() { registry().mu.lock(); }
void parent_after_fork() { registry().mu.unlock(); }
void child_after_fork() {
  Registry& r = registry();
  for (int i = 0; i < kMaxThreadSlots; i++) {
    if (i == t_slot.slot || !r.used.test(static_cast<size_t>(i))) continue;
    for (Pool* p : r.pools) p->spill_thread_cache(i);
    r.used.reset(static_cast<size_t>(i));
  }
  r.mu.unlock();
}

// Leaked on purpose: threads may exit after static destructors ran.
Registry& registry() {
  static Registry* r = [] {
    pthread_atfork(before_fork, parent_after_fork, child_after_fork);
    return new Registry;
  }();
  return *r;
}

}  // namespace

int thread_slot() {
  if (t_slot.slot != kUnset) return t_slot.slot;
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  t_slot.slot = kNone;
  for (int i = 0; i < kMaxThreadSlots; i++) {
    if (!r.used.test(static_cast<size_t>(i))) {
      r.used.set(static_cast<size_t>(i));
      t_slot.slot = i;
      break;
    }
  }
  return t_slot.slot;
}

void track_pool(Pool* p) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  try {
    r.pools.push_back(p);
  } catch (const std::bad_alloc&) {
    // Untracked: an exiting thread's cache of this pool stays in its slot
    // for the next thread that takes the slot.
  }
}

void untrack_pool(Pool* p) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (size_t i = 0; i < r.pools.size(); i++) {
    if (r.pools[i] == p) {
      r.pools[i] = r.pools.back();
      r.pools.pop_back();
      return;
    }
  }
}

}  // namespace ss::mem::detail
