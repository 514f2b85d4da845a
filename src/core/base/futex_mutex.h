// A lock for the data path: a three-state futex mutex (Drepper, "Futexes
// Are Tricky", mutex #2). Uncontended lock and unlock are one locked
// instruction each, inline; glibc's pthread_mutex costs ~60 instructions
// a pair through the gthread wrappers, paid on every rsend/rrecv (the
// socket lock) and every incoming tcp frame (the region table).
// BasicLockable, so std::unique_lock/lock_guard work with it.
#pragma once
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace ss {

class FutexMutex {
 public:
  FutexMutex() = default;
  FutexMutex(const FutexMutex&) = delete;
  FutexMutex& operator=(const FutexMutex&) = delete;

  void lock() {
    uint32_t c = 0;
    if (__builtin_expect(state_.compare_exchange_strong(c, 1, std::memory_order_acquire), 1))
      return;
    lock_slow(c);
  }
  bool try_lock() {
    uint32_t c = 0;
    return state_.compare_exchange_strong(c, 1, std::memory_order_acquire);
  }
  void unlock() {
    if (__builtin_expect(state_.exchange(0, std::memory_order_release) == 2, 0)) wake();
  }
  // In a fork child (one thread): unlocked, whoever held it in the parent
  // (that thread does not exist here).
  void reset_in_fork_child() { state_.store(0, std::memory_order_relaxed); }

 private:
  // 0 free, 1 locked, 2 locked with (possible) sleepers.
  void lock_slow(uint32_t c) {
    if (c != 2) c = state_.exchange(2, std::memory_order_acquire);
    while (c != 0) {
      syscall(SYS_futex, &state_, FUTEX_WAIT_PRIVATE, 2, nullptr, nullptr, 0);
      c = state_.exchange(2, std::memory_order_acquire);
    }
  }
  void wake() { syscall(SYS_futex, &state_, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0); }

  std::atomic<uint32_t> state_{0};
};

}  // namespace ss
