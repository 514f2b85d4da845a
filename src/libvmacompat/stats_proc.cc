#include "libvmacompat/stats_proc.h"

#include "libvmacompat/stats_layout.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ss::vma::stats {

uint64_t process_start_ticks(int pid) {
  if (pid <= 0) return 0;
  char path[32];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[1024];
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  // The name (field 2) is in parentheses and may hold any byte but NUL:
  // fields 3 onwards follow the last ')'.
  const char* p = strrchr(buf, ')');
  if (!p) return 0;
  ++p;
  for (int field = 3; field < 22; ++field) {
    p = strchr(p + 1, ' ');
    if (!p) return 0;
  }
  return strtoull(p + 1, nullptr, 10);
}

Liveness liveness(int pid, uint64_t start_ticks) {
  const uint64_t now = process_start_ticks(pid);
  if (now == 0) return Liveness::kGone;
  return now == start_ticks ? Liveness::kLive : Liveness::kReused;
}

std::string stats_path(const std::string& dir, int pid) {
  return dir + (!dir.empty() && dir.back() == '/' ? "" : "/") + kFilePrefix + std::to_string(pid);
}

}  // namespace ss::vma::stats
