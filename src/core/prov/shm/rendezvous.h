// How shm peers find each other: a listening rsocket also listens on an
// abstract unix socket named after its address (the rendezvous); a
// connecting side dials it, and each side checks who is at the other end
// before any memory is shared.
#pragma once
#include <sys/socket.h>
#include <sys/un.h>

namespace ss::prov::shm {

// Abstract unix-socket name of the shm rendezvous for a listening address.
int rendezvous_name(const sockaddr* addr, socklen_t len, sockaddr_un* out, socklen_t* out_len);

// Whether the process at the other end of the unix socket `ufd` may share
// our memory: our own user, or root. A root listener also serves other
// users (what it shares is that connection's own). A connecting side never
// trusts another user's rendezvous: abstract names belong to whoever binds
// them first, so another user could stand in for a listener on any port.
bool peer_trusted(int ufd, bool listening);

// Connects a non-blocking unix socket (*out) to the rendezvous of `dst`:
// the exact address, then the wildcard of its family, then a dual-stack
// listener on its port (an AF_INET6 wildcard without IPV6_V6ONLY, which
// IPv4 peers reach too, as the kernel's does).
int dial_rendezvous(const sockaddr* dst, socklen_t len, int* out);

// The listening rendezvous of the rsocket whose kernel socket `sock` is
// bound (*out: a non-blocking unix socket, the caller's to close), with
// rlisten's backlog, as the kernel socket (a fixed one refused connects
// that a tcp listener of the same backlog queues).
int open_rendezvous(int sock, int backlog, int* out);

}  // namespace ss::prov::shm
