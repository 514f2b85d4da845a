// How many processes hold an object that fork() copies (an rsocket
// connection: its descriptors, mappings and state are copied into the
// child, which may go on using it after the parent closes its copy).
// Only the last holder's close may end the object for everyone.
//
// The count lives in memory mapped MAP_SHARED | MAP_ANONYMOUS, which fork
// shares rather than copies: every process that inherited the object
// reads and changes the same counter. Counters come from 4 KiB chunks a
// process maps when it needs more; a chunk mapped after a fork is seen
// only by this process and its later children, which are exactly the
// processes that can hold what it counts. A counter at 0 is free: taking
// one is a compare-and-swap 0 -> 1 (a sibling sharing the chunk may be
// taking one at the same time), and the last drop frees it.
//
// Beside the count, whose copy of the object is current (the turn): fork
// gives each process a copy of its state, and a copy goes out of date once
// another process moves the object on. Right after a fork every copy is
// the same; the first holder to move the object then takes the turn (the
// holder before the fork keeps it by moving first), and the other copies
// are stale from then on. A holder that closes its copy (or exits) gives
// the turn up, and a copy still as current as it was may take it. So a
// process never acts on state another process has moved past.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/base/api.h"

namespace ss {

class ProcessShare {
 public:
  ProcessShare() = default;
  ProcessShare(const ProcessShare&) = delete;
  ProcessShare& operator=(const ProcessShare&) = delete;

  // Takes a free counter, held by this process alone: 0 or -ENOMEM.
  SS_API int open();
  bool is_open() const { return count_ != nullptr; }
  // Another process holds it too: called for a fork child (before the
  // fork, so the parent cannot drop to 0 while the child is on its way).
  void add_holder() { slot()->count.fetch_add(1, std::memory_order_relaxed); }
  // Undoes add_holder (a fork that failed).
  void remove_holder() { slot()->count.fetch_sub(1, std::memory_order_relaxed); }
  // This process lets go: true when no other process holds it. The share
  // is closed either way. A share never opened counts as held here alone.
  SS_API bool drop();
  // Processes holding it now (1 when never opened).
  uint32_t holders() const { return count_ ? slot()->count.load(std::memory_order_relaxed) : 1; }

  // Every answer is true for a share never opened.
  // This process's copy is current: it holds the turn, or the turn is
  // free (given up, or a fork since its holder last moved the object) and
  // nobody took it since this copy was made. It may look (a peek that
  // moves nothing); false once it is stale, for good.
  SS_API bool current() const;
  // About to move the object (send, take what arrived): true when this
  // process holds the turn now (taken if current). False: stale.
  SS_API bool take_turn();
  // For the library's own threads, which must not take the turn from a
  // fork sibling whose program may be about to move the object: this
  // process holds the turn, or it is free and no fork came since it was
  // given up (or the object was made). take_settled: take_turn if so.
  SS_API bool settled() const;
  SS_API bool take_settled();
  SS_API bool holds_turn() const;
  // Before a fork, with add_holder: the copies about to be equal, whoever
  // moves the object first takes the turn.
  SS_API void forked();
  // This process closes its copy or exits: the turn, if it holds it, is
  // free for a copy as current as its own (drop() does it too).
  SS_API void give_up_turn();

  // The hand-over: the holder of the turn leaves its state for the other
  // copies as it goes (exits or closes its copy), and a copy out of date
  // takes it up. The room, `bytes`, is reserved at the first fork that
  // shares the object (forked()), in memory every process of that fork
  // and later ones maps.
  void want_handover(size_t bytes) { handover_want_ = bytes; }
  // The holder leaves `len` bytes at its version and gives the turn up;
  // false (the turn kept) without room for them.
  SS_API bool hand_over(const std::vector<uint8_t>& state);
  // A copy not current, and a state left at the turn's version: its bytes
  // in *state and the version. Taken up with adopt(version) once applied.
  SS_API bool left_for_us(std::vector<uint8_t>* state, uint32_t* version) const;
  void adopt(uint32_t version) { version_ = version; }

  // One counter: the count, and the turn (its version in the high half,
  // bumped at each take; kForked; the holder's pid, 0 when free).
  struct Slot {
    std::atomic<uint32_t> count;
    uint32_t unused;
    std::atomic<uint64_t> turn;
  };

 private:
  static constexpr uint64_t kOwnerMask = 0x7fffffffu, kForked = 0x80000000u;
  Slot* slot() const { return reinterpret_cast<Slot*>(count_); }
  struct Area {
    std::atomic<uint64_t> version;  // the turn's version + 1 (0: nothing left)
    uint64_t len;
    uint8_t data[];
  };
  std::atomic<uint32_t>* count_ = nullptr;  // the slot's count (its first member)
  size_t handover_want_ = 0;
  // MAP_SHARED, handover_want_ bytes of data; set by the fork handler
  // while a call of another thread may read it.
  std::atomic<Area*> area_{nullptr};
  size_t area_len_ = 0;
  uint32_t version_ = 0;  // the turn's version this process's copy is current at
};

}  // namespace ss
