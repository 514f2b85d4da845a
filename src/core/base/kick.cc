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

struct ThreadSleeper {
  KickSleeper* s = nullptr;
  ~ThreadSleeper() {
    if (!s || s->joins > 0) return;
    if (s->fd >= 0) ::close(s->fd);
    delete s;
    s = nullptr;
  }
};

thread_local ThreadSleeper t_sleeper;

// A fork child's one thread: its eventfd is shared with the parent's
// same thread (a drain here would eat the parent's kicks); a new one is
// made at its next join.
void sleeper_in_fork_child() {
  KickSleeper* s = t_sleeper.s;
  if (!s) return;
  if (s->fd >= 0) own_close(s->fd);  // in a fork handler: not through a preload
  s->fd = -1;
  s->joins = 0;
  s->seen = false;
  s->pending.store(false, std::memory_order_relaxed);
}

KickSleeper* this_sleeper() {
  static std::once_flag registered;
  std::call_once(registered, [] { pthread_atfork(nullptr, nullptr, sleeper_in_fork_child); });
  if (!t_sleeper.s) t_sleeper.s = new KickSleeper;
  return t_sleeper.s;
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
  KickSleeper* s = t_sleeper.s;
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

int Kick::fd() const { return t_sleeper.s ? t_sleeper.s->fd : -1; }

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
