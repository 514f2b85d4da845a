// One route lookup by rtnetlink RTM_GETROUTE with the flow's keys, as
// `ip route get DST from SRC ipproto udp sport S dport D` does: policy
// rules on source, protocol and ports apply, and a failed lookup gives the
// kernel's own errno (libnl's rtnl_route_lookup takes the destination only
// and loses the errno).
#pragma once
#include <compare>
#include <cstdint>

#include "core/net/netlink_addr.h"

namespace ss::net {

class NetlinkSocket;

// What is sent: UDP from `src` (empty: not bound) to `dst`; ports in host
// order, 0 when not known; `oif` an interface the socket is bound to, or 0.
struct Flow {
  IpAddr dst;
  IpAddr src;
  uint16_t sport = 0;
  uint16_t dport = 0;
  int oif = 0;
  friend auto operator<=>(const Flow&, const Flow&) = default;
};

enum class RouteType : uint8_t {
  kUnicast,    // out of `ifindex`: ours to send (offloadable)
  kLocal,      // this host: the kernel socket must carry it
  kBroadcast,  // broadcast address
  kMulticast,  // multicast destination
  kOther,      // anything else the kernel answered (anycast, nat...)
};

struct Route {
  RouteType type = RouteType::kOther;
  int ifindex = 0;
  IpAddr gateway;    // empty: the destination is on-link
  IpAddr prefsrc;    // the source address the kernel would pick
  uint32_t mtu = 0;  // the route's MTU (metric or learned), else its link's
  // Whose MAC the frame goes to.
  const IpAddr& next_hop(const Flow& f) const { return gateway.empty() ? f.dst : gateway; }
};

// 0 and *out, or -errno as the kernel gives it: ENETUNREACH (no route),
// EHOSTUNREACH (unreachable), EACCES (prohibit), EINVAL (blackhole, or a
// source that is not local). out->mtu is the route's own (0: none).
int query_route(NetlinkSocket& nl, const Flow& f, Route* out);

}  // namespace ss::net
