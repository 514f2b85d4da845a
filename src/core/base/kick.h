// The wake-up of the threads asleep on one object: whoever changes the
// object's state (data it processed, a shutdown) kicks, and every thread
// asleep on it looks again. A thread counts as a waiter from join() to
// leave(); the eventfd is made at the first join, so an object nobody
// sleeps on holds no descriptor. Every member runs under the owner's lock.
#pragma once
#include <poll.h>

#include <algorithm>

#include "core/base/api.h"
#include "core/base/interruptible_poll.h"

namespace ss {

class Kick {
 public:
  Kick() = default;
  SS_API ~Kick();
  Kick(const Kick&) = delete;
  Kick& operator=(const Kick&) = delete;

  // Inline: on the data path this is one test of a count.
  void wake() {
    if (waiters_) signal();
  }
  // 0, or -errno when the eventfd cannot be made (EMFILE).
  SS_API int join();
  // `kicked`: this waiter's sleep saw fd() readable. The kick stays
  // readable until the last waiter leaves: drained earlier, a waiter not
  // yet scheduled would sleep through it. Only a kick a waiter saw is
  // drained (no read per wake-up); one that came later costs at most one
  // spurious wake-up.
  SS_API void leave(bool kicked);
  int fd() const { return fd_; }
  // In a fork child (one thread): the parent's sleepers are not ours, and
  // the inherited eventfd is the parent's too (its kicks would wake us,
  // our drains would eat its kicks): forgotten; the next join makes one.
  SS_API void fork_child();

  // One sleep of a blocking call on `target` (what the object's own events
  // wake) and this kick, the owner's lock `lk` released meanwhile, for at
  // most `ms` (<= 0: unbounded). Out of descriptors for the eventfd, it
  // sleeps on the target alone, kUnkickedSleepMs at a time: another
  // thread's kick is missed that long, where failing would give an errno
  // no socket call gives. 0, or -errno from interruptible_poll (restartable).
  template <class Lock>
  int sleep(Lock& lk, pollfd target, int ms) {
    constexpr int kUnkickedSleepMs = 10;
    const bool joined = join() == 0;
    if (!joined) ms = ms > 0 ? std::min(ms, kUnkickedSleepMs) : kUnkickedSleepMs;
    pollfd p[2] = {target, {joined ? fd_ : -1, POLLIN, 0}};
    lk.unlock();
    int rc = interruptible_poll(p, 2, ms > 0 ? ms : -1);
    lk.lock();
    if (joined) leave(p[1].revents & POLLIN);
    return rc < 0 ? rc : 0;
  }

 private:
  SS_API void signal();
  int waiters_ = 0;
  int fd_ = -1;
};

}  // namespace ss
