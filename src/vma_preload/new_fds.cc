// The calls that make descriptors libvma interposes besides socket and
// dup (as libvma's start-up rules): socketpair, pipe (pipe2), open (open64
// and fortify's __open_2, __open64_2) and creat (creat64). A number they
// return that still has a record was closed behind the preload's back (a
// raw close system call): the stale record goes before the program uses
// the number, as libvma purges its stale object, so the new descriptor is
// the kernel's and the old socket's endpoints give its port back.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdarg>

#include "core/base/fd_table.h"
#include "core/base/log.h"
#include "interpose/dup_share.h"
#include "interpose/export.h"
#include "interpose/real.h"
#include "vma_preload/socket_record.h"

using ss::interpose::real;
namespace vp = ss::vma::preload;

namespace ss::vma::preload {

void drop_stale(int fd) {
  if (fd < 0 || FdTable::instance().kind(fd) != FdKind::kVmaSocket) return;  // lock-free
  SS_DEBUG(
      "fd %d came back from the kernel: its socket was closed behind the preload; "
      "record dropped",
      fd);
  interpose::dups::forget(fd, FdKind::kVmaSocket);
}

}  // namespace ss::vma::preload

namespace {

int one(int fd) {
  vp::drop_stale(fd);
  return fd;
}

int two(int r, const int* fds) {
  if (r == 0) {
    vp::drop_stale(fds[0]);
    vp::drop_stale(fds[1]);
  }
  return r;
}

// open's mode, there only with O_CREAT or O_TMPFILE (open(2)).
mode_t mode_of(int flags, va_list ap) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
}

}  // namespace

SS_PRELOAD_EXPORT int socketpair(int domain, int type, int protocol, int sv[2]) {
  return two(real().socketpair(domain, type, protocol, sv), sv);
}

SS_PRELOAD_EXPORT int pipe(int fds[2]) { return two(real().pipe(fds), fds); }

SS_PRELOAD_EXPORT int pipe2(int fds[2], int flags) { return two(real().pipe2(fds, flags), fds); }

SS_PRELOAD_EXPORT int open(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_of(flags, ap);
  va_end(ap);
  return one(real().open(path, flags, mode));
}

SS_PRELOAD_EXPORT int __open_2(const char* path, int flags) {
  return one(real().__open_2(path, flags));
}

SS_PRELOAD_EXPORT int creat(const char* path, mode_t mode) { return one(real().creat(path, mode)); }

// On LP64 the 64-bit names are the same calls (O_LARGEFILE is implied).
SS_PRELOAD_EXPORT int open64(const char* path, int flags, ...) __attribute__((alias("open")));
SS_PRELOAD_EXPORT int __open64_2(const char* path, int flags) __attribute__((alias("__open_2")));
SS_PRELOAD_EXPORT int creat64(const char* path, mode_t mode) __attribute__((alias("creat")));
