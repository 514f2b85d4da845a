// The wake-up of the threads asleep on one object: whoever changes the
// object's state (data it processed, a shutdown) kicks, and every thread
// asleep on it looks again. A thread counts as a waiter from join() to
// leave(); a kick writes each waiter's own eventfd (one per thread, made
// at its first join: a thread asleep on ten thousand objects polls one
// descriptor, and an object holds none). Every member runs under the
// owner's lock.
//
// A thread's eventfd is drained when it leaves its last object: every
// kick to it came before (each under its object's lock, before that
// object's leave), and its next sleep looks at each object after joining
// it. So a kick is never lost, and the eventfd is quiet between sleeps.
#pragma once
#include <poll.h>

#include <algorithm>
#include <vector>

#include "core/base/api.h"
#include "core/base/deadline.h"
#include "core/base/interruptible_poll.h"
#include "core/base/signal_depth.h"

namespace ss {

struct KickSleeper;  // kick.cc: a thread's eventfd

class Kick {
 public:
  Kick() = default;
  SS_API ~Kick();
  Kick(const Kick&) = delete;
  Kick& operator=(const Kick&) = delete;

  // Inline: on the data path this is one test of a count.
  void wake() {
    if (!waiters_.empty()) signal();
  }
  // The calling thread waits from now: 0, or -errno when its eventfd
  // cannot be made (EMFILE).
  SS_API int join();
  // The calling thread waits no more; the last object it leaves drains
  // its eventfd (kicked: its sleep saw it readable).
  SS_API void leave(bool kicked = false);
  // The calling thread's eventfd, once it joined (-1 before).
  SS_API int fd() const;
  // In a fork child (one thread): the parent's sleepers are not ours
  // (their eventfds the parent's threads'): forgotten.
  SS_API void fork_child();

  // One sleep of a blocking call on `target` (what the object's own events
  // wake) and this kick, the owner's lock `lk` released meanwhile, for at
  // most `ms` (<= 0: unbounded). Out of descriptors for the eventfd, it
  // sleeps on the target alone, cut as deadline.h's cut_sleep_ms: another
  // thread's kick is missed that long, where failing would give an errno
  // no socket call gives. 0, or -errno from interruptible_poll (restartable).
  // `quiet`: the caller holds nothing else of the library's (QuietSleep).
  template <class Lock>
  int sleep(Lock& lk, pollfd target, int ms, bool quiet = false) {
    const bool joined = join() == 0;
    if (!joined) ms = shorter_sleep_ms(ms > 0 ? ms : -1, kUnwokenSleepMs);
    pollfd p[2] = {target, {joined ? fd() : -1, POLLIN, 0}};
    lk.unlock();
    int rc;
    {
      const QuietSleep q(quiet);
      rc = interruptible_poll(p, 2, ms > 0 ? ms : -1);
    }
    lk.lock();
    if (joined) leave(p[1].revents & POLLIN);
    return rc < 0 ? rc : 0;
  }

 private:
  SS_API void signal();
  std::vector<KickSleeper*> waiters_;  // one entry per join
};

}  // namespace ss
