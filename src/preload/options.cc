// Names, options, shutdown, fcntl and ioctl. An rsocket answers for
// itself; a listener's kernel socket answers except for O_NONBLOCK, which
// the preload keeps for the program (the kernel socket never blocks).
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdarg>

#include "core/base/log.h"
#include "librsocket/rsocket_own.h"
#include "librsocket/preload_hooks.h"
#include "interpose/dup_share.h"
#include "interpose/epoll_glue.h"
#include "preload/connection_options.h"
#include "preload/dup_calls.h"
#include "interpose/export.h"
#include "interpose/real.h"
#include "preload/route.h"

using namespace ss::preload;

namespace {

int unsupported(int fd, const char* what) {
  SS_WARN("librspreload: %s on rsocket fd %d is not supported yet (EOPNOTSUPP)", what, fd);
  errno = EOPNOTSUPP;
  return -1;
}

}  // namespace

int ss::preload::set_fd_flags(int fd, int flags) {
  if (rfcntl(fd, F_SETFD, flags)) return -1;
  return ss::interpose::real().fcntl(fd, F_SETFD, FD_CLOEXEC);
}

namespace {

int fcntl_any(int fd, int cmd, long arg) {
  switch (route(fd)) {
    case Route::kRsocket: {
      switch (cmd) {
        case F_GETFD: {
          // A duplicate's own flag, else the rsocket's.
          const int cloexec = ss::interpose::dups::program_cloexec(fd);
          if (cloexec >= 0) return cloexec ? FD_CLOEXEC : 0;
          OwnCalls in;
          return rfcntl(fd, cmd, arg);
        }
        case F_GETFL:
        case F_SETFL: {
          OwnCalls in;
          return rfcntl(fd, cmd, arg);
        }
        case F_SETFD: {
          ss::interpose::dups::set_program_cloexec(fd, arg & FD_CLOEXEC);
          OwnCalls in;
          return set_fd_flags(fd, static_cast<int>(arg));
        }
        case F_DUPFD:
        case F_DUPFD_CLOEXEC:
          return dups::dup_rsocket(fd, static_cast<int>(arg), false, cmd == F_DUPFD_CLOEXEC);
        default:
          return unsupported(fd, "this fcntl command");
      }
    }
    case Route::kListener: {
      auto e = entry(fd);
      if (!e) break;
      if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
        return dups::dup_listener(fd, static_cast<int>(arg), false, cmd == F_DUPFD_CLOEXEC);
      if (cmd == F_GETFL) {
        int fl = ss::interpose::real().fcntl(fd, F_GETFL);
        return fl < 0 ? fl : (fl & ~O_NONBLOCK) | (e->nonblock ? O_NONBLOCK : 0);
      }
      if (cmd == F_SETFL) {
        int rc = ss::interpose::real().fcntl(fd, F_SETFL, arg | O_NONBLOCK);
        if (!rc) e->nonblock = arg & O_NONBLOCK;
        return rc;
      }
      break;
    }
    case Route::kFresh:
      if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) give_to_kernel(fd);
      break;
    case Route::kEpoll:
      if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
        return ss::interpose::dup_epoll(fd, static_cast<int>(arg), false, cmd == F_DUPFD_CLOEXEC);
      break;
    default:
      break;
  }
  return ss::interpose::real().fcntl(fd, cmd, arg);
}

// In a vfork child (which shares our tables): libc's, on the child's own
// descriptors. A copy of an rsocket's kernel descriptor is close-on-exec;
// its FD_CLOEXEC cleared is a number handed on, which the exec carries
// (exec_hook.cc) or closes.
int vfork_child_fcntl(int fd, int cmd, long arg) {
  if (route(fd) == Route::kRsocket && cmd == F_DUPFD) cmd = F_DUPFD_CLOEXEC;
  return ss::interpose::real().fcntl(fd, cmd, arg);
}

}  // namespace

SS_PRELOAD_EXPORT int getsockopt(int fd, int level, int name, void* val, socklen_t* len) noexcept {
  return on_rsocket(
      fd, [&] { return connection_getsockopt(fd, level, name, val, len); },
      [&] { return ss::interpose::real().getsockopt(fd, level, name, val, len); });
}

SS_PRELOAD_EXPORT int setsockopt(int fd, int level, int name, const void* val,
                                 socklen_t len) noexcept {
  return on_rsocket(
      fd, [&] { return connection_setsockopt(fd, level, name, val, len); },
      [&] {
        int rc = ss::interpose::real().setsockopt(fd, level, name, val, len);
        if (rc == 0 && level == SOL_SOCKET && (name == SO_SNDBUF || name == SO_RCVBUF) &&
            len >= sizeof(int))
          if (auto e = entry(fd))
            (name == SO_SNDBUF ? e->sndbuf : e->rcvbuf) = *static_cast<const int*>(val);
        return rc;
      });
}

SS_PRELOAD_EXPORT int getsockname(int fd, sockaddr* addr, socklen_t* len) noexcept {
  return on_rsocket(
      fd, [&] { return rgetsockname(fd, addr, len); },
      [&] { return ss::interpose::real().getsockname(fd, addr, len); });
}

SS_PRELOAD_EXPORT int getpeername(int fd, sockaddr* addr, socklen_t* len) noexcept {
  return on_rsocket(
      fd, [&] { return rgetpeername(fd, addr, len); },
      [&] { return ss::interpose::real().getpeername(fd, addr, len); });
}

SS_PRELOAD_EXPORT int shutdown(int fd, int how) noexcept {
  switch (route(fd)) {
    case Route::kRsocket: {
      OwnCalls in;
      return rshutdown(fd, how);
    }
    case Route::kListener:
      return shutdown_listener(fd, how);
    default:
      return ss::interpose::real().shutdown(fd, how);
  }
}

// The third argument, where there is one, is an int or a pointer: a long
// carries either.
SS_PRELOAD_EXPORT int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  long arg = va_arg(ap, long);
  va_end(ap);
  if (in_vfork_child()) return vfork_child_fcntl(fd, cmd, arg);
  return fcntl_any(fd, cmd, arg);
}

// The same call under glibc's large-file name (one off_t on 64-bit).
SS_PRELOAD_EXPORT int fcntl64(int fd, int cmd, ...) __attribute__((alias("fcntl")));

SS_PRELOAD_EXPORT int ioctl(int fd, unsigned long req, ...) noexcept {
  va_list ap;
  va_start(ap, req);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  Route r = route(fd);
  if (r == Route::kRsocket && (req == FIOCLEX || req == FIONCLEX)) {  // fcntl's F_SETFD
    if (in_vfork_child()) return vfork_child_fcntl(fd, F_SETFD, req == FIOCLEX ? FD_CLOEXEC : 0);
    return fcntl_any(fd, F_SETFD, req == FIOCLEX ? FD_CLOEXEC : 0);
  }
  if ((r == Route::kRsocket || r == Route::kListener) && req == FIONBIO) {
    if (!arg) {
      errno = EFAULT;
      return -1;
    }
    int fl = fcntl_any(fd, F_GETFL, 0);
    if (fl < 0) return -1;
    return fcntl_any(fd, F_SETFL, *static_cast<int*>(arg) ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
  }
  if (r == Route::kRsocket) {
    if (req != FIONREAD && req != SIOCOUTQ) return unsupported(fd, "this ioctl request");
    if (!arg) {
      errno = EFAULT;
      return -1;
    }
    OwnCalls in;
    int n = ss_rspreload_queued(fd, req == FIONREAD);  // SIOCINQ is FIONREAD
    if (n < 0) return -1;
    *static_cast<int*>(arg) = n;
    return 0;
  }
  return ss::interpose::real().ioctl(fd, req, arg);
}
