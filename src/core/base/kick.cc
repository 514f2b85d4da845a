#include "core/base/kick.h"

#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <mutex>

#include "core/base/log.h"
#include "core/base/own_fd.h"
#include "core/base/sandbox.h"
#include "core/base/signal_depth.h"

namespace ss {

// A thread's wake-up. Freed with its thread unless it is still some
// object's waiter (a thread cancelled in its sleep): then kept, as that
// object may still kick it.
struct KickSleeper {
  int fd = -1;
  int joins = 0;                     // objects it waits on now
  bool seen = false;                 // this sleep saw its eventfd readable
  std::atomic<bool> pending{false};  // kicked since its last drain
};

namespace {

// A signal handler's sleeps have an eventfd per handler depth: the call
// the handler interrupted may still wait on an object (a quiet sleep,
// signal_depth.h), so the thread's eventfd is not drained when the
// handler leaves its own last object, and a sleep on it would wake at
// once for good. In place: a handler must not allocate.
constexpr int kHandlerDepths = 3;  // deeper handlers share the last

struct ThreadSleeper {
  KickSleeper* s = nullptr;
  KickSleeper in_handler[kHandlerDepths];
  ~ThreadSleeper() {
    for (KickSleeper& h : in_handler)
      if (h.fd >= 0 && h.joins == 0) ::close(h.fd);
    if (!s || s->joins > 0) return;
    if (s->fd >= 0) ::close(s->fd);
    delete s;
    s = nullptr;
  }
};

thread_local ThreadSleeper t_sleeper;

// The sleeper of this thread at its handler depth (null: none made yet
// outside handlers).
KickSleeper* current_sleeper() {
  const int depth = signal_handlers_running();
  if (depth <= 0) return t_sleeper.s;
  return &t_sleeper.in_handler[std::min(depth, kHandlerDepths) - 1];
}

// A fork child's one thread: its eventfd is shared with the parent's
// same thread (a drain here would eat the parent's kicks); a new one is
// made at its next join.
void reset_in_fork_child(KickSleeper* s) {
  if (s->fd >= 0) own_close(s->fd);  // in a fork handler: not through a preload
  s->fd = -1;
  s->joins = 0;
  s->seen = false;
  s->pending.store(false, std::memory_order_relaxed);
}
void sleeper_in_fork_child() {
  if (t_sleeper.s) reset_in_fork_child(t_sleeper.s);
  for (KickSleeper& h : t_sleeper.in_handler) reset_in_fork_child(&h);
}

KickSleeper* this_sleeper() {
  static std::once_flag registered;
  std::call_once(registered, [] { pthread_atfork(nullptr, nullptr, sleeper_in_fork_child); });
  if (KickSleeper* s = current_sleeper()) return s;
  return t_sleeper.s = new KickSleeper;
}

}  // namespace

Kick::~Kick() = default;

int Kick::join() {
  KickSleeper* s = this_sleeper();
  if (s->fd < 0) {
    if (sandbox::locked_in()) return -EPERM;  // no new descriptor there
    s->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (s->fd < 0) return -errno;
  }
  s->joins++;
  waiters_.push_back(s);
  return 0;
}

void Kick::leave(bool kicked) {
  KickSleeper* s = current_sleeper();
  if (!s) return;
  auto it = std::find(waiters_.begin(), waiters_.end(), s);
  if (it == waiters_.end()) return;
  *it = waiters_.back();
  waiters_.pop_back();
  s->seen = s->seen || kicked;
  if (--s->joins > 0) return;
  // A write that did not flag it (a fork child's copy of this object
  // kicking us) is drained too once a sleep saw it.
  const bool flagged = s->pending.exchange(false, std::memory_order_acq_rel);
  if (flagged || s->seen) {
    uint64_t v;
    if (::read(s->fd, &v, sizeof v) < 0) { /* written and read already */
    }
  }
  s->seen = false;
}

int Kick::fd() const {
  const KickSleeper* s = current_sleeper();
  return s ? s->fd : -1;
}

void Kick::fork_child() { waiters_.clear(); }

void Kick::signal() {
  const uint64_t one = 1;
  for (KickSleeper* s : waiters_) {
    // Once until the sleeper drains it: its eventfd is readable already.
    if (s->pending.load(std::memory_order_acquire)) continue;
    if (::write(s->fd, &one, sizeof one) < 0) SS_DEBUG("kick failed");
    s->pending.store(true, std::memory_order_release);
  }
}

}  // namespace ss
