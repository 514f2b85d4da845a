// dup, dup2, dup3, close_range and closefrom over the preload's sockets
// and epoll sets, and the rsocket face of the shared duplicates
// (dup_calls.h).
#include "preload/dup_calls.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "core/base/log.h"
#include "interpose/dup_share.h"
#include "interpose/epoll_glue.h"
#include "interpose/export.h"
#include "interpose/real.h"
#include "librsocket/preload_hooks.h"
#include "librsocket/rsocket_own.h"
#include "preload/route.h"

namespace ss::preload::dups {

namespace shared = ss::interpose::dups;

// The kernel descriptor is close-on-exec as every rsocket's (set_fd_flags);
// the program's flag is kept beside it (what an exec carries).
int dup_rsocket(int fd, int at, bool exact, bool cloexec) {
  int fd_flag = -1;  // fd's own, kept once numbers share the rsocket's
  if (shared::program_cloexec(fd) < 0) {
    OwnCalls in;
    fd_flag = rfcntl(fd, F_GETFD);
  }
  const int nfd = shared::dup_entry(fd, FdKind::kRsocket, at, exact, /*cloexec=*/true);
  if (nfd < 0) return nfd;
  if (fd_flag >= 0) shared::set_program_cloexec(fd, fd_flag & FD_CLOEXEC);
  shared::set_program_cloexec(nfd, cloexec);
  return nfd;
}

bool close_shared(int fd, int* rc) {
  int own;
  if (shared::close_shared(fd, FdKind::kRsocket, rc, &own)) return true;
  if (own == fd) return false;
  *rc = close_last(own);
  return true;
}

int close_last(int fd) {
  shared::hold(fd);  // before rclose: its close of the number releases it
  OwnCalls in;
  return rclose(fd);
}

int dup_listener(int fd, int at, bool exact, bool cloexec) {
  return shared::dup_entry(fd, FdKind::kRspreloadTcp, at, exact, cloexec, /*acts_on_owner=*/false);
}

bool close_listener_shared(int fd, int* rc) {
  int own;
  return shared::close_shared(fd, FdKind::kRspreloadTcp, rc, &own);
}

void forget_duplicates(int fd) { shared::dissolve(fd); }

int close_released(int fd) { return shared::close_released(fd); }

bool last_descriptor(int fd) { return shared::last_descriptor(fd, FdKind::kRsocket); }

bool held(int fd) { return shared::held(fd); }

namespace {
__attribute__((constructor)) void follow_closes_in_fork_children() {
  ss_rspreload_fork_closed(shared::forget_held);
}
}  // namespace

}  // namespace ss::preload::dups

namespace ss::preload {
namespace {

// dup2 (flags < 0) or dup3 of `fd` onto `fd2`, whatever either is.
int dup_onto(int fd, int fd2, int flags) {
  const char* call = flags < 0 ? "dup2" : "dup3";
  const Route r = route(fd);
  if (fd == fd2)
    return flags < 0 ? ss::interpose::real().dup2(fd, fd2)
                     : ss::interpose::real().dup3(fd, fd2, flags);
  if (in_vfork_child()) {
    // libc's, but a copy of an rsocket's kernel descriptor is close-on-exec
    // (the exec'd program gets EBADF, never a socket that is not the connection).
    if (r == Route::kRsocket)
      return ss::interpose::real().dup3(fd, fd2, (flags < 0 ? 0 : flags) | O_CLOEXEC);
    return flags < 0 ? ss::interpose::real().dup2(fd, fd2)
                     : ss::interpose::real().dup3(fd, fd2, flags);
  }
  if (dups::held(fd2)) {
    SS_WARN("librspreload: %s onto fd %d, still held by an rsocket (shared or closing): EBUSY",
            call, fd2);
    errno = EBUSY;
    return -1;
  }
  if (ss::interpose::real().fcntl(fd, F_GETFD) < 0) return -1;  // EBADF before fd2 is touched
  if (route(fd2) != Route::kKernel) close_fd(fd2);
  if (r == Route::kRsocket)
    return dups::dup_rsocket(fd, fd2, true, flags > 0 && (flags & O_CLOEXEC));
  if (r == Route::kListener)
    return dups::dup_listener(fd, fd2, true, flags > 0 && (flags & O_CLOEXEC));
  if (r == Route::kEpoll)
    return ss::interpose::dup_epoll(fd, fd2, true, flags > 0 && (flags & O_CLOEXEC));
  if (r == Route::kFresh) give_to_kernel(fd);
  return flags < 0 ? ss::interpose::real().dup2(fd, fd2)
                   : ss::interpose::real().dup3(fd, fd2, flags);
}

}  // namespace
}  // namespace ss::preload

using namespace ss::preload;

// Ours in the range are closed as close() closes them (an rsocket's
// connection ends, the table forgets them) and the kernel closes the
// rest, around the numbers librsocket holds (interpose/dup_share.h).
SS_PRELOAD_EXPORT int close_range(unsigned int first, unsigned int last, int flags) noexcept {
  if (libc_only()) return ss::interpose::real().close_range(first, last, flags);
  if (in_vfork_child()) {
    try {
      return ss::interpose::dups::close_range_around(first, last, flags, vfork_child_transports());
    } catch (const std::bad_alloc&) {
      return ss::interpose::real().close_range(first, last, flags);
    }
  }
  return ss::interpose::dups::close_range_with(
      first, last, flags, [](int fd) { return route(fd) != Route::kKernel; },
      [](int fd) { close_fd(fd); });
}

// glibc's closefrom closes with its internal close_range, past the
// preload: it comes through close_range here instead.
SS_PRELOAD_EXPORT void closefrom(int lowfd) noexcept {
  ss::interpose::dups::closefrom_with(lowfd, close_range, close);
}

SS_PRELOAD_EXPORT int dup(int fd) noexcept {
  if (in_vfork_child())  // libc's, on the child's own numbers (as dup_onto)
    return route(fd) == Route::kRsocket ? ss::interpose::real().fcntl(fd, F_DUPFD_CLOEXEC, 0)
                                        : ss::interpose::real().dup(fd);
  switch (route(fd)) {
    case Route::kRsocket:
      return dups::dup_rsocket(fd, 0, false, false);
    case Route::kListener:
      return dups::dup_listener(fd, 0, false, false);
    case Route::kEpoll:
      return ss::interpose::dup_epoll(fd, 0, false, false);
    case Route::kFresh:
      give_to_kernel(fd);
      return ss::interpose::real().dup(fd);
    default:
      return ss::interpose::real().dup(fd);
  }
}

SS_PRELOAD_EXPORT int dup2(int fd, int fd2) noexcept { return dup_onto(fd, fd2, -1); }

SS_PRELOAD_EXPORT int dup3(int fd, int fd2, int flags) noexcept {
  if (flags < 0) {  // not a flag set dup3 takes (and dup_onto's mark for dup2)
    errno = EINVAL;
    return -1;
  }
  return dup_onto(fd, fd2, flags);
}
