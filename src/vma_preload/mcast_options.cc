#include "vma_preload/mcast_options.h"

#include <cstring>

namespace ss::vma::preload {
namespace {

net::IpAddr from_storage(const sockaddr_storage& ss) {
  if (ss.ss_family == AF_INET)
    return net::IpAddr::v4(reinterpret_cast<const sockaddr_in&>(ss).sin_addr);
  if (ss.ss_family == AF_INET6)
    return net::IpAddr::v6(reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr);
  return {};
}

template <class T>
bool read(const void* val, socklen_t len, T* out) {
  if (!val || len < sizeof(T)) return false;
  std::memcpy(out, val, sizeof(T));
  return true;
}

// The source-list operation `name` is, given its family's names for the
// first three (the fourth being unblock).
McastOpKind source_kind(int name, int join, int leave, int block) {
  return name == join    ? McastOpKind::kJoinSource
         : name == leave ? McastOpKind::kLeaveSource
         : name == block ? McastOpKind::kBlock
                         : McastOpKind::kUnblock;
}

bool parse_ip(int name, const void* val, socklen_t len, McastOp* out) {
  switch (name) {
    case IP_ADD_MEMBERSHIP:
    case IP_DROP_MEMBERSHIP: {
      out->kind = name == IP_ADD_MEMBERSHIP ? McastOpKind::kJoin : McastOpKind::kLeave;
      ip_mreqn m{};  // ip_mreq is its first two fields
      if (len >= sizeof(ip_mreqn)) {
        read(val, len, &m);
      } else {
        ip_mreq r{};
        if (!read(val, len, &r)) return false;
        m.imr_multiaddr = r.imr_multiaddr;
        m.imr_address = r.imr_interface;
      }
      out->group = net::IpAddr::v4(m.imr_multiaddr);
      out->ifindex = m.imr_ifindex;
      if (m.imr_address.s_addr != INADDR_ANY) out->if_addr = net::IpAddr::v4(m.imr_address);
      return true;
    }
    case IP_ADD_SOURCE_MEMBERSHIP:
    case IP_DROP_SOURCE_MEMBERSHIP:
    case IP_BLOCK_SOURCE:
    case IP_UNBLOCK_SOURCE: {
      ip_mreq_source m{};
      if (!read(val, len, &m)) return false;
      out->kind =
          source_kind(name, IP_ADD_SOURCE_MEMBERSHIP, IP_DROP_SOURCE_MEMBERSHIP, IP_BLOCK_SOURCE);
      out->group = net::IpAddr::v4(m.imr_multiaddr);
      out->source = net::IpAddr::v4(m.imr_sourceaddr);
      if (m.imr_interface.s_addr != INADDR_ANY) out->if_addr = net::IpAddr::v4(m.imr_interface);
      return true;
    }
  }
  return false;
}

// MCAST_*: the same numbers at IPPROTO_IP and IPPROTO_IPV6.
bool parse_protocol_independent(int name, const void* val, socklen_t len, McastOp* out) {
  switch (name) {
    case MCAST_JOIN_GROUP:
    case MCAST_LEAVE_GROUP: {
      group_req g{};
      if (!read(val, len, &g)) return false;
      out->kind = name == MCAST_JOIN_GROUP ? McastOpKind::kJoin : McastOpKind::kLeave;
      out->group = from_storage(g.gr_group);
      out->ifindex = static_cast<int>(g.gr_interface);
      return true;
    }
    case MCAST_JOIN_SOURCE_GROUP:
    case MCAST_LEAVE_SOURCE_GROUP:
    case MCAST_BLOCK_SOURCE:
    case MCAST_UNBLOCK_SOURCE: {
      group_source_req g{};
      if (!read(val, len, &g)) return false;
      out->kind =
          source_kind(name, MCAST_JOIN_SOURCE_GROUP, MCAST_LEAVE_SOURCE_GROUP, MCAST_BLOCK_SOURCE);
      out->group = from_storage(g.gsr_group);
      out->source = from_storage(g.gsr_source);
      out->ifindex = static_cast<int>(g.gsr_interface);
      return true;
    }
  }
  return false;
}

}  // namespace

bool parse_mcast_op(int level, int name, const void* val, socklen_t len, McastOp* out) {
  *out = McastOp{};
  if (level != IPPROTO_IP && level != IPPROTO_IPV6) return false;
  if (parse_protocol_independent(name, val, len, out)) return !out->group.empty();
  if (level == IPPROTO_IP) return parse_ip(name, val, len, out);
  if (name != IPV6_ADD_MEMBERSHIP && name != IPV6_DROP_MEMBERSHIP) return false;
  ipv6_mreq m{};
  if (!read(val, len, &m)) return false;
  out->kind = name == IPV6_ADD_MEMBERSHIP ? McastOpKind::kJoin : McastOpKind::kLeave;
  out->group = net::IpAddr::v6(m.ipv6mr_multiaddr);
  out->ifindex = static_cast<int>(m.ipv6mr_interface);
  return true;
}

}  // namespace ss::vma::preload
