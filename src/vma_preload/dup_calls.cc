// Duplicates of a recorded socket or of an epoll set (libvma.so): dup,
// dup2, dup3, fcntl's F_DUPFD and F_DUPFD_CLOEXEC, close, close_range and
// closefrom, on the duplicates both preloads share (interpose/dup_share.h). Every number of
// one socket names its one record (its offloaded path, vmastat block and
// decision) until the last is closed; the number the socket was made at
// stays open (held) while a duplicate lives, since the record acts on it.
// A dup2/dup3 onto a recorded socket or a set closes it as close() does.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdint>

#include "core/base/fd_table.h"
#include "interpose/dup_share.h"
#include "interpose/epoll_glue.h"
#include "interpose/export.h"
#include "interpose/real.h"
#include "interpose/edge.h"
#include "interpose/signal_count.h"
#include "vma_preload/epoll_face.h"
#include "vma_preload/socket_record.h"

using ss::interpose::real;
namespace vp = ss::vma::preload;
namespace dups = ss::interpose::dups;

namespace {

bool recorded(int fd) { return ss::FdTable::instance().kind(fd) == ss::FdKind::kVmaSocket; }
bool our_set(int fd) { return ss::interpose::epoll_fd(fd) != nullptr; }

// A duplicate of a recorded socket or of one of our epoll sets (the same
// set at the new number).
int dup_ours(int fd, int at, bool exact, bool cloexec) {
  if (our_set(fd))
    return ss::interpose::edge_call(
        [&] { return ss::interpose::dup_epoll(fd, at, exact, cloexec); });
  const int nfd = ss::interpose::edge_call(
      [&] { return dups::dup_entry(fd, ss::FdKind::kVmaSocket, at, exact, cloexec); });
  if (nfd >= 0) vp::note_number(nfd);  // a fork child finds the record there too
  return nfd;
}

// dup2 (flags < 0) or dup3 of fd onto fd2.
int dup_onto(int fd, int fd2, int flags) {
  const bool ours = recorded(fd) || our_set(fd), theirs = recorded(fd2) || our_set(fd2);
  if (fd == fd2 || (!ours && !theirs && !dups::held(fd2)))
    return flags < 0 ? real().dup2(fd, fd2) : real().dup3(fd, fd2, flags);
  if (flags > 0 && (flags & ~O_CLOEXEC)) {
    errno = EINVAL;
    return -1;
  }
  if (dups::held(fd2)) {
    SS_WARN("%s onto fd %d, still held for a socket's duplicate: EBUSY",
            flags < 0 ? "dup2" : "dup3", fd2);
    errno = EBUSY;
    return -1;
  }
  if (real().fcntl(fd, F_GETFD) < 0) return -1;  // EBADF before fd2 is touched
  if (recorded(fd2))                             // closed as the program's close ends it
    vp::close_recorded(fd2);
  else if (our_set(fd2))
    ss::interpose::close_epoll(vp::kEpollFace, fd2);
  if (ours) return dup_ours(fd, fd2, true, flags > 0);
  return flags < 0 ? real().dup2(fd, fd2) : real().dup3(fd, fd2, flags);
}

}  // namespace

namespace ss::vma::preload {

int close_recorded(int fd) {
  int rc = 0, own = fd;
  bool shared = false;
  interpose::edge_quiet("close", fd, [&] {
    shared = dups::close_shared(fd, FdKind::kVmaSocket, &rc, &own);
    if (shared) return;
    // In a handler over the library the stack's locks may be held under
    // it: the FIN and the rest go with the record, once that work ends.
    const bool over_busy = interpose::handler_over_busy();
    if (const auto s = ss::FdTable::instance().get<SocketRecord>(own, ss::FdKind::kVmaSocket);
        s && !over_busy)
      s->before_last_close(s);
    // Before the kernel frees the number, which another thread may then reuse.
    interpose::release_after_busy(untrack_socket(own));
  });
  return shared ? rc : dups::close_released(own);
}

}  // namespace ss::vma::preload

SS_PRELOAD_EXPORT int dup(int fd) {
  if (!recorded(fd) && !our_set(fd)) return real().dup(fd);
  return dup_ours(fd, 0, false, false);
}

SS_PRELOAD_EXPORT int dup2(int fd, int fd2) { return dup_onto(fd, fd2, -1); }

SS_PRELOAD_EXPORT int dup3(int fd, int fd2, int flags) {
  if (flags < 0) {  // not a flag set dup3 takes (and dup_onto's mark for dup2)
    errno = EINVAL;
    return -1;
  }
  return dup_onto(fd, fd2, flags);
}

// The third argument, where there is one, is an int or a pointer: a long
// carries either.
SS_PRELOAD_EXPORT int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  const long arg = va_arg(ap, long);
  va_end(ap);
  if ((cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && (recorded(fd) || our_set(fd))) {
    const int from = static_cast<int>(arg);  // the kernel reads an int
    if (from < 0) {
      errno = EINVAL;
      return -1;
    }
    return dup_ours(fd, from, false, cmd == F_DUPFD_CLOEXEC);
  }
  return real().fcntl(fd, cmd, arg);
}

// The same call under glibc's large-file name (one off_t on 64-bit).
SS_PRELOAD_EXPORT int fcntl64(int fd, int cmd, ...) __attribute__((alias("fcntl")));

// Recorded sockets and our epoll sets in the range go through close()
// (sockets.cc), which ends each as its own close would; the kernel closes
// the rest.
SS_PRELOAD_EXPORT int close_range(unsigned int first, unsigned int last, int flags) {
  return dups::close_range_with(
      first, last, flags, [](int fd) { return recorded(fd) || our_set(fd); },
      [](int fd) { close(fd); });
}

// glibc's closefrom closes with its internal close_range, past the
// preload: it comes through close_range here instead.
SS_PRELOAD_EXPORT void closefrom(int lowfd) { dups::closefrom_with(lowfd, close_range, close); }
