// poll and select over offloaded sockets: when any descriptor has an
// offloaded path, core's poll_mixed / select_mixed serve the call, the
// socket's record (a Pollable) counting as readable when the rings or its
// kernel socket have a datagram; otherwise libc's. A busy phase of
// VMA_SELECT_POLL microseconds first, as libvma. ppoll, pselect and epoll
// are not covered yet (libvma(7), STATUS).
#include <poll.h>
#include <sys/select.h>

#include <cerrno>
#include <chrono>

#include "core/base/fd_table.h"
#include "core/base/mixed_poll.h"
#include "interpose/export.h"
#include "interpose/real.h"
#include "libvmacompat/settings.h"
#include "vma_preload/kernel_socket.h"

extern "C" void __chk_fail(void) __attribute__((noreturn));

using ss::interpose::real;
namespace vp = ss::vma::preload;
namespace vs = ss::vma::settings;

namespace {

// Set while core's poll_mixed runs on this thread: its own ::poll calls
// (kernel descriptors, wait targets) are libc's.
thread_local bool t_in_mixed = false;

struct InMixed {
  InMixed() { t_in_mixed = true; }
  ~InMixed() { t_in_mixed = false; }
};

bool offloaded(int fd) {
  ss::FdTable& t = ss::FdTable::instance();
  if (fd < 0 || t.kind(fd) != ss::FdKind::kVmaKernel) return false;
  const auto s = t.get<vp::KernelSocket>(fd, ss::FdKind::kVmaKernel);
  return s && s->offload();
}

ss::PollTiming timing() {
  const int64_t us = vs::get(vs::Id::kSelectPoll);
  // -1: spin for good (an hour at a time: poll_mixed still sleeps after).
  return {std::chrono::microseconds(us < 0 ? int64_t{3600} * 1000000 : us), 1};
}

int result(int r) {
  if (r >= 0) return r;
  errno = -r;
  return -1;
}

}  // namespace

SS_PRELOAD_EXPORT int poll(pollfd* fds, nfds_t n, int timeout) {
  bool ours = false;
  for (nfds_t i = 0; !t_in_mixed && fds && i < n && !ours; i++) ours = offloaded(fds[i].fd);
  if (!ours) return real().poll(fds, n, timeout);
  InMixed in;
  try {
    return result(ss::poll_mixed(fds, n, timeout, timing()));
  } catch (...) {
    errno = ENOMEM;
    return -1;
  }
}

SS_PRELOAD_EXPORT int __poll_chk(pollfd* fds, nfds_t n, int timeout, size_t fdslen) {
  if (fdslen / sizeof *fds < n) __chk_fail();
  return poll(fds, n, timeout);
}

SS_PRELOAD_EXPORT int select(int nfds, fd_set* r, fd_set* w, fd_set* x, timeval* tv) {
  bool ours = false;
  for (int fd = 0; !t_in_mixed && nfds <= FD_SETSIZE && fd < nfds && !ours; fd++)
    ours = ((r && FD_ISSET(fd, r)) || (w && FD_ISSET(fd, w)) || (x && FD_ISSET(fd, x))) &&
           offloaded(fd);
  if (!ours) return real().select(nfds, r, w, x, tv);
  InMixed in;
  try {
    return result(ss::select_mixed(nfds, r, w, x, tv, timing()));
  } catch (...) {
    errno = ENOMEM;
    return -1;
  }
}
