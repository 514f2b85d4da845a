#include "core/base/kick.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "core/base/log.h"
#include "core/base/own_fd.h"

namespace ss {

Kick::~Kick() {
  if (fd_ >= 0) ::close(fd_);
}

int Kick::join() {
  if (fd_ < 0) {
    fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd_ < 0) return -errno;
  }
  waiters_++;
  return 0;
}

void Kick::leave(bool kicked) {
  if (--waiters_ == 0 && kicked) {
    uint64_t v;
    if (::read(fd_, &v, sizeof v) < 0) { /* nothing pending */ }
  }
}

void Kick::fork_child() {
  if (fd_ >= 0) own_close(fd_);  // in the fd table's fork handler: not through a preload
  fd_ = -1;
  waiters_ = 0;
}

void Kick::signal() {
  uint64_t one = 1;
  if (fd_ >= 0 && ::write(fd_, &one, sizeof one) < 0) SS_DEBUG("kick failed");
}

}  // namespace ss
