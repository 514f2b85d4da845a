// What Linux's getsockopt and setsockopt answer from a TCP connection's
// state, for a preload whose connection runs beside a kernel socket that
// is not connected (librspreload's options socket, libvma.so's twin),
// which would answer those as a socket never connected.
#pragma once
#include <sys/socket.h>

namespace ss::interpose {

// Whether getsockopt(level, name) is answered from the connection:
// SO_PEERNAME (the peer), IP_MTU, IPV6_MTU and IPV6_PATHMTU (the route to
// the peer), IPV6_ADDRFORM (its family; EOPNOTSUPP on an IPv4 socket, as
// Linux's).
bool answered_by_connection(int level, int name);

// getsockopt(level, name) of a connection to `peer` (peer_len bytes; 0:
// none yet) on a socket of family `domain`, into the program's val and
// len, when answered_by_connection: 0, or -1 and errno.
int connection_getsockopt(int domain, const sockaddr_storage& peer, socklen_t peer_len, int level,
                          int name, void* val, socklen_t* len);

// Whether Linux refuses setsockopt(level, name) once a socket connected
// (EINVAL): the fast-open options, and IPV6_V6ONLY.
bool refused_once_connected(int level, int name);

// Such a set on a connection whose kernel socket `kfd` is not connected:
// -1 and errno, the kernel socket having checked the value (its errno
// first, else EINVAL) and been put back as it was.
int refuse_on_connection(int kfd, int level, int name, const void* val, socklen_t len);

}  // namespace ss::interpose
