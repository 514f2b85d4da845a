#include "core/base/proc_stat.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ss {

bool read_proc_stat(pid_t pid, ProcStat* out) {
  if (pid <= 0) return false;
  char path[40], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  const int fd = static_cast<int>(::syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC));
  if (fd < 0) return false;
  const auto n = static_cast<ssize_t>(::syscall(SYS_read, fd, buf, sizeof buf - 1));
  ::syscall(SYS_close, fd);
  if (n <= 0) return false;
  buf[n] = 0;
  // "pid (comm) S ppid ...": the name may hold any byte but NUL, so the
  // fields from the third follow the last ')'.
  const char* p = strrchr(buf, ')');
  if (!p || p[1] != ' ' || !p[2]) return false;
  p += 2;
  out->state = *p;
  for (int field = 3; field < 22; field++) {
    p = strchr(p, ' ');
    if (!p) return false;
    p++;
    if (field + 1 == 4) out->ppid = static_cast<pid_t>(atoi(p));
    if (field + 1 == 9) out->flags = static_cast<unsigned>(strtoul(p, nullptr, 10));
  }
  out->start_ticks = strtoull(p, nullptr, 10);
  return true;
}

}  // namespace ss
