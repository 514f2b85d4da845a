// Data calls: an rsocket's go to librsocket, every other descriptor's to
// libc. The fortify (_chk) variants check their buffer as glibc's do.
#include <pthread.h>
#include <signal.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>

#include "librsocket/rsocket_own.h"
#include "interpose/export.h"
#include "core/base/log.h"
#include "interpose/fortify_receives.h"
#include "interpose/real.h"
#include "interpose/sendfile_copy.h"
#include "interpose/wait_args.h"
#include "preload/pass_rights.h"
#include "preload/route.h"
#include "preload/sigpipe.h"

extern "C" void __chk_fail(void) __attribute__((noreturn));

using namespace ss::preload;

namespace {
bool rs(int fd) { return route(fd) == Route::kRsocket; }

}  // namespace

SS_PRELOAD_EXPORT ssize_t read(int fd, void* buf, size_t n) {
  return on_rsocket_data(
      fd, [&] { return rread(fd, buf, n); },
      [&] { return ss::interpose::real().read(fd, buf, n); });
}

SS_PRELOAD_EXPORT ssize_t readv(int fd, const iovec* iov, int cnt) {
  return on_rsocket_data(
      fd, [&] { return rreadv(fd, iov, cnt); },
      [&] { return ss::interpose::real().readv(fd, iov, cnt); });
}

SS_PRELOAD_EXPORT ssize_t write(int fd, const void* buf, size_t n) {
  return on_rsocket_data(
      fd, [&] { return pipe_signal(rwrite(fd, buf, n), 0); },
      [&] { return ss::interpose::real().write(fd, buf, n); });
}

SS_PRELOAD_EXPORT ssize_t writev(int fd, const iovec* iov, int cnt) {
  return on_rsocket_data(
      fd, [&] { return pipe_signal(rwritev(fd, iov, cnt), 0); },
      [&] { return ss::interpose::real().writev(fd, iov, cnt); });
}

// preadv2/pwritev2 on a connection, as Linux's on a socket: offset -1 is
// readv/writev (RWF_NOWAIT: without blocking), any other offset ESPIPE, a
// flag a socket does not take EOPNOTSUPP. (preadv/pwritev need no
// stand-in: the descriptor is a socket, so the kernel's answer, ESPIPE,
// is already the right one.)
namespace {
// One positioned vectored call on rsocket fd through `call` (rrecvmsg or
// rsendmsg with the flags the RWF_ ones mean), or -1 and errno.
template <typename Call>
ssize_t positioned(int fd, const iovec* iov, int cnt, off_t off, int flags, Call call) {
  if (off != -1) {
    errno = ESPIPE;
    return -1;
  }
  if (flags & ~RWF_NOWAIT) {
    errno = EOPNOTSUPP;
    return -1;
  }
  msghdr m{};
  m.msg_iov = const_cast<iovec*>(iov);
  m.msg_iovlen = static_cast<size_t>(cnt);
  return call(fd, &m, (flags & RWF_NOWAIT) ? MSG_DONTWAIT : 0);
}
}  // namespace

SS_PRELOAD_EXPORT ssize_t preadv2(int fd, const iovec* iov, int cnt, off_t off, int flags) {
  return on_rsocket_data(
      fd,
      [&] {
        return positioned(fd, iov, cnt, off, flags,
                          [](int f, msghdr* m, int msg) { return rrecvmsg(f, m, msg); });
      },
      [&] { return ss::interpose::real().preadv2(fd, iov, cnt, off, flags); });
}

SS_PRELOAD_EXPORT ssize_t pwritev2(int fd, const iovec* iov, int cnt, off_t off, int flags) {
  return on_rsocket_data(
      fd,
      [&] {
        return positioned(fd, iov, cnt, off, flags, [](int f, msghdr* m, int msg) {
          return pipe_signal(rsendmsg(f, m, msg), msg);
        });
      },
      [&] { return ss::interpose::real().pwritev2(fd, iov, cnt, off, flags); });
}

// glibc's names for the same calls with a 64-bit offset (_FILE_OFFSET_BITS=64).
SS_PRELOAD_EXPORT ssize_t preadv64v2(int fd, const iovec* iov, int cnt, off_t off, int flags) {
  return preadv2(fd, iov, cnt, off, flags);
}
SS_PRELOAD_EXPORT ssize_t pwritev64v2(int fd, const iovec* iov, int cnt, off_t off, int flags) {
  return pwritev2(fd, iov, cnt, off, flags);
}

SS_PRELOAD_EXPORT ssize_t recv(int fd, void* buf, size_t n, int flags) {
  return on_rsocket_data(
      fd, [&] { return rrecv(fd, buf, n, flags); },
      [&] { return ss::interpose::real().recv(fd, buf, n, flags); });
}

SS_PRELOAD_EXPORT ssize_t recvfrom(int fd, void* buf, size_t n, int flags, sockaddr* from,
                                   socklen_t* from_len) {
  return on_rsocket_data(
      fd, [&] { return rrecvfrom(fd, buf, n, flags, from, from_len); },
      [&] { return ss::interpose::real().recvfrom(fd, buf, n, flags, from, from_len); });
}

SS_PRELOAD_EXPORT ssize_t recvmsg(int fd, msghdr* msg, int flags) {
  return on_rsocket_data(
      fd, [&] { return rrecvmsg(fd, msg, flags); },
      [&] {
        ssize_t got;
        if (!libc_only() && recv_carried(fd, msg, flags, &got)) return got;
        return ss::interpose::real().recvmsg(fd, msg, flags);
      });
}

SS_PRELOAD_EXPORT ssize_t send(int fd, const void* buf, size_t n, int flags) {
  return on_rsocket_data(
      fd, [&] { return pipe_signal(rsend(fd, buf, n, flags), flags); },
      [&] { return ss::interpose::real().send(fd, buf, n, flags); });
}

// A connected TCP socket ignores the address (Linux's tcp_sendmsg): so does this.
SS_PRELOAD_EXPORT ssize_t sendto(int fd, const void* buf, size_t n, int flags, const sockaddr* to,
                                 socklen_t to_len) {
  return on_rsocket_data(
      fd, [&] { return pipe_signal(rsend(fd, buf, n, flags), flags); },
      [&] { return ss::interpose::real().sendto(fd, buf, n, flags, to, to_len); });
}

SS_PRELOAD_EXPORT ssize_t sendmsg(int fd, const msghdr* msg, int flags) {
  ssize_t sent;
  if (!libc_only() && !rs(fd) && send_carrying(fd, msg, flags, &sent)) return sent;
  return on_rsocket_data(
      fd, [&] { return pipe_signal(rsendmsg(fd, msg, flags), flags); },
      [&] { return ss::interpose::real().sendmsg(fd, msg, flags); });
}

// The batch calls on an rsocket, or on a unix socket that passes one:
// one recvmsg/sendmsg per message, as the kernel's batch calls go. With
// MSG_WAITFORONE none after the first waits (a stream gives that
// anyway); recvmmsg's timeout is looked at after each message, as the
// kernel looks at it (left with what remains).
SS_PRELOAD_EXPORT int recvmmsg(int fd, mmsghdr* v, unsigned int vlen, int flags, timespec* tmo) {
  if (!rs(fd) && (libc_only() || !batch_may_carry(fd, v, vlen)))
    return ss::interpose::real().recvmmsg(fd, v, vlen, flags, tmo);
  const bool one = flags & MSG_WAITFORONE;
  flags &= ~MSG_WAITFORONE;
  if (ss::interpose::bad_timespec(tmo)) return -1;
  using Clock = std::chrono::steady_clock;
  const Clock::time_point end =
      tmo ? Clock::now() + std::chrono::seconds(std::min<time_t>(tmo->tv_sec, 1L << 30)) +
                std::chrono::nanoseconds(tmo->tv_nsec)
          : Clock::time_point::max();
  // What remains of the timeout, written back; true once it is spent.
  const auto spent = [&] {
    if (!tmo) return false;
    const long long ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::max(end - Clock::now(), Clock::duration::zero()))
                             .count();
    tmo->tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    tmo->tv_nsec = static_cast<long>(ns % 1'000'000'000);
    return ns == 0;
  };
  unsigned int i = 0;
  for (; i < vlen; i++) {
    ssize_t n = recvmsg(fd, &v[i].msg_hdr, i && (one || rs(fd)) ? flags | MSG_DONTWAIT : flags);
    if (n < 0) {
      if (!i) return -1;
      break;
    }
    v[i].msg_len = static_cast<unsigned int>(n);
    if (n == 0) {  // end of stream: this one counts, nothing follows
      i++;
      break;
    }
    if (spent()) {
      i++;
      break;
    }
  }
  return static_cast<int>(i);
}

SS_PRELOAD_EXPORT int sendmmsg(int fd, mmsghdr* v, unsigned int vlen, int flags) {
  if (!rs(fd) && (libc_only() || !batch_passes_rsockets(v, vlen)))
    return ss::interpose::real().sendmmsg(fd, v, vlen, flags);
  unsigned int i = 0;
  for (; i < vlen; i++) {
    ssize_t n = sendmsg(fd, &v[i].msg_hdr, flags);
    if (n < 0) {
      if (!i) return -1;
      break;
    }
    v[i].msg_len = static_cast<unsigned int>(n);
  }
  return static_cast<int>(i);
}

SS_PRELOAD_FORTIFY_RECEIVES

// To an rsocket: the file's bytes through rsend (interpose/sendfile_copy.h).
static ssize_t sendfile_rsocket(int out, int in_fd, off_t* offset, size_t count) {
  return ss::interpose::sendfile_copy(in_fd, offset, count, [&](const void* buf, size_t n) {
    OwnCalls in;
    return pipe_signal(rsend(out, buf, n, 0), 0);
  });
}

SS_PRELOAD_EXPORT ssize_t sendfile(int out, int in_fd, off_t* offset, size_t count) noexcept {
  return on_rsocket_data(
      out, [&] { return sendfile_rsocket(out, in_fd, offset, count); },
      [&] { return ss::interpose::real().sendfile(out, in_fd, offset, count); });
}

SS_PRELOAD_EXPORT ssize_t sendfile64(int out, int in_fd, off_t* offset, size_t count) noexcept {
  return sendfile(out, in_fd, offset, count);
}
