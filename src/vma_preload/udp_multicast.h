// Multicast on an offloaded UDP socket (docs/architecture.md, "Multicast
// in the VMA preload"). The kernel socket does every join first (IGMP /
// MLD, the netdev's filters, the kernel's own checks and errno); what it
// accepted is kept here per socket and mirrored onto the endpoint of the
// netdev the membership is on, so that the group's frames to the port are
// steered to the rings and demultiplexed to every member. The send
// options (TTL, TOS, IP_MULTICAST_TTL/LOOP/IF and their IPv6 forms) are
// copied onto each endpoint likewise. A socket offloaded later (at bind)
// gets what was set before. A membership on a netdev without rings, or an
// option the rings cannot mirror, stays the kernel's.
#pragma once
#include <sys/socket.h>

#include <mutex>
#include <vector>

#include "core/net/multicast.h"
#include "core/net/netlink_addr.h"

namespace ss::vma::preload {

struct SocketRecord;
class UdpOffload;

struct McastMembership {
  net::IpAddr group;
  int ifindex = 0;
  net::McastFilter filter;
};

// A recorded UDP socket's memberships and the send options getsockopt
// cannot give back exactly; under mu.
struct McastState {
  std::mutex mu;
  std::vector<McastMembership> joins;
  int mc_ifindex = 0;  // IP_MULTICAST_IF / IPV6_MULTICAST_IF (0: the route's)
  net::IpAddr mc_src;  // IP_MULTICAST_IF's address, when it named one
  int v6_mc_hops = 1;  // IPV6_MULTICAST_HOPS (getsockopt answers 64 while unset)
};

// setsockopt at IPPROTO_IP / IPPROTO_IPV6 on a recorded socket: the
// kernel's call, then, if it succeeded, the state and the rings updated.
// The kernel's result and errno.
int ip_setsockopt(SocketRecord& s, int level, int name, const void* val, socklen_t len);

// At the offload's creation, s.mcast.mu held: the memberships and send
// options set so far onto its endpoints.
void mcast_attach_locked(SocketRecord& s, UdpOffload& o);

}  // namespace ss::vma::preload
