// poll(2) and select(2) over a mix of descriptors: those whose fd-table
// entry (of any kind) holds a Pollable, and kernel descriptors. A busy
// phase first (each pass asks every Pollable and polls the kernel
// descriptors without sleeping), then sleeps in interruptible_poll on the
// kernel descriptors and each Pollable's wait target and kick, bounded by
// the wake-up interval and the caller's timeout. librsocket's rpoll and
// rselect are this; the preloads' poll, select and epoll sit on it.
#pragma once
#include <poll.h>
#include <sys/select.h>

#include <chrono>
#include <cstdint>

#include "core/base/api.h"
#include "core/base/fd_table.h"

namespace ss {

struct PollTiming {
  std::chrono::microseconds spin{0};  // busy phase before the first sleep
  // > 0: no sleep lasts longer, so a Pollable whose wake-up was missed is
  // looked at again; <= 0: sleeps end only at a wake-up or the timeout.
  int wake_interval_ms = 0;
  // The kernel descriptors (those without a Pollable, an epoll set's
  // kernel part): looked at on the call's first pass if os_first, on
  // every os_ratio-th pass of the busy phase after it (0: none), and on
  // the first pass after each sleep (the sleep waits on them). libvma's
  // VMA_SELECT_SKIP_OS and VMA_SELECT_POLL_OS_RATIO; the defaults look
  // at them on every pass.
  int os_ratio = 1;
  bool os_first = true;
  // A count of the signal handlers that ran on the calling thread (a
  // preload that sees them), or null: the busy phase is in no system call
  // a handler could interrupt, so when the count moves the call ends with
  // -EINTR, as the sleep's poll(2) would (poll, select and epoll_wait are
  // never restarted).
  uint64_t (*handlers_ran)() = nullptr;
  bool spin_limited = false;  // the busy phase ends early when spinning stops helping (SpinLimit)
};

// Whether pass `pass` of a call (0: the first; `after_sleep`: the first
// since a sleep) looks at the kernel descriptors.
inline bool looks_at_os(const PollTiming& t, uint64_t pass, bool after_sleep) {
  if (pass == 0) return t.os_first;
  if (after_sleep) return true;
  return t.os_ratio > 0 && pass % static_cast<uint64_t>(t.os_ratio) == 0;
}

// poll(2)'s answer (a count, 0 on timeout) or -errno; -EINTR when a signal
// handler ran (poll is never restarted).
SS_API int poll_mixed(pollfd* fds, nfds_t nfds, int timeout_ms, const PollTiming& timing,
                      const FdTable& table = FdTable::instance());
// select(2) through poll_mixed: a count or -errno (-EBADF for a closed
// descriptor, -EINVAL for a bad nfds or timeout).
SS_API int select_mixed(int nfds, fd_set* rd, fd_set* wr, fd_set* ex, timeval* tv,
                        const PollTiming& timing, const FdTable& table = FdTable::instance());

}  // namespace ss
