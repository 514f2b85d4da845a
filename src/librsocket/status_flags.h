// The file status flags of an rsocket (stream or datagram): only
// O_NONBLOCK is kept, reported with O_RDWR as a socket's are.
#pragma once
#include <fcntl.h>

#include <cerrno>

namespace ss::rs {

// F_GETFL or F_SETFL on a socket whose O_NONBLOCK is `*nonblock` (a bool
// or an atomic one): the call's result, or -ENOTSUP for another command.
template <class Flag>
int status_flags_fcntl(int cmd, long arg, Flag* nonblock) {
  if (cmd == F_GETFL) return O_RDWR | (static_cast<bool>(*nonblock) ? O_NONBLOCK : 0);
  if (cmd != F_SETFL) return -ENOTSUP;
  *nonblock = (arg & O_NONBLOCK) != 0;
  return 0;
}

}  // namespace ss::rs
