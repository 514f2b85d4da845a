// What an fd-table object implements so that one poll over mixed
// descriptors (poll_mixed, select_mixed; the preloads' poll, select and
// epoll) can wait on it beside kernel descriptors. The object's descriptor
// is only its name: its readiness comes from readiness(), and a sleep waits
// on what wait_target() names (a provider's event fd, a listener's queue)
// and on the object's Kick, which other threads write when they change its
// state.
#pragma once
#include <poll.h>

#include <cstdint>

namespace ss {

// What one object's sleep waits on.
struct WaitTarget {
  static constexpr int kReady = -1;     // ready now: look again, no sleep
  static constexpr int kTimeOnly = -2;  // nothing changes by itself: only the timeout
  int fd = kReady;                      // >= 0: a descriptor to poll for `events`
  short events = 0;
  // The object's kick eventfd, or -1. Set: the caller counts as the
  // object's waiter until after_wait().
  int kick_fd = -1;
  uintptr_t tag = 0;  // the object's own, handed back to its after_wait
};

class Pollable {
 public:
  // revents for `events` from the state after progressing it (POLLERR and
  // POLLHUP whether asked or not, as poll(2)).
  virtual short readiness(short events) = 0;
  // The look of a caller that spins (from the first look of a call that
  // may wait; never the look of one that may not, the first after a
  // sleep or the last before a timeout, nor the look before a sleep:
  // wait_target() sees everything): an object may skip its costly checks
  // (syscalls) on most of them, as VMA's *_POLL_OS_RATIO settings do. By
  // default a full look.
  virtual short readiness_repeat(short events) { return readiness(events); }
  // Arms a sleep on `events`. `*sleep_ms` (< 0: unbounded) may be cut to a
  // deadline of the object's own that nothing else would wake it for.
  virtual WaitTarget wait_target(short events, int* sleep_ms) = 0;
  // After the sleep, for each target with fd >= 0; `kicked`: the sleep saw
  // its kick_fd readable.
  virtual void after_wait(const WaitTarget& armed, bool kicked) = 0;
  // Optional, for edge-triggered epoll: a count that moves with every
  // event (data arrived, space freed, state changed), read before
  // readiness(). false: not counted, and EPOLLET on this object reports as
  // level-triggered (spurious events, never a lost one).
  virtual bool change_count(uint64_t* count) { return false; }
  // Optional: true while the descriptor's own kernel readiness is the
  // whole answer, for good (a socket a preload left to the kernel). An
  // epoll set adding it then puts it in its kernel part, where the kernel
  // keeps its edge and one-shot state.
  virtual bool kernel_served() { return false; }
  // In a fork child, from the fd table's child handler (one thread, before
  // any call): a lock another thread of the parent held at the fork is
  // inherited held, and no thread of this process will ever release it;
  // the object resets such locks and whatever marks a parent thread's call
  // under way (a turn taken, a sleeper counted). Optional.
  virtual void fork_child() {}

 protected:
  // Owned through the fd table's shared_ptr, never deleted as a Pollable;
  // virtual all the same, so an implementation need not be final.
  virtual ~Pollable() = default;
};

// One sleep on one object: armed at construction, after_wait (for a
// target with fd >= 0) at destruction, however the sleep ends (a
// cancellation's unwind too). The sleeper sets `kicked`.
class PollableSleep {
 public:
  PollableSleep(Pollable& p, short events, int* sleep_ms)
      : target(p.wait_target(events, sleep_ms)), p_(p) {}
  ~PollableSleep() {
    if (target.fd >= 0) p_.after_wait(target, kicked);
  }
  PollableSleep(const PollableSleep&) = delete;
  PollableSleep& operator=(const PollableSleep&) = delete;

  const WaitTarget target;
  bool kicked = false;

 private:
  Pollable& p_;
};

}  // namespace ss
