// libvma.so's face of the shared poll and select (interpose/poll_calls.h):
// when any descriptor has an offloaded path, core's poll_mixed and
// select_mixed serve the call, the socket's record (a Pollable) counting
// as readable when the rings or its kernel socket have data. A busy phase
// of VMA_SELECT_POLL microseconds first, as libvma; the sleep then lasts
// until a wake-up (the socket's wait set: its rings, its kernel socket) or
// the timeout. The plain kernel descriptors of a mixed set follow
// VMA_SELECT_SKIP_OS and VMA_SELECT_POLL_OS_RATIO (mux_timing()). epoll:
// epoll_calls.cc (mux.h).
#include <poll.h>
#include <sys/select.h>

#include <atomic>
#include <cerrno>
#include <chrono>

#include "core/base/fd_table.h"
#include "core/base/mixed_poll.h"
#include "interpose/epoll_glue.h"
#include "interpose/poll_calls.h"
#include "libvmacompat/settings.h"
#include "interpose/edge.h"
#include "vma_preload/socket_record.h"
#include "vma_preload/mux.h"
#include "interpose/signal_count.h"

namespace vp = ss::vma::preload;
namespace vs = ss::vma::settings;

namespace ss::vma::preload {

bool offloaded_or_may_be(int fd) {
  ss::FdTable& t = ss::FdTable::instance();
  if (fd < 0 || t.kind(fd) != ss::FdKind::kVmaSocket) return false;
  const auto s = t.get<SocketRecord>(fd, ss::FdKind::kVmaSocket);
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

using vp::mux_timing;

// An offloaded socket (or one that may be), or an epoll set with members:
// poll_mixed's to serve.
bool mixed(int fd) {
  const ss::FdKind k = ss::FdTable::instance().kind(fd);
  if (k == ss::FdKind::kVmaSocket) return vp::offloaded_or_may_be(fd);
  return k == ss::FdKind::kKernel && ss::interpose::mixed_epoll(fd);
}

int result(int r) {
  if (r >= 0) return r;
  errno = -r;
  return -1;
}

int poll_wait(pollfd* fds, nfds_t n, int timeout) {
  return ss::interpose::edge([&] { return result(ss::poll_mixed(fds, n, timeout, mux_timing())); });
}

int select_wait(int nfds, fd_set* r, fd_set* w, fd_set* x, timeval* tv) {
  return ss::interpose::edge(
      [&] { return result(ss::select_mixed(nfds, r, w, x, tv, mux_timing())); });
}

}  // namespace

namespace ss::interpose {
const PollFace kPollFace{mixed, poll_wait, select_wait};
}  // namespace ss::interpose
