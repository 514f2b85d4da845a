// sendfile(2) to a socket a preload serves itself (an rsocket, a TCP
// connection on the rings): the file's bytes read and sent in pieces by
// the preload's own send. The file position (or *offset, leaving the
// position alone) moves by what was sent, as sendfile(2) says.
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <functional>

namespace ss::interpose {

// What Linux refuses as the source before a byte moves: a socket (a
// connection's kernel socket above all, which must never be read here),
// a pipe or a directory: -1 with ESPIPE (an offset on one that cannot
// seek) or EINVAL; 0 when in_fd may be read.
int sendfile_refuse_source(int in_fd, const off_t* offset);

// send(buf, n): bytes sent (fewer: the socket took no more now) or -1
// with errno. Returns what sendfile(2) returns. Its waits are no
// cancellation points (core/base/cancel.h), as sendfile(2)'s.
ssize_t sendfile_copy(int in_fd, off_t* offset, size_t count,
                      const std::function<ssize_t(const void*, size_t)>& send);

}  // namespace ss::interpose
