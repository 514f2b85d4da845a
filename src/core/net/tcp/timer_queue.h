// The timers of a stack's connections (retransmission, delayed ACK, loss
// probe, persist, keepalive, TIME_WAIT), due at exact microseconds of a
// clock the caller passes in: no periodic tick (libvma's 100 ms tick
// delays ACKs and retransmissions by up to its period). An indexed binary
// heap: the earliest deadline is read in O(1), which is what a sleeper
// needs to bound its sleep; arming, re-arming (every ACK moves the
// retransmission timer) and cancelling cost O(log n). Driven by the
// program's own calls and by a service thread while the program sleeps;
// not thread-safe (the stack's lock guards it).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ss::net::tcp {

class TimerQueue;

// One timer: owned by its user (a connection), linked into at most one
// queue. It must be cancelled (or fire) before it is destroyed.
struct Timer {
  uint64_t due_us = 0;  // valid while armed()
  size_t slot = kIdle;  // index in the heap, kIdle when not armed
  static constexpr size_t kIdle = SIZE_MAX;
  bool armed() const { return slot != kIdle; }
};

class TimerQueue {
 public:
  // Arms t (moving it when armed already) to fire at due_us.
  void arm(Timer* t, uint64_t due_us);
  // Disarms t; nothing when it is not armed.
  void cancel(Timer* t);
  // The earliest deadline, UINT64_MAX when nothing is armed.
  uint64_t next_due() const { return heap_.empty() ? UINT64_MAX : heap_[0]->due_us; }
  // Disarms and returns the earliest timer due at or before now_us, or
  // nullptr: the caller fires it (and may arm it again), then asks again.
  Timer* pop_due(uint64_t now_us);
  size_t size() const { return heap_.size(); }

 private:
  void place(size_t i, Timer* t);
  void up(size_t i);
  void down(size_t i);
  std::vector<Timer*> heap_;
};

}  // namespace ss::net::tcp
