// epoll in libvma.so: the shared glue (interpose/epoll_glue.h) on core's
// EpollSet, as librspreload's. An offloaded UDP socket (and one that may
// still be: UDP decided "vma", not bound yet) joins a set as a member, its
// readiness the rings' and its kernel socket's, its sleep on its wait set;
// every other descriptor (TCP, kernel UDP, pipes, eventfds) goes into the
// set's kernel part. A set without members is the kernel's alone. Sets
// nest (a set is a Pollable member of another), as libvma's cannot
// (libvma #219). A kernel epoll set the preload does not know takes a
// socket only as the kernel's (SocketRecord::hand_back).
#include <sys/epoll.h>

#include <cerrno>

#include "core/base/fd_table.h"
#include "interpose/own_calls.h"
#include "interpose/epoll_glue.h"
#include "interpose/export.h"
#include "interpose/real.h"
#include "interpose/wait_args.h"
#include "interpose/edge.h"
#include "vma_preload/epoll_face.h"
#include "vma_preload/mux.h"
#include "vma_preload/netdev_rings.h"
#include "vma_preload/socket_record.h"

namespace vp = ss::vma::preload;
namespace ip = ss::interpose;
using ip::real;

namespace {

std::shared_ptr<ip::EpollFd> set_of(int epfd) {
  if (ss::interpose::in_own_call()) return nullptr;
  return ip::epoll_fd(epfd);
}

}  // namespace

SS_PRELOAD_EXPORT int epoll_create1(int flags) {
  if (ss::interpose::in_own_call()) return real().epoll_create1(flags);
  return ip::create_epoll(vp::kEpollFace, flags);
}

SS_PRELOAD_EXPORT int epoll_create(int size) {
  if (ss::interpose::in_own_call()) return real().epoll_create(size);
  if (size <= 0) {
    errno = EINVAL;
    return -1;
  }
  return ip::create_epoll(vp::kEpollFace, 0);
}

SS_PRELOAD_EXPORT int epoll_ctl(int epfd, int op, int fd, epoll_event* ev) {
  // A fork child waiting on an inherited offloaded socket will receive on
  // it: the parent lends it the port first (fork_share.h), or a listener
  // joins the parent's rings (fork_join.h).
  if (vp::in_fork_child() && (op == EPOLL_CTL_ADD || op == EPOLL_CTL_MOD) && fd >= 0 &&
      ss::FdTable::instance().kind(fd) == ss::FdKind::kVmaSocket)
    if (const auto s = ss::FdTable::instance().get<vp::SocketRecord>(fd, ss::FdKind::kVmaSocket))
      s->offload();
  if (ev && (ev->events & EPOLLET) && (op == EPOLL_CTL_ADD || op == EPOLL_CTL_MOD))
    vp::note_edge_watch(fd);
  const auto ep = set_of(epfd);
  if (ep) return ip::ctl_epoll(*ep, op, fd, ev);
  // A kernel epoll set the preload does not know (made by the system call
  // instruction, as Go's runtime makes them; one the fd table could not
  // take; one inherited across exec) sees only the kernel socket: a
  // socket with (or that may get) an offloaded path is handed back to the
  // kernel for good, so no program sleeps through its rings.
  if (!ss::interpose::in_own_call() && (op == EPOLL_CTL_ADD || op == EPOLL_CTL_MOD) && fd >= 0 &&
      ss::FdTable::instance().kind(fd) == ss::FdKind::kVmaSocket)
    ss::interpose::edge_quiet("epoll_ctl", fd, [&] {
      const auto s = ss::FdTable::instance().get<vp::SocketRecord>(fd, ss::FdKind::kVmaSocket);
      if (s && !s->kernel_served()) s->hand_back("in an epoll set the preload does not know");
    });
  return real().epoll_ctl(epfd, op, fd, ev);
}

SS_PRELOAD_EXPORT int epoll_wait(int epfd, epoll_event* events, int max, int timeout) {
  const auto ep = set_of(epfd);
  if (!ep) return real().epoll_wait(epfd, events, max, timeout);
  return ip::wait_epoll(*ep, events, max, timeout, nullptr,
                        [&] { return real().epoll_wait(epfd, events, max, timeout); });
}

SS_PRELOAD_EXPORT int epoll_pwait(int epfd, epoll_event* events, int max, int timeout,
                                  const sigset_t* mask) {
  const auto ep = set_of(epfd);
  if (!ep) return real().epoll_pwait(epfd, events, max, timeout, mask);
  return ip::wait_epoll(*ep, events, max, timeout, mask,
                        [&] { return real().epoll_pwait(epfd, events, max, timeout, mask); });
}

SS_PRELOAD_EXPORT int epoll_pwait2(int epfd, epoll_event* events, int max, const timespec* t,
                                   const sigset_t* mask) {
  const auto ep = set_of(epfd);
  if (!ep) return real().epoll_pwait2(epfd, events, max, t, mask);
  if (ip::bad_timespec(t)) return -1;
  return ip::wait_epoll(*ep, events, max, ip::timespec_ms(t), mask,
                        [&] { return real().epoll_pwait2(epfd, events, max, t, mask); });
}
