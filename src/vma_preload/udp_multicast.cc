#include "vma_preload/udp_multicast.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>

#include "core/base/log.h"
#include "interpose/real.h"
#include "interpose/edge.h"
#include "vma_preload/socket_record.h"
#include "vma_preload/mcast_options.h"
#include "vma_preload/netdev_rings.h"

namespace ss::vma::preload {
namespace {

using interpose::real;

// The interface holding IPv4 address a (0: none), as the kernel finds
// the interface of ip_mreq's imr_interface.
int ifindex_of(const net::IpAddr& a) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) < 0) return 0;
  int found = 0;
  for (const ifaddrs* i = list; i && !found; i = i->ifa_next)
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
        net::IpAddr::v4(reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr) == a)
      found = static_cast<int>(if_nametoindex(i->ifa_name));
  freeifaddrs(list);
  return found;
}

// The interface a membership is on: named, by its address, else the
// route to the group (as the kernel picks it for an unnamed one).
int interface_of(const McastOp& op) {
  if (op.ifindex) return op.ifindex;
  if (!op.if_addr.empty()) return ifindex_of(op.if_addr);
  return route_ifindex(op.group);
}

void add_source(std::vector<net::IpAddr>* v, const net::IpAddr& a) {
  if (std::find(v->begin(), v->end(), a) == v->end()) v->push_back(a);
}

// op applied to the socket's list. The membership as it is now, or null
// when it is gone (left, or its last included source dropped).
const McastMembership* apply(std::vector<McastMembership>* joins, const McastOp& op, int ifindex) {
  auto it = std::find_if(joins->begin(), joins->end(), [&](const McastMembership& m) {
    return m.group == op.group && m.ifindex == ifindex;
  });
  const bool have = it != joins->end();
  switch (op.kind) {
    case McastOpKind::kJoin:
      if (have) return &*it;
      joins->push_back({op.group, ifindex, {}});
      return &joins->back();
    case McastOpKind::kJoinSource:
      if (!have) {
        joins->push_back({op.group, ifindex, {true, {op.source}}});
        return &joins->back();
      }
      if (it->filter.include) add_source(&it->filter.sources, op.source);
      return &*it;
    case McastOpKind::kBlock:
      if (have && !it->filter.include) add_source(&it->filter.sources, op.source);
      break;
    case McastOpKind::kUnblock:
    case McastOpKind::kLeaveSource:
      if (have) std::erase(it->filter.sources, op.source);
      if (!have || op.kind == McastOpKind::kUnblock || !it->filter.sources.empty()) break;
      [[fallthrough]];  // the last included source: the membership goes
    case McastOpKind::kLeave:
      if (have) joins->erase(it);
      return nullptr;
  }
  return have ? &*it : nullptr;
}

// The membership onto the endpoint of its netdev (gone: left there).
void mirror(int fd, UdpOffload& o, const net::IpAddr& group, int ifindex,
            const McastMembership* now) {
  bool served = false;
  o.for_each_leg([&](int leg_ifindex, net::UdpEndpoint& ep) {
    if (leg_ifindex != ifindex) return;
    served = true;
    const int err = now ? ep.join(group, now->filter) : ep.leave(group);
    if (err && now)
      SS_DEBUG("fd %d: group %s stays with the kernel (%s)", fd, group.str().c_str(),
               std::strerror(-err));
  });
  if (!served && now)
    SS_DEBUG("fd %d: group %s on ifindex %d: the kernel carries it (no rings there)", fd,
             group.str().c_str(), ifindex);
}

int get_int(int fd, int level, int name, int fallback) {
  int v = 0;
  socklen_t len = sizeof v;
  return real().getsockopt(fd, level, name, &v, &len) == 0 ? v : fallback;
}

// The send options, as the kernel socket has them, onto every endpoint.
void sync_send_locked(SocketRecord& s, UdpOffload& o) {
  const bool v4 = s.family == AF_INET;
  const int ttl = v4 ? get_int(s.fd, IPPROTO_IP, IP_TTL, 64)
                     : get_int(s.fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, 64);
  const int tos =
      v4 ? get_int(s.fd, IPPROTO_IP, IP_TOS, 0) : get_int(s.fd, IPPROTO_IPV6, IPV6_TCLASS, 0);
  const int mc_ttl = v4 ? get_int(s.fd, IPPROTO_IP, IP_MULTICAST_TTL, 1) : s.mcast.v6_mc_hops;
  const bool loop = v4 ? get_int(s.fd, IPPROTO_IP, IP_MULTICAST_LOOP, 1)
                       : get_int(s.fd, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, 1);
  net::UdpTxOptions opt;
  opt.ttl = static_cast<uint8_t>(ttl);
  opt.tos = static_cast<uint8_t>(tos);
  opt.mc_ttl = static_cast<uint8_t>(mc_ttl);
  opt.mc_loop = loop;
  opt.mc_ifindex = s.mcast.mc_ifindex;
  opt.mc_src = s.mcast.mc_src;
  o.for_each_leg([&](int, net::UdpEndpoint& ep) { ep.set_tx_options(opt); });
  s.stats.set_flags(/*offloaded=*/true, s.created_blocking, loop);
}

// What IP_MULTICAST_IF / IPV6_MULTICAST_IF / IPV6_MULTICAST_HOPS set
// (the kernel accepted it): kept, since getsockopt cannot say it exactly.
void track_send_option(McastState* st, int level, int name, const void* val, socklen_t len) {
  if (level == IPPROTO_IP && name == IP_MULTICAST_IF) {
    ip_mreqn m{};  // in_addr, ip_mreq or ip_mreqn: the address comes first but in ip_mreq
    if (len >= sizeof(ip_mreqn)) {
      std::memcpy(&m, val, sizeof m);
    } else if (len >= sizeof(ip_mreq)) {
      std::memcpy(&m.imr_address, static_cast<const char*>(val) + sizeof(in_addr), sizeof(in_addr));
    } else if (len >= sizeof(in_addr)) {
      std::memcpy(&m.imr_address, val, sizeof(in_addr));
    }
    st->mc_src = m.imr_address.s_addr ? net::IpAddr::v4(m.imr_address) : net::IpAddr{};
    st->mc_ifindex = m.imr_ifindex        ? m.imr_ifindex
                     : st->mc_src.empty() ? 0
                                          : ifindex_of(st->mc_src);
  } else if (level == IPPROTO_IPV6 && name == IPV6_MULTICAST_IF && len >= sizeof(int)) {
    std::memcpy(&st->mc_ifindex, val, sizeof(int));
    st->mc_src = {};
  } else if (level == IPPROTO_IPV6 && name == IPV6_MULTICAST_HOPS && len >= sizeof(int)) {
    int hops;
    std::memcpy(&hops, val, sizeof hops);
    st->v6_mc_hops = hops < 0 ? 1 : hops;  // -1: the default, 1
  }
}

bool is_send_option(int level, int name) {
  if (level == IPPROTO_IP)
    return name == IP_TTL || name == IP_TOS || name == IP_MULTICAST_TTL ||
           name == IP_MULTICAST_LOOP || name == IP_MULTICAST_IF;
  return level == IPPROTO_IPV6 &&
         (name == IPV6_UNICAST_HOPS || name == IPV6_TCLASS || name == IPV6_MULTICAST_HOPS ||
          name == IPV6_MULTICAST_LOOP || name == IPV6_MULTICAST_IF);
}

void after_kernel(SocketRecord& s, int level, int name, const void* val, socklen_t len) {
  if (in_fork_child()) return;  // the kernel's socket for good: nothing to mirror
  interpose::BusyScope busy;    // the socket's multicast lock, the stack's
  // A whole source list at once: not mirrored, so the kernel serves the socket.
  if ((level == IPPROTO_IP && name == IP_MSFILTER) || name == MCAST_MSFILTER) {
    s.hand_back("source filter lists not offloaded");
    return;
  }
  McastOp op;
  const bool membership = parse_mcast_op(level, name, val, len, &op);
  if (!membership && !is_send_option(level, name)) return;
  std::lock_guard<std::mutex> lock(s.mcast.mu);
  UdpOffload* o = s.offload();
  if (membership) {
    const int ifindex = interface_of(op);
    const McastMembership* now = apply(&s.mcast.joins, op, ifindex);
    if (o) mirror(s.fd, *o, op.group, ifindex, now);
    return;
  }
  track_send_option(&s.mcast, level, name, val, len);
  if (o) sync_send_locked(s, *o);
}

}  // namespace

int ip_setsockopt(SocketRecord& s, int level, int name, const void* val, socklen_t len) {
  const int r = real().setsockopt(s.fd, level, name, val, len);
  if (r == 0 && s.protocol == IPPROTO_UDP && val)
    interpose::edge_quiet("setsockopt", s.fd, [&] { after_kernel(s, level, name, val, len); });
  return r;
}

void mcast_attach_locked(SocketRecord& s, UdpOffload& o) {
  for (const McastMembership& m : s.mcast.joins) mirror(s.fd, o, m.group, m.ifindex, &m);
  sync_send_locked(s, o);
}

}  // namespace ss::vma::preload
