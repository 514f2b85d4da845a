// Which traffic an RDMA device carries: the source address the kernel would
// use to reach an address, and whether rdma_cm finds a device for it (the
// device a listener bound to that address would get). This is how `auto`
// decides for verbs without starting an rdma_cm resolution.
#pragma once
#include <sys/socket.h>

namespace ss::res {

// True when traffic to `dst` leaves through an interface that an RDMA
// device serves (for an address of this host: the interface owning it).
bool rdma_serves(const sockaddr* dst, socklen_t len);

}  // namespace ss::res
