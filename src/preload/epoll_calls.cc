// librspreload's epoll: the shared glue (interpose/epoll_glue.h) on
// core's EpollSet, with the rsocket rules around it: a kernel epoll set
// the preload does not know is taken as its own when a connection or a
// listener joins it, and a socket neither connected nor listening that
// joins a set stays the kernel's for good.
#include <sys/epoll.h>

#include <cerrno>
#include <chrono>
#include <memory>

#include "core/base/log.h"
#include "interpose/epoll_glue.h"
#include "interpose/export.h"
#include "interpose/real.h"
#include "interpose/signal_count.h"
#include "interpose/wait_args.h"
#include "librsocket/preload_hooks.h"
#include "preload/dup_calls.h"
#include "preload/epoll_face.h"
#include "preload/route.h"

namespace ss::preload {

namespace {

using ss::interpose::EpollFd;

std::shared_ptr<EpollFd> set_of(int epfd) {
  if (route(epfd) != Route::kEpoll) return nullptr;
  return ss::interpose::epoll_fd(epfd);
}

int fail(int rc) {
  errno = -rc;
  return -1;
}

// An epoll descriptor the preload does not know (inherited across exec,
// made by the system call instruction, or when the fd table could not
// take it): taken as the preload's set when a connection or listener
// joins it. Where it cannot be, the kernel's, as before the preload had
// epoll: a listener becomes a kernel listener; a connection cannot be
// watched there (EPERM).
int ctl_on_kernel_set(int epfd, int op, int fd, epoll_event* ev) {
  const Route r = route(fd);
  if (op != EPOLL_CTL_DEL && (r == Route::kListener || r == Route::kRsocket) &&
      ss::interpose::adopt_epoll(kEpollFace, epfd))
    return ::epoll_ctl(epfd, op, fd, ev);
  if (op != EPOLL_CTL_DEL && r == Route::kListener) {
    SS_INFO("librspreload: listener fd %d added to kernel epoll set %d: kernel TCP only", fd, epfd);
    to_kernel_listener(fd, true);
  }
  if (op != EPOLL_CTL_DEL && r == Route::kRsocket) {
    SS_WARN("librspreload: rsocket fd %d cannot join kernel epoll set %d (EPERM)", fd, epfd);
    errno = EPERM;
    return -1;
  }
  return ss::interpose::real().epoll_ctl(epfd, op, fd, ev);
}

}  // namespace

int close_epoll(int fd) { return ss::interpose::close_epoll(kEpollFace, fd); }

void leave_epoll_sets(int fd) {
  std::shared_ptr<Pollable> obj = FdTable::instance().get_pollable(fd);
  if (!obj || (route(fd) == Route::kRsocket && !dups::last_descriptor(fd))) return;
  ss::interpose::leave_epoll_sets(kEpollFace, obj.get());
}

}  // namespace ss::preload

using namespace ss::preload;
using ss::FdKind;
using ss::FdTable;

SS_PRELOAD_EXPORT int epoll_create1(int flags) noexcept {
  if (libc_only()) return ss::interpose::real().epoll_create1(flags);
  return ss::interpose::create_epoll(kEpollFace, flags);
}

SS_PRELOAD_EXPORT int epoll_create(int size) noexcept {
  if (libc_only()) return ss::interpose::real().epoll_create(size);
  if (size <= 0) {
    errno = EINVAL;
    return -1;
  }
  return epoll_create1(0);
}

SS_PRELOAD_EXPORT int epoll_ctl(int epfd, int op, int fd, epoll_event* ev) noexcept {
  if (libc_only()) return ss::interpose::real().epoll_ctl(epfd, op, fd, ev);
  auto ep = set_of(epfd);
  if (!ep) return ctl_on_kernel_set(epfd, op, fd, ev);
  const Route r = route(fd);
  if (r == Route::kKernel && dups::held(fd)) return fail(-EBADF);  // closed, as the program sees it
  if (op != EPOLL_CTL_DEL && r == Route::kFresh) {
    if (ev && (ev->events & EPOLLEXCLUSIVE) && (op == EPOLL_CTL_MOD || (ev->events & EPOLLONESHOT)))
      return fail(-EINVAL);  // refused before the socket is given up
    // Neither connected nor listening: it stays the kernel's for good,
    // so the set watches what the program will use.
    SS_DEBUG("librspreload: fd %d joins an epoll set before connect/listen: kernel TCP", fd);
    give_to_kernel(fd);
  }
  return ss::interpose::ctl_epoll(*ep, op, fd, ev);
}

SS_PRELOAD_EXPORT int epoll_wait(int epfd, epoll_event* events, int max, int timeout) {
  std::shared_ptr<EpollFd> ep;
  if (libc_only() || !(ep = set_of(epfd)))
    return ss::interpose::real().epoll_wait(epfd, events, max, timeout);
  return ss::interpose::wait_epoll(*ep, events, max, timeout, nullptr, [&] {
    return ss::interpose::real().epoll_wait(epfd, events, max, timeout);
  });
}

SS_PRELOAD_EXPORT int epoll_pwait(int epfd, epoll_event* events, int max, int timeout,
                                  const sigset_t* mask) {
  std::shared_ptr<EpollFd> ep;
  if (libc_only() || !(ep = set_of(epfd)))
    return ss::interpose::real().epoll_pwait(epfd, events, max, timeout, mask);
  return ss::interpose::wait_epoll(*ep, events, max, timeout, mask, [&] {
    return ss::interpose::real().epoll_pwait(epfd, events, max, timeout, mask);
  });
}

SS_PRELOAD_EXPORT int epoll_pwait2(int epfd, epoll_event* events, int max, const timespec* t,
                                   const sigset_t* mask) {
  std::shared_ptr<EpollFd> ep;
  if (libc_only() || !(ep = set_of(epfd)))
    return ss::interpose::real().epoll_pwait2(epfd, events, max, t, mask);
  if (ss::interpose::bad_timespec(t)) return -1;
  return ss::interpose::wait_epoll(*ep, events, max, ss::interpose::timespec_ms(t), mask, [&] {
    return ss::interpose::real().epoll_pwait2(epfd, events, max, t, mask);
  });
}
