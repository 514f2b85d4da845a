// What a receive on a kernel socket would do: block or not, and for how long.
#pragma once
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "interpose/real.h"

namespace ss::vma::preload {

// Whether a receive with `flags` on fd returns at once when nothing waits.
inline bool nonblocking(int fd, int flags) {
  if (flags & MSG_DONTWAIT) return true;
  const int fl = interpose::real().fcntl(fd, F_GETFL);
  return fl >= 0 && (fl & O_NONBLOCK);
}

// SO_RCVTIMEO (or `option` SO_SNDTIMEO) in milliseconds (-1: none).
inline int rcv_timeout_ms(int fd, int option = SO_RCVTIMEO) {
  timeval tv{};
  socklen_t len = sizeof tv;
  if (interpose::real().getsockopt(fd, SOL_SOCKET, option, &tv, &len) < 0) return -1;
  if (tv.tv_sec == 0 && tv.tv_usec == 0) return -1;
  return static_cast<int>(tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000);
}

}  // namespace ss::vma::preload
