// epoll over mixed descriptors on core's EpollSet. The program's epoll
// descriptor is a duplicate of the set's kernel epoll fd (so the kernel's
// own calls on it act on the same set), in the fd table as kind kKernel
// with the EpollSet as its Pollable (poll, select and other sets see its
// rsockets). Kernel descriptors go into the kernel set; connections,
// listeners and other mixed sets become the EpollSet's Pollable members.
// A set without such a member is waited on by the kernel alone: the same
// syscall a program without the preload makes. A thread asleep there when
// the first Pollable joins is woken by an eventfd entered in the kernel
// set for the purpose, which no caller ever sees.
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "core/base/epoll_set.h"
#include "core/base/log.h"
#include "librsocket/preload_hooks.h"
#include "preload/dup.h"
#include "interpose/export.h"
#include "interpose/real.h"
#include "preload/route.h"
#include "interpose/wait_args.h"

namespace ss::preload {

namespace {

// The fd-table object of one of the preload's epoll descriptors.
struct EpollFd {
  explicit EpollFd(std::unique_ptr<EpollSet> s) : set(std::move(s)) {}
  ~EpollFd() {
    if (wake_fd >= 0) ss::interpose::real().close(wake_fd);
  }
  std::unique_ptr<EpollSet> set;
  int fd = -1;  // the program's descriptor
  // Threads in the kernel's epoll_wait on fd, and the eventfd that wakes
  // them (in the kernel set while `waking`) when the set stops being
  // kernel-only under them.
  std::atomic<int> kernel_waiters{0};
  std::atomic<bool> waking{false};
  std::mutex wake_mu;
  int wake_fd = -1;

  uint64_t marker() const { return reinterpret_cast<uintptr_t>(this); }

  void wake_kernel_waiters() {
    std::lock_guard<std::mutex> g(wake_mu);
    if (waking) return;
    if (wake_fd < 0) wake_fd = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);  // readable for good
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = marker();
    waking = true;  // before a waiter can see the eventfd
    if (wake_fd < 0 || ss::interpose::real().epoll_ctl(set->kernel_fd(), EPOLL_CTL_ADD, wake_fd, &ev) != 0) {
      waking = false;
      SS_WARN("librspreload: epoll fd %d: cannot wake its kernel waiters: %s", fd, strerror(errno));
    }
  }
  void leave_kernel_wait() {
    kernel_waiters--;
    retire_wake();
  }
  // Once no kernel waiter is left, the eventfd leaves the kernel set.
  void retire_wake() {
    if (!waking || kernel_waiters > 0) return;
    std::lock_guard<std::mutex> g(wake_mu);
    if (!waking || kernel_waiters > 0) return;
    ss::interpose::real().epoll_ctl(set->kernel_fd(), EPOLL_CTL_DEL, wake_fd, nullptr);
    waking = false;
  }
  // Drops the wake-up's entries from an answer: the count left. A kernel
  // waiter looks only while `waking` (which cannot end before it leaves);
  // a mixed wait always (it may have seen the eventfd just before it left).
  int drop_marker(epoll_event* events, int n, bool always = false) const {
    if (n <= 0 || !(always || waking)) return n;
    int k = 0;
    for (int i = 0; i < n; i++)
      if (events[i].data.u64 != marker()) events[k++] = events[i];
    return k;
  }
};

std::mutex sets_mu;
std::vector<std::weak_ptr<EpollFd>>& all_sets() {
  static auto* v = new std::vector<std::weak_ptr<EpollFd>>;  // outlives exit-time closes
  return *v;
}

std::shared_ptr<EpollFd> set_of(int epfd) {
  if (route(epfd) != Route::kEpoll) return nullptr;
  return FdTable::instance().get<EpollFd>(epfd, FdKind::kKernel);
}

int fail(int rc) {
  errno = -rc;
  return -1;
}

// An epoll descriptor the preload does not know (made by a raw syscall,
// or when the fd table could not take it): the kernel's, as before the
// preload had epoll. A listener becomes a kernel listener; a connection
// cannot be watched there (EPERM).
int ctl_on_kernel_set(int epfd, int op, int fd, epoll_event* ev) {
  const Route r = route(fd);
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

int wait_mixed(EpollFd& ep, epoll_event* events, int max, int timeout) {
  long long spin_us = 0;
  int wake_ms = 0;
  InRsocket in;
  ss_rspreload_poll_timing(&spin_us, &wake_ms);
  const PollTiming timing{std::chrono::microseconds(spin_us), wake_ms};
  for (;;) {
    int n = ep.set->wait(events, max, timeout, timing);
    if (n < 0) return fail(n);
    int k = ep.drop_marker(events, n, true);
    if (k > 0 || n == 0) return k;
    // Only the wake-up of kernel waiters: look again once it is gone.
    ep.retire_wake();
  }
}

// epoll_wait, epoll_pwait, epoll_pwait2 on set `ep`: `kernel()` is the
// program's own call (mask and all), made when the kernel alone answers.
template <class KernelCall>
int wait_any(EpollFd& ep, epoll_event* events, int max, int timeout, const sigset_t* mask,
             KernelCall kernel) {
  if (max > 0 && events) {
    ep.kernel_waiters++;
    if (ep.set->kernel_only()) {
      int n = kernel();
      const int err = errno;
      int k = ep.drop_marker(events, n);
      ep.leave_kernel_wait();
      errno = err;
      if (k != 0 || n <= 0) return k;
      // Woken because a Pollable joined: wait again, now on both (the
      // timeout starts again).
    } else {
      ep.leave_kernel_wait();
    }
  }
  ss::interpose::MaskForCall m(mask);
  return wait_mixed(ep, events, max, timeout);
}

}  // namespace

int close_epoll(int fd) {
  {
    InRsocket in;  // the set's own descriptors close as libc's
    FdTable::instance().remove<EpollFd>(fd, FdKind::kKernel);
  }
  return ss::interpose::real().close(fd);
}

void leave_epoll_sets(int fd) {
  std::shared_ptr<Pollable> obj = FdTable::instance().get_pollable(fd);
  if (!obj || (route(fd) == Route::kRsocket && !dups::last_descriptor(fd))) return;
  std::lock_guard<std::mutex> g(sets_mu);
  InRsocket in;
  for (auto& w : all_sets())
    if (auto ep = w.lock()) ep->set->forget(obj.get());
}

}  // namespace ss::preload

using namespace ss::preload;
using namespace ss::interpose;
using ss::EpollSet;
using ss::FdKind;
using ss::FdTable;
using ss::Pollable;

SS_PRELOAD_EXPORT int epoll_create1(int flags) noexcept {
  if (libc_only()) return ss::interpose::real().epoll_create1(flags);
  if (flags & ~EPOLL_CLOEXEC) {
    errno = EINVAL;
    return -1;
  }
  std::unique_ptr<EpollSet> set;
  {
    InRsocket in;
    if (int rc = EpollSet::create(EPOLL_CLOEXEC, &set)) return fail(rc);
  }
  const int fd = ss::interpose::real().fcntl(set->kernel_fd(), (flags & EPOLL_CLOEXEC) ? F_DUPFD_CLOEXEC : F_DUPFD, 0);
  if (fd < 0) {
    const int err = errno;
    InRsocket in;
    set.reset();
    errno = err;
    return -1;
  }
  std::shared_ptr<EpollFd> ep(new (std::nothrow) EpollFd(std::move(set)));
  if (ep) {
    ep->fd = fd;
    Pollable* p = ep->set.get();
    std::lock_guard<std::mutex> g(sets_mu);
    auto& sets = all_sets();
    try {
      std::erase_if(sets, [](const std::weak_ptr<EpollFd>& w) { return w.expired(); });
      sets.push_back(ep);
      if (FdTable::instance().insert(fd, FdKind::kKernel, ep, p) == 0) return fd;
      sets.pop_back();
    } catch (const std::bad_alloc&) {
    }
  }
  // The duplicate alone is a kernel epoll descriptor like any other.
  SS_WARN("librspreload: epoll fd %d: cannot track it: kernel descriptors only", fd);
  InRsocket in;
  ep.reset();
  return fd;
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
  if (op != EPOLL_CTL_DEL) {
    if (r == Route::kEpoll && set_of(fd) == ep) return fail(-EINVAL);  // a set in itself
    if (r != Route::kKernel && ev && (ev->events & EPOLLEXCLUSIVE) &&
        (op == EPOLL_CTL_MOD || (ev->events & EPOLLONESHOT)))
      return fail(-EINVAL);  // the kernel's rules for EPOLLEXCLUSIVE
    if (r == Route::kFresh) {
      // Neither connected nor listening: it stays the kernel's for good,
      // so the set watches what the program will use.
      SS_DEBUG("librspreload: fd %d joins an epoll set before connect/listen: kernel TCP", fd);
      FdTable::instance().remove<Entry>(fd, FdKind::kOffloaded);
    }
  }
  const bool was_kernel_only = ep->set->kernel_only();
  int rc;
  {
    InRsocket in;
    rc = ep->set->ctl(op, fd, ev);
  }
  if (rc) return fail(rc);
  if (was_kernel_only && ep->kernel_waiters > 0 && !ep->set->kernel_only())
    ep->wake_kernel_waiters();
  return 0;
}

SS_PRELOAD_EXPORT int epoll_wait(int epfd, epoll_event* events, int max, int timeout) {
  std::shared_ptr<EpollFd> ep;
  if (libc_only() || !(ep = set_of(epfd))) return ss::interpose::real().epoll_wait(epfd, events, max, timeout);
  return wait_any(*ep, events, max, timeout, nullptr,
                  [&] { return ss::interpose::real().epoll_wait(epfd, events, max, timeout); });
}

SS_PRELOAD_EXPORT int epoll_pwait(int epfd, epoll_event* events, int max, int timeout,
                                  const sigset_t* mask) {
  std::shared_ptr<EpollFd> ep;
  if (libc_only() || !(ep = set_of(epfd)))
    return ss::interpose::real().epoll_pwait(epfd, events, max, timeout, mask);
  return wait_any(*ep, events, max, timeout, mask,
                  [&] { return ss::interpose::real().epoll_pwait(epfd, events, max, timeout, mask); });
}

SS_PRELOAD_EXPORT int epoll_pwait2(int epfd, epoll_event* events, int max, const timespec* t,
                                   const sigset_t* mask) {
  std::shared_ptr<EpollFd> ep;
  if (libc_only() || !(ep = set_of(epfd))) return ss::interpose::real().epoll_pwait2(epfd, events, max, t, mask);
  if (bad_timespec(t)) return -1;
  return wait_any(*ep, events, max, timespec_ms(t), mask,
                  [&] { return ss::interpose::real().epoll_pwait2(epfd, events, max, t, mask); });
}
