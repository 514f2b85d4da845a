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
#pragma once
#include <atomic>
#include <cstdint>

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
  void add_holder() { count_->fetch_add(1, std::memory_order_relaxed); }
  // Undoes add_holder (a fork that failed).
  void remove_holder() { count_->fetch_sub(1, std::memory_order_relaxed); }
  // This process lets go: true when no other process holds it. The share
  // is closed either way. A share never opened counts as held here alone.
  SS_API bool drop();
  // Processes holding it now (1 when never opened).
  uint32_t holders() const { return count_ ? count_->load(std::memory_order_relaxed) : 1; }

 private:
  std::atomic<uint32_t>* count_ = nullptr;
};

}  // namespace ss
