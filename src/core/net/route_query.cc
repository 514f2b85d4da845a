#include "core/net/route_query.h"

#include <linux/rtnetlink.h>
#include <netinet/in.h>

#include <cerrno>

#include "core/net/netlink_socket.h"

namespace ss::net {

namespace {

// A route type that answers with an errno instead of a path (the kernel
// itself returns these as errors; a route message of such a type gets the
// same answer).
int type_errno(uint8_t type) {
  switch (type) {
    case RTN_UNREACHABLE:
      return EHOSTUNREACH;
    case RTN_PROHIBIT:
      return EACCES;
    case RTN_BLACKHOLE:
      return EINVAL;
    case RTN_THROW:
      return ENETUNREACH;
    default:
      return 0;
  }
}

RouteType route_type(uint8_t type) {
  switch (type) {
    case RTN_UNICAST:
      return RouteType::kUnicast;
    case RTN_LOCAL:
      return RouteType::kLocal;
    case RTN_BROADCAST:
      return RouteType::kBroadcast;
    case RTN_MULTICAST:
      return RouteType::kMulticast;
    default:
      return RouteType::kOther;
  }
}

uint32_t metrics_mtu(const nlattr* metrics) {
  if (!metrics) return 0;
  uint32_t mtu = 0;
  const auto* begin = static_cast<const char*>(mnl_attr_get_payload(metrics));
  for_each_attr(begin, begin + mnl_attr_get_payload_len(metrics), [&mtu](const nlattr* a) {
    if (mnl_attr_get_type(a) == RTAX_MTU) mtu = attr_u32(a, 0);
  });
  return mtu;
}

}  // namespace

int query_route(NetlinkSocket& nl, const Flow& f, Route* out) {
  if (f.dst.empty() || (!f.src.empty() && f.src.family != f.dst.family)) return -EINVAL;
  rtmsg* rtm;
  nlmsghdr* nlh = nl.start(RTM_GETROUTE, 0, &rtm);
  rtm->rtm_family = f.dst.family;
  rtm->rtm_dst_len = static_cast<unsigned char>(f.dst.size() * 8);
  mnl_attr_put(nlh, RTA_DST, f.dst.size(), f.dst.bytes);
  if (!f.src.empty()) {
    rtm->rtm_src_len = rtm->rtm_dst_len;
    mnl_attr_put(nlh, RTA_SRC, f.src.size(), f.src.bytes);
  }
  if (f.oif) mnl_attr_put_u32(nlh, RTA_OIF, static_cast<uint32_t>(f.oif));
  mnl_attr_put_u8(nlh, RTA_IP_PROTO, IPPROTO_UDP);
  if (f.sport) mnl_attr_put_u16(nlh, RTA_SPORT, htons(f.sport));
  if (f.dport) mnl_attr_put_u16(nlh, RTA_DPORT, htons(f.dport));

  bool answered = false;
  uint8_t type = RTN_UNSPEC;
  Route r;
  const int rc = nl.request(nlh, [&](const nlmsghdr* m) {
    if (m->nlmsg_type != RTM_NEWROUTE || mnl_nlmsg_get_payload_len(m) < sizeof(rtmsg)) return;
    const auto* rt = static_cast<const rtmsg*>(mnl_nlmsg_get_payload(m));
    const nlattr* tb[RTA_MAX + 1];
    netlink_attrs(m, sizeof *rt, tb, RTA_MAX);
    answered = true;
    type = rt->rtm_type;
    r.ifindex = static_cast<int>(attr_u32(tb[RTA_OIF], 0));
    if (tb[RTA_GATEWAY])
      r.gateway = IpAddr::raw(rt->rtm_family, mnl_attr_get_payload(tb[RTA_GATEWAY]),
                              mnl_attr_get_payload_len(tb[RTA_GATEWAY]));
    if (tb[RTA_PREFSRC])
      r.prefsrc = IpAddr::raw(rt->rtm_family, mnl_attr_get_payload(tb[RTA_PREFSRC]),
                              mnl_attr_get_payload_len(tb[RTA_PREFSRC]));
    r.mtu = metrics_mtu(tb[RTA_METRICS]);
  });
  if (rc) return rc;
  if (!answered) return -EPROTO;
  if (const int e = type_errno(type)) return -e;
  r.type = route_type(type);
  *out = r;
  return 0;
}

}  // namespace ss::net
