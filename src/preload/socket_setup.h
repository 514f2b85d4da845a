// What a new TCP socket of librspreload gets (sockets.cc): its watch
// (Entry kFresh), and, once it becomes an rsocket, the settings and the
// options the program gave its kernel socket. listen_calls.cc uses them
// for listeners and the connections they accept.
#pragma once
#include <sys/socket.h>

#include "preload/route.h"

namespace ss::preload {

// TCP socket `fd` is watched from now on (Entry kFresh).
void track_fresh(int fd, int domain);
// RS_SQ_SIZE, RS_RQ_SIZE, RS_INLINE (settings of the "preload"
// component) on a new rsocket, as upstream's preload applies them, and
// the buffer sizes, timeouts and options the program gave the socket `e`
// before it was one.
void apply_sizes(int fd, const Entry& e);
// SO_RCVTIMEO/SO_SNDTIMEO of kernel socket `from` onto rsocket `to`: the
// program set them on its descriptor before it was an rsocket, or on a
// listener whose accepted connections take them, as the kernel's do.
void carry_timeouts(int from, int to);
// The TCP port of an AF_INET/AF_INET6 address (0 when it is neither).
unsigned port_of(const sockaddr* addr, socklen_t len);

}  // namespace ss::preload
