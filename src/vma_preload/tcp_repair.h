// A connection of the rings carried on by the kernel: its state put into
// the program's kernel socket with Linux's TCP_REPAIR (CAP_NET_ADMIN), so
// every process that shares the socket's file (a fork child) has the
// connection, as from a kernel socket shared by fork. The peer sees a
// window probe and nothing else. The peer's FIN, and its ACK of ours,
// reach the kernel as segments on loopback (CAP_NET_RAW); the peer then
// sees a duplicate ACK of its FIN (none in TIME-WAIT, whose socket
// closes at once), and ours again after a retransmission timeout if it
// was not acknowledged.
#pragma once
#include "core/net/tcp/handover.h"
#include "core/net/tcp/isn.h"

namespace ss::vma::preload {

// fd: the connection's TCP socket of `family`, not connected, bound to
// t's local address and port or not bound. 0 once the kernel carries the
// connection; else -errno (-EPERM: no CAP_NET_ADMIN, or no CAP_NET_RAW
// past a FIN): a failure before the connect leaves the socket as it was,
// one after it leaves the socket connected in repair mode with no queue:
// silent and of no use (sends EINVAL, receives EPERM, its close sends
// nothing).
int repair_into_kernel(int fd, int family, const net::tcp::FourTuple& t,
                       const net::tcp::Handover& h);

}  // namespace ss::vma::preload
