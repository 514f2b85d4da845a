// The socket options that change a UDP socket's multicast memberships
// (RFC 3678's IPv4 and protocol-independent forms, RFC 3493's IPv6 ones),
// read out of setsockopt's bytes into one shape. Pure: the interface named
// by an address is left for the caller to turn into an index.
#pragma once
#include <netinet/in.h>
#include <sys/socket.h>

#include "core/net/netlink_addr.h"

namespace ss::vma::preload {

enum class McastOpKind : uint8_t {
  kJoin,         // any-source join
  kLeave,        // leave the group (every source)
  kJoinSource,   // source-specific join: include `source`
  kLeaveSource,  // stop including `source` (the last one leaves)
  kBlock,        // any-source member: exclude `source`
  kUnblock,      // stop excluding `source`
};

struct McastOp {
  McastOpKind kind = McastOpKind::kJoin;
  net::IpAddr group, source;
  int ifindex = 0;      // 0: see if_addr, else the route's
  net::IpAddr if_addr;  // the interface named by one of its addresses (IPv4 forms)
};

// True and *out when (level, name) is a membership option and len holds
// its structure; false for any other option (or a short one: the kernel
// refused it already).
bool parse_mcast_op(int level, int name, const void* val, socklen_t len, McastOp* out);

}  // namespace ss::vma::preload
