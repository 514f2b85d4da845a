// What Linux's getsockopt and setsockopt answer from a TCP connection's
// state, for a preload whose connection runs beside a kernel socket that
// is not connected (librspreload's options socket, libvma.so's twin),
// which would answer those as a socket never connected.
#pragma once
#include <sys/socket.h>

namespace ss::interpose {

// Whether getsockopt(level, name) is answered from the connection:
// SO_PEERNAME (the peer), IP_MTU, IPV6_MTU and IPV6_PATHMTU (the route to
// the peer), IPV6_ADDRFORM (the family).
bool answered_by_connection(int level, int name);

// getsockopt(level, name) of a connection to `peer` (peer_len bytes; 0:
// none yet) on a socket of family `domain`, into the program's val and
// len: true with *rc (0, or -1 and errno) when answered_by_connection.
bool connection_getsockopt(int domain, const sockaddr_storage& peer, socklen_t peer_len, int level,
                           int name, void* val, socklen_t* len, int* rc);

// Whether Linux refuses to set (level, name) once a socket connected
// (EINVAL): the fast-open options, and IPV6_V6ONLY (bound).
bool before_connection_only(int level, int name);

}  // namespace ss::interpose
