// Internal to core/mem: a small number per live thread, so each pool can
// keep one cache per thread in a plain array (no per-pool thread_local
// lookup), and the list of pools whose caches a thread spills at exit (and
// a fork child spills for the threads it did not inherit).
#pragma once

namespace ss::mem {
class Pool;
}

namespace ss::mem::detail {

inline constexpr int kMaxThreadSlots = 64;

// This thread's slot, taken on first use and given back when the thread
// exits (after its caches went back to their pools); -1 once all are taken
// (that thread then uses the pools' shared lists only).
int thread_slot();

// Pools with thread caches are tracked from creation to destruction; a thread exiting spills
// its cache of every tracked pool while holding the same lock, so a pool is
// never destroyed under a spill.
void track_pool(Pool* p);
void untrack_pool(Pool* p);

}  // namespace ss::mem::detail
