#include "interpose/epoll_glue.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

#include "core/base/fd_table.h"
#include "core/base/log.h"
#include "interpose/dup_share.h"
#include "interpose/real.h"

namespace ss::interpose {

namespace {

std::mutex sets_mu;
std::vector<std::weak_ptr<EpollFd>>& all_sets() {
  static auto* v = new std::vector<std::weak_ptr<EpollFd>>;  // outlives exit-time closes
  return *v;
}

int fail(int rc) {
  errno = -rc;
  return -1;
}

}  // namespace

EpollFd::~EpollFd() {
  if (wake_fd >= 0) real().close(wake_fd);
}

void EpollFd::wake_kernel_waiters() {
  std::lock_guard<std::mutex> g(wake_mu);
  if (waking) return;
  if (wake_fd < 0) wake_fd = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);  // readable for good
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = marker();
  waking = true;  // before a waiter can see the eventfd
  if (wake_fd < 0 || real().epoll_ctl(set->kernel_fd(), EPOLL_CTL_ADD, wake_fd, &ev) != 0) {
    waking = false;
    SS_WARN("%s: epoll fd %d: cannot wake its kernel waiters: %s", face.name, fd, strerror(errno));
  }
}

void EpollFd::retire_wake() {
  if (!waking || kernel_waiters > 0) return;
  std::lock_guard<std::mutex> g(wake_mu);
  if (!waking || kernel_waiters > 0) return;
  real().epoll_ctl(set->kernel_fd(), EPOLL_CTL_DEL, wake_fd, nullptr);
  waking = false;
}

int EpollFd::drop_marker(epoll_event* events, int n, bool always) const {
  if (n <= 0 || !(always || waking)) return n;
  int k = 0;
  for (int i = 0; i < n; i++)
    if (events[i].data.u64 != marker()) events[k++] = events[i];
  return k;
}

namespace {

// The program's epoll descriptor fd as `set` (which owns its own copy of
// the kernel epoll descriptor) in the fd table: false, the set dropped,
// when the table cannot take it.
bool track_set(const EpollFace& face, int fd, std::unique_ptr<EpollSet> set) {
  std::shared_ptr<EpollFd> ep(new (std::nothrow) EpollFd(face, std::move(set)));
  if (ep) {
    ep->fd = fd;
    Pollable* p = ep->set.get();
    std::lock_guard<std::mutex> g(sets_mu);
    auto& sets = all_sets();
    try {
      std::erase_if(sets, [](const std::weak_ptr<EpollFd>& w) { return w.expired(); });
      sets.push_back(ep);
      if (FdTable::instance().insert(fd, FdKind::kKernel, ep, p) == 0) return true;
      sets.pop_back();
    } catch (const std::bad_alloc&) {
    }
  }
  OwnCalls own;
  ep.reset();
  return false;
}

}  // namespace

int create_epoll(const EpollFace& face, int flags) {
  if (flags & ~EPOLL_CLOEXEC) {
    errno = EINVAL;
    return -1;
  }
  std::unique_ptr<EpollSet> set;
  {
    OwnCalls own;
    if (int rc = EpollSet::create(EPOLL_CLOEXEC, &set)) return fail(rc);
  }
  const int fd =
      real().fcntl(set->kernel_fd(), (flags & EPOLL_CLOEXEC) ? F_DUPFD_CLOEXEC : F_DUPFD, 0);
  if (fd < 0) {
    const int err = errno;
    OwnCalls own;
    set.reset();
    errno = err;
    return -1;
  }
  if (track_set(face, fd, std::move(set))) return fd;
  // The duplicate alone is a kernel epoll descriptor like any other.
  SS_WARN("%s: epoll fd %d: cannot track it: kernel descriptors only", face.name, fd);
  return fd;
}

bool adopt_epoll(const EpollFace& face, int fd) {
  if (FdTable::instance().kind(fd) != FdKind::kNone) return false;
  char path[40], link[32];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(path, link, sizeof link - 1);
  if (n <= 0) return false;
  link[n] = '\0';
  if (strcmp(link, "anon_inode:[eventpoll]") != 0) return false;
  const int own_fd = real().fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own_fd < 0) return false;
  std::unique_ptr<EpollSet> set = EpollSet::adopt(own_fd);
  if (!set) {
    real().close(own_fd);
    return false;
  }
  if (!track_set(face, fd, std::move(set))) return false;
  SS_DEBUG("%s: epoll fd %d: a set made without the preload, tracked from now on", face.name, fd);
  return true;
}

std::shared_ptr<EpollFd> epoll_fd(int fd) {
  if (fd < 0 || FdTable::instance().kind(fd) != FdKind::kKernel) return nullptr;
  return FdTable::instance().get<EpollFd>(fd, FdKind::kKernel);
}

bool epoll_member(int fd) {
  std::shared_ptr<Pollable> p = fd >= 0 ? FdTable::instance().get_pollable(fd) : nullptr;
  return p && !p->kernel_served();
}

bool mixed_epoll(int fd) {
  std::shared_ptr<EpollFd> ep = epoll_fd(fd);
  return ep && !ep->set->kernel_only();
}

int ctl_epoll(EpollFd& ep, int op, int fd, epoll_event* ev) {
  if (op != EPOLL_CTL_DEL) {
    if (epoll_fd(fd).get() == &ep) return fail(-EINVAL);  // a set in itself
    if (ev && (ev->events & EPOLLEXCLUSIVE) && epoll_member(fd) &&
        (op == EPOLL_CTL_MOD || (ev->events & EPOLLONESHOT)))
      return fail(-EINVAL);  // the kernel's rules for EPOLLEXCLUSIVE
  }
  const bool was_kernel_only = ep.set->kernel_only();
  int rc;
  {
    OwnCalls own;
    rc = ep.set->ctl(op, fd, ev);
  }
  if (rc) return fail(rc);
  if (was_kernel_only && ep.kernel_waiters > 0 && !ep.set->kernel_only()) ep.wake_kernel_waiters();
  return 0;
}

int dup_epoll(int fd, int at, bool exact, bool cloexec) {
  return dups::dup_entry(fd, FdKind::kKernel, at, exact, cloexec, /*acts_on_owner=*/false);
}

int close_epoll(const EpollFace& face, int fd) {
  int rc, own;
  if (dups::close_shared(fd, FdKind::kKernel, &rc, &own)) return rc;
  {
    OwnCalls own;  // the set's own descriptors close as libc's
    FdTable::instance().remove<EpollFd>(fd, FdKind::kKernel);
  }
  return real().close(fd);
}

namespace {
template <class Fn>
void each_set(const EpollFace& face, Fn fn) {
  std::lock_guard<std::mutex> g(sets_mu);
  OwnCalls own;
  for (auto& w : all_sets())
    if (auto ep = w.lock()) fn(*ep->set);
}
}  // namespace

void leave_epoll_sets(const EpollFace& face, const Pollable* obj) {
  each_set(face, [obj](EpollSet& s) { s.forget(obj); });
}

void kernel_in_epoll_sets(const EpollFace& face, const Pollable* obj) {
  each_set(face, [obj](EpollSet& s) { s.to_kernel(obj); });
}

int wait_mixed(EpollFd& ep, epoll_event* events, int max, Deadline until) {
  OwnCalls own;
  const PollTiming timing = ep.face.timing();
  for (;;) {
    int n = ep.set->wait(events, max, ms_left(until), timing);
    if (n < 0) return fail(n);
    int k = ep.drop_marker(events, n, true);
    if (k > 0 || n == 0) return k;
    // Only the wake-up of kernel waiters: look again once it is gone.
    ep.retire_wake();
  }
}

}  // namespace ss::interpose
