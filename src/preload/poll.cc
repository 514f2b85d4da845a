// poll and select over mixed descriptors: librsocket's rpoll serves them
// once any is ours; a listener counts as readable when either its kernel
// socket or its rsocket listener has a connection waiting. epoll is not
// interposed yet: a listener added to an epoll set becomes a plain kernel
// listener (its rsocket listener goes, so rsocket clients fall back to
// kernel TCP, and the set watches exactly what accept takes); adding a
// connected rsocket fails with EPERM and one log line rather than
// watching a kernel socket that is not the connection.
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>

#include <cerrno>
#include <new>
#include <utility>
#include <vector>

#include "core/base/log.h"
#include "include/rdma/rsocket.h"
#include "preload/export.h"
#include "preload/real.h"
#include "preload/route.h"

extern "C" void __chk_fail(void) __attribute__((noreturn));

using namespace ss::preload;

namespace {

int poll_mixed(pollfd* fds, nfds_t n, int timeout) {
  std::vector<pollfd> v(fds, fds + n);
  std::vector<std::pair<nfds_t, size_t>> extra;  // program's entry, its rsocket listener's
  for (nfds_t i = 0; i < n; i++) {
    if (route(fds[i].fd) != Route::kListener) continue;
    if (auto e = entry(fds[i].fd)) {
      v.push_back({e->rs_fd, static_cast<short>(fds[i].events & POLLIN), 0});
      extra.emplace_back(i, v.size() - 1);
    }
  }
  int rc;
  {
    InRsocket in;
    rc = rpoll(v.data(), v.size(), timeout);
  }
  if (rc < 0) return rc;
  for (nfds_t i = 0; i < n; i++) fds[i].revents = v[i].revents;
  for (auto [i, j] : extra) fds[i].revents |= static_cast<short>(v[j].revents & POLLIN);
  int count = 0;
  for (nfds_t i = 0; i < n; i++) count += fds[i].revents != 0;
  return count;
}

bool any_ours(const pollfd* fds, nfds_t n) {
  for (nfds_t i = 0; i < n; i++) {
    Route r = route(fds[i].fd);
    if (r == Route::kRsocket || r == Route::kListener) return true;
  }
  return false;
}

}  // namespace

SS_PRELOAD_EXPORT int poll(pollfd* fds, nfds_t n, int timeout) {
  if (libc_only() || !fds || !any_ours(fds, n)) return real().poll(fds, n, timeout);
  try {
    return poll_mixed(fds, n, timeout);
  } catch (const std::bad_alloc&) {
    errno = ENOMEM;
    return -1;
  }
}

SS_PRELOAD_EXPORT int __poll_chk(pollfd* fds, nfds_t n, int timeout, size_t fdslen) {
  if (fdslen / sizeof *fds < n) __chk_fail();
  return poll(fds, n, timeout);
}

// select through poll when any descriptor is ours. The timeout is not
// updated with the time left (Linux does; POSIX leaves it unspecified).
SS_PRELOAD_EXPORT int select(int nfds, fd_set* r, fd_set* w, fd_set* x, timeval* tv) {
  if (libc_only() || nfds <= 0 || nfds > FD_SETSIZE) return real().select(nfds, r, w, x, tv);
  std::vector<pollfd> p;
  bool ours = false;
  try {
    for (int fd = 0; fd < nfds; fd++) {
      short ev = static_cast<short>(((r && FD_ISSET(fd, r)) ? POLLIN : 0) |
                                    ((w && FD_ISSET(fd, w)) ? POLLOUT : 0) |
                                    ((x && FD_ISSET(fd, x)) ? POLLPRI : 0));
      if (!ev) continue;
      p.push_back({fd, ev, 0});
      Route rt = route(fd);
      ours = ours || rt == Route::kRsocket || rt == Route::kListener;
    }
  } catch (const std::bad_alloc&) {
    errno = ENOMEM;
    return -1;
  }
  if (!ours) return real().select(nfds, r, w, x, tv);
  int timeout = -1;
  if (tv) {
    if (tv->tv_sec < 0 || tv->tv_usec < 0) {
      errno = EINVAL;
      return -1;
    }
    long long ms = tv->tv_sec * 1000LL + (tv->tv_usec + 999) / 1000;
    timeout = ms > 0x7fffffff ? 0x7fffffff : static_cast<int>(ms);
  }
  int rc = poll(p.data(), p.size(), timeout);
  if (rc < 0) return rc;
  for (const pollfd& q : p)
    if (q.revents & POLLNVAL) {
      errno = EBADF;
      return -1;
    }
  if (r) FD_ZERO(r);
  if (w) FD_ZERO(w);
  if (x) FD_ZERO(x);
  int count = 0;
  for (const pollfd& q : p) {
    if ((q.events & POLLIN) && (q.revents & (POLLIN | POLLHUP | POLLERR))) FD_SET(q.fd, r), count++;
    if ((q.events & POLLOUT) && (q.revents & (POLLOUT | POLLERR))) FD_SET(q.fd, w), count++;
    if ((q.events & POLLPRI) && (q.revents & POLLPRI)) FD_SET(q.fd, x), count++;
  }
  return count;
}

namespace {

int timespec_ms(const timespec* t) {
  if (!t) return -1;
  long long ms = t->tv_sec * 1000LL + (t->tv_nsec + 999999) / 1000000;
  return ms > 0x7fffffff ? 0x7fffffff : static_cast<int>(ms);
}

// The signal mask for the call's duration. Unlike the kernel's, the swap
// is not atomic with the wait: a signal the mask lets in just before the
// wait starts does not cut it short.
class MaskForCall {
 public:
  explicit MaskForCall(const sigset_t* mask) : set_(mask != nullptr) {
    if (set_) pthread_sigmask(SIG_SETMASK, mask, &old_);
  }
  ~MaskForCall() {
    if (!set_) return;
    const int saved = errno;
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    errno = saved;
  }
  MaskForCall(const MaskForCall&) = delete;
  MaskForCall& operator=(const MaskForCall&) = delete;

 private:
  bool set_;
  sigset_t old_;
};

bool bad_timespec(const timespec* t) {
  if (t && (t->tv_sec < 0 || t->tv_nsec < 0 || t->tv_nsec >= 1000000000)) {
    errno = EINVAL;
    return true;
  }
  return false;
}

}  // namespace

SS_PRELOAD_EXPORT int ppoll(pollfd* fds, nfds_t n, const timespec* t, const sigset_t* mask) {
  if (libc_only() || !fds || !any_ours(fds, n)) return real().ppoll(fds, n, t, mask);
  if (bad_timespec(t)) return -1;
  MaskForCall m(mask);
  return poll(fds, n, timespec_ms(t));
}

SS_PRELOAD_EXPORT int pselect(int nfds, fd_set* r, fd_set* w, fd_set* x, const timespec* t,
                              const sigset_t* mask) {
  if (libc_only()) return real().pselect(nfds, r, w, x, t, mask);
  if (bad_timespec(t)) return -1;
  MaskForCall m(mask);
  if (!t) return select(nfds, r, w, x, nullptr);
  timeval tv{t->tv_sec, static_cast<suseconds_t>((t->tv_nsec + 999) / 1000)};
  return select(nfds, r, w, x, &tv);
}

SS_PRELOAD_EXPORT int epoll_ctl(int epfd, int op, int fd, epoll_event* ev) noexcept {
  Route r = route(fd);
  if (op != EPOLL_CTL_DEL && r == Route::kListener) {
    SS_INFO("librspreload: listener fd %d added to an epoll set: kernel TCP only", fd);
    to_kernel_listener(fd, true);
  }
  if (op != EPOLL_CTL_DEL && r == Route::kRsocket) {
    SS_WARN("librspreload: epoll on rsocket fd %d is not supported yet (EPERM): use poll or select",
            fd);
    errno = EPERM;
    return -1;
  }
  return real().epoll_ctl(epfd, op, fd, ev);
}
