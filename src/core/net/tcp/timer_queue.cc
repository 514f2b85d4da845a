#include "core/net/tcp/timer_queue.h"

namespace ss::net::tcp {

void TimerQueue::place(size_t i, Timer* t) {
  heap_[i] = t;
  t->slot = i;
}

void TimerQueue::up(size_t i) {
  Timer* t = heap_[i];
  while (i > 0) {
    const size_t parent = (i - 1) / 2;
    if (heap_[parent]->due_us <= t->due_us) break;
    place(i, heap_[parent]);
    i = parent;
  }
  place(i, t);
}

void TimerQueue::down(size_t i) {
  Timer* t = heap_[i];
  const size_t n = heap_.size();
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && heap_[child + 1]->due_us < heap_[child]->due_us) child++;
    if (t->due_us <= heap_[child]->due_us) break;
    place(i, heap_[child]);
    i = child;
  }
  place(i, t);
}

void TimerQueue::arm(Timer* t, uint64_t due_us) {
  if (!t->armed()) {
    t->due_us = due_us;
    heap_.push_back(t);
    t->slot = heap_.size() - 1;
    up(t->slot);
    return;
  }
  const bool earlier = due_us < t->due_us;
  t->due_us = due_us;
  if (earlier)
    up(t->slot);
  else
    down(t->slot);
}

void TimerQueue::cancel(Timer* t) {
  if (!t->armed()) return;
  const size_t i = t->slot;
  t->slot = Timer::kIdle;
  Timer* last = heap_.back();
  heap_.pop_back();
  if (last == t) return;
  place(i, last);
  up(i);
  down(last->slot);
}

Timer* TimerQueue::pop_due(uint64_t now_us) {
  if (heap_.empty() || heap_[0]->due_us > now_us) return nullptr;
  Timer* t = heap_[0];
  cancel(t);
  return t;
}

}  // namespace ss::net::tcp
