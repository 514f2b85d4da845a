// poll and select over offloaded sockets: when any descriptor has an
// offloaded path, core's poll_mixed / select_mixed serve the call, the
// socket's record (a Pollable) counting as readable when the rings or its
// kernel socket have a datagram; otherwise libc's. A busy phase of
// VMA_SELECT_POLL microseconds first, as libvma; the sleep then lasts
// until a wake-up (the socket's wait set: its rings, its kernel socket)
// or the timeout. ppoll and pselect are
// these with the caller's signal mask swapped in around the wait
// (interpose/wait_args.h). epoll: epoll_calls.cc (mux.h). The plain kernel
// descriptors of a mixed set follow VMA_SELECT_SKIP_OS and
// VMA_SELECT_POLL_OS_RATIO (mux_timing()).
#include <poll.h>
#include <sys/select.h>

#include <atomic>
#include <cerrno>
#include <chrono>

#include "core/base/fd_table.h"
#include "core/base/mixed_poll.h"
#include "interpose/export.h"
#include "interpose/real.h"
#include "interpose/wait_args.h"
#include "libvmacompat/settings.h"
#include "vma_preload/kernel_socket.h"
#include "vma_preload/mux.h"
#include "interpose/signal_count.h"

using ss::interpose::real;
namespace vp = ss::vma::preload;
namespace vs = ss::vma::settings;

namespace ss::vma::preload {

thread_local int t_in_mux = 0;

bool offloaded_or_may_be(int fd) {
  ss::FdTable& t = ss::FdTable::instance();
  if (fd < 0 || t.kind(fd) != ss::FdKind::kVmaKernel) return false;
  const auto s = t.get<KernelSocket>(fd, ss::FdKind::kVmaKernel);
  return s && (s->offload() || !s->kernel_served());
}

namespace {
std::atomic<int64_t> g_skip_os_count{0};  // libvma's m_n_skip_os_count, for every thread
}  // namespace

ss::PollTiming mux_timing() {
  const int64_t us = vs::get(vs::Id::kSelectPoll);
  ss::PollTiming t;
  // -1: spin for good (an hour at a time: poll_mixed still sleeps after).
  t.spin = std::chrono::microseconds(us < 0 ? int64_t{3600} * 1000000 : us);
  t.spin_limited = true;
  // The plain kernel descriptors of the set: on the first pass of one call
  // in VMA_SELECT_SKIP_OS (0 and 1: every call), then every
  // VMA_SELECT_POLL_OS_RATIO-th pass (0: none while spinning), as libvma.
  t.os_ratio = static_cast<int>(vs::get(vs::Id::kSelectPollOsRatio));
  t.handlers_ran = interpose::handlers_ran;  // a handler in the busy phase: EINTR
  if (g_skip_os_count.fetch_sub(1, std::memory_order_relaxed) - 1 <= 0) {
    g_skip_os_count.store(vs::get(vs::Id::kSelectSkipOs), std::memory_order_relaxed);
    t.os_first = true;
  } else {
    t.os_first = false;
  }
  return t;
}

}  // namespace ss::vma::preload

namespace {

using vp::InMux;
using vp::mux_timing;

// An offloaded socket (or one that may be), or an epoll set with members:
// poll_mixed's to serve.
bool mixed(int fd) {
  if (fd < 0) return false;
  const ss::FdKind k = ss::FdTable::instance().kind(fd);
  if (k == ss::FdKind::kVmaKernel) return vp::offloaded_or_may_be(fd);
  return k == ss::FdKind::kKernel && ss::interpose::mixed_epoll(fd);
}

// Whether a poll set or select's sets hold an offloaded socket (never on
// poll_mixed's own calls). Not `const pollfd*`: glibc declares poll's fds
// write-only, and gcc then warns (-Wmaybe-uninitialized) at a read-only pass.
bool any_offloaded(pollfd* fds, nfds_t n) {
  if (vp::t_in_mux || !fds) return false;
  for (nfds_t i = 0; i < n; i++)
    if (mixed(fds[i].fd)) return true;
  return false;
}

bool any_offloaded(int nfds, const fd_set* r, const fd_set* w, const fd_set* x) {
  for (int fd = 0; !vp::t_in_mux && nfds <= FD_SETSIZE && fd < nfds; fd++)
    if (((r && FD_ISSET(fd, r)) || (w && FD_ISSET(fd, w)) || (x && FD_ISSET(fd, x))) &&
        mixed(fd))
      return true;
  return false;
}

int result(int r) {
  if (r >= 0) return r;
  errno = -r;
  return -1;
}

}  // namespace

SS_PRELOAD_EXPORT int poll(pollfd* fds, nfds_t n, int timeout) {
  if (!any_offloaded(fds, n)) return real().poll(fds, n, timeout);
  InMux in;
  try {
    return result(ss::poll_mixed(fds, n, timeout, mux_timing()));
  } catch (...) {
    errno = ENOMEM;
    return -1;
  }
}

SS_PRELOAD_EXPORT int select(int nfds, fd_set* r, fd_set* w, fd_set* x, timeval* tv) {
  if (!any_offloaded(nfds, r, w, x)) return real().select(nfds, r, w, x, tv);
  InMux in;
  try {
    return result(ss::select_mixed(nfds, r, w, x, tv, mux_timing()));
  } catch (...) {
    errno = ENOMEM;
    return -1;
  }
}

// Sets without an offloaded socket keep the kernel's atomic mask swap.
SS_PRELOAD_EXPORT int ppoll(pollfd* fds, nfds_t n, const timespec* t, const sigset_t* mask) {
  if (!any_offloaded(fds, n)) return real().ppoll(fds, n, t, mask);
  if (ss::interpose::bad_timespec(t)) return -1;
  ss::interpose::MaskForCall m(mask);
  return poll(fds, n, ss::interpose::timespec_ms(t));
}

SS_PRELOAD_EXPORT int pselect(int nfds, fd_set* r, fd_set* w, fd_set* x, const timespec* t,
                              const sigset_t* mask) {
  if (!any_offloaded(nfds, r, w, x)) return real().pselect(nfds, r, w, x, t, mask);
  if (ss::interpose::bad_timespec(t)) return -1;
  ss::interpose::MaskForCall m(mask);
  if (!t) return select(nfds, r, w, x, nullptr);
  // Rounded up to whole microseconds, carried into seconds.
  const long usec = (t->tv_nsec + 999) / 1000;
  timeval tv{t->tv_sec + usec / 1000000, static_cast<suseconds_t>(usec % 1000000)};
  return select(nfds, r, w, x, &tv);
}
