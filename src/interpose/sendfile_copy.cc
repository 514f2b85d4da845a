#include "interpose/sendfile_copy.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "core/base/cancel.h"
#include "interpose/program_memory.h"
#include "interpose/real.h"

namespace ss::interpose {

int sendfile_refuse_source(int in_fd, const off_t* offset) {
  struct stat st {};
  if (fstat(in_fd, &st)) return -1;
  if (!S_ISSOCK(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISDIR(st.st_mode)) return 0;
  errno = offset && lseek(in_fd, 0, SEEK_CUR) < 0 ? ESPIPE : EINVAL;
  return -1;
}

ssize_t sendfile_copy(int in_fd, off_t* offset, size_t count,
                      const std::function<ssize_t(const void*, size_t)>& send) {
  if (sendfile_refuse_source(in_fd, offset)) return -1;
  const NoCancelScope no_cancel(/*sleeps=*/false);  // sendfile(2) is no cancellation point
  char buf[64 * 1024];
  size_t total = 0;
  while (total < count) {
    const size_t want = std::min(sizeof buf, count - total);
    const ssize_t n = offset ? pread(in_fd, buf, want, *offset) : real().read(in_fd, buf, want);
    if (n <= 0) {
      if (n < 0 && !total) return -1;
      break;
    }
    ssize_t w;
    {
      const OwnMemoryScope own;  // buf and the message around it are ours
      w = send(buf, static_cast<size_t>(n));
    }
    const ssize_t sent = w < 0 ? 0 : w;
    if (offset)
      *offset += sent;
    else if (sent < n)
      lseek(in_fd, sent - n, SEEK_CUR);  // unsent bytes stay unread
    total += static_cast<size_t>(sent);
    if (w < 0 && !total) return -1;
    if (sent < n) break;
  }
  return static_cast<ssize_t>(total);
}

}  // namespace ss::interpose
