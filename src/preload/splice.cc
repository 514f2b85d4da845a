// splice(2) between a pipe and a connection. An rsocket has no kernel
// pipe path, so the bytes go through a buffer of ours, and neither side
// loses any: from a connection, the bytes are peeked and only what the
// pipe took is consumed; to a connection, the pipe's bytes are copied
// (tee into a scratch pipe) and only what the connection took is read.
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "librsocket/rsocket_own.h"
#include "interpose/export.h"
#include "interpose/real.h"
#include "preload/route.h"
#include "preload/sigpipe.h"

using namespace ss::preload;

namespace {

constexpr size_t kChunk = 64 * 1024;  // a default pipe's capacity

bool is_pipe(int fd) {
  struct stat st {};
  return fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode);
}

// Closes the scratch pipe keeping errno (the call's answer).
struct ScratchPipe {
  int fd[2] = {-1, -1};
  ~ScratchPipe() {
    const int saved = errno;
    for (int f : fd)
      if (f >= 0) ss::interpose::real().close(f);
    errno = saved;
  }
};

// Connection `in` to pipe `out`. The pipe is waited for first when it
// must not block this call (SPLICE_F_NONBLOCK or its own O_NONBLOCK).
ssize_t connection_to_pipe(int in, int out, size_t len, unsigned flags) {
  const bool pipe_nonblock =
      (flags & SPLICE_F_NONBLOCK) || (ss::interpose::real().fcntl(out, F_GETFL) & O_NONBLOCK);
  if (pipe_nonblock) {
    pollfd p{out, POLLOUT, 0};
    if (ss::interpose::real().poll(&p, 1, 0) == 0) {
      errno = EAGAIN;
      return -1;
    }
  }
  char buf[kChunk];
  ssize_t n;
  {
    OwnCalls guard;
    n = rrecv(in, buf, std::min(len, sizeof buf), MSG_PEEK);  // blocks as the socket does
  }
  if (n <= 0) return n;
  ssize_t w = ss::interpose::real().write(out, buf, static_cast<size_t>(n));
  if (w <= 0) return w;
  OwnCalls guard;
  return rrecv(in, buf, static_cast<size_t>(w), 0);  // the peeked bytes: there, never blocks
}

// Pipe `in` to connection `out`; the pipe waited for as the kernel waits
// (not with SPLICE_F_NONBLOCK or its own O_NONBLOCK).
ssize_t pipe_to_connection(int in, int out, size_t len, unsigned flags) {
  if (ss::interpose::real().fcntl(in, F_GETFL) & O_NONBLOCK) flags |= SPLICE_F_NONBLOCK;
  ScratchPipe scratch;
  if (pipe2(scratch.fd, O_CLOEXEC)) return -1;
  ssize_t n = tee(in, scratch.fd[1], std::min(len, kChunk), flags & SPLICE_F_NONBLOCK);
  if (n <= 0) return n;  // 0: no writer left
  char buf[kChunk];
  if (ss::interpose::real().read(scratch.fd[0], buf, static_cast<size_t>(n)) != n) return -1;
  ssize_t w;
  {
    OwnCalls guard;
    w = pipe_signal(rsend(out, buf, static_cast<size_t>(n), 0), 0);  // blocks as the socket does
  }
  if (w <= 0) return w;
  return ss::interpose::real().read(in, buf,
                                    static_cast<size_t>(w));  // what was sent leaves the pipe
}

}  // namespace

// Not noexcept: glibc declares splice without it (a cancellation point);
// nothing here throws.
SS_PRELOAD_EXPORT ssize_t splice(int in, loff_t* off_in, int out, loff_t* off_out, size_t len,
                                 unsigned int flags) {
  const bool rs_in = route(in) == Route::kRsocket, rs_out = route(out) == Route::kRsocket;
  if (!rs_in && !rs_out) return ss::interpose::real().splice(in, off_in, out, off_out, len, flags);
  // The kernel's checks: one end a pipe (else EINVAL), no offset on the
  // pipe (ESPIPE) nor on the socket (EINVAL: it cannot pread).
  loff_t* pipe_off = rs_in ? off_out : off_in;
  loff_t* socket_off = rs_in ? off_in : off_out;
  if (rs_in == rs_out || !is_pipe(rs_in ? out : in) || (!pipe_off && socket_off)) {
    errno = EINVAL;
    return -1;
  }
  if (pipe_off) {
    errno = ESPIPE;
    return -1;
  }
  if (len == 0) return 0;
  return rs_in ? connection_to_pipe(in, out, len, flags) : pipe_to_connection(in, out, len, flags);
}
