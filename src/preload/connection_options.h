// An rsocket connection's socket options as the kernel answers them on a
// TCP connection (getsockopt/setsockopt of a descriptor routed to an
// rsocket): the value, the return and the errno.
#pragma once
#include <sys/socket.h>

namespace ss::preload {

// getsockopt and setsockopt on rsocket `fd`: 0, or -1 and errno. Called
// inside the library's own calls (OwnCalls).
int connection_getsockopt(int fd, int level, int name, void* val, socklen_t* len);
int connection_setsockopt(int fd, int level, int name, const void* val, socklen_t len);

}  // namespace ss::preload
