#include "preload/dup_calls.h"

#include <fcntl.h>

#include "interpose/dup_share.h"
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
