#include "core/base/append_file.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/base/errno_guard.h"

namespace ss {
namespace {

int open_for_append(const char* path) {
  return static_cast<int>(
      syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
}

}  // namespace

bool write_all(int fd, const char* data, size_t len) noexcept {
  while (len) {
    const long r = syscall(SYS_write, fd, data, len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    data += r;
    len -= static_cast<size_t>(r);
  }
  return true;
}

int AppendFile::set(const char* path) noexcept {
  ErrnoGuard keep;
  if (!path || !*path) return -EINVAL;
  const size_t n = strlen(path);
  size_t at = 0;
  if (path[0] != '/') {
    if (!getcwd(path_, sizeof path_)) return -errno;
    at = strlen(path_);
    if (at + 1 + n >= sizeof path_) return -ENAMETOOLONG;
    path_[at++] = '/';
  } else if (n >= sizeof path_) {
    return -ENAMETOOLONG;
  }
  memcpy(path_ + at, path, n + 1);
  const int fd = open_for_append(path_);
  if (fd < 0) return -errno;
  syscall(SYS_close, fd);
  set_.store(true, std::memory_order_release);
  return 0;
}

bool AppendFile::append(const char* data, size_t len) const noexcept {
  if (!is_set()) return false;
  ErrnoGuard keep;
  const int fd = open_for_append(path_);
  if (fd < 0) return false;
  const bool whole = write_all(fd, data, len);
  syscall(SYS_close, fd);
  return whole;
}

}  // namespace ss
