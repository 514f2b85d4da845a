#include "core/net/udp_route.h"

#include <cstring>

#include "core/net/multicast.h"

namespace ss::net {

int NetlinkTxResolver::resolve(const Flow& f, TxPath* out, ToKernel* why) {
  auto kernel = [why](ToKernel w) {
    *why = w;
    return 1;
  };
  Route r;
  if (int err = view_->route(f, &r)) return err;
  if (r.type == RouteType::kLocal) return kernel(ToKernel::kLocal);
  const bool group = is_multicast(f.dst);
  if (r.type != RouteType::kUnicast && !(group && r.type == RouteType::kMulticast))
    return kernel(ToKernel::kNotUnicast);
  Link link;
  if (r.ifindex != ifindex_ || !view_->link(r.ifindex, &link) || !link.has_mac)
    return kernel(ToKernel::kOtherDevice);
  out->mtu = r.mtu ? r.mtu : link.mtu;
  if (mtu_cap_ && mtu_cap_ < out->mtu) out->mtu = mtu_cap_;
  memcpy(out->src_mac, link.mac, 6);
  out->src = f.src.empty() ? r.prefsrc : f.src;
  // No source the kernel would pick: let it say what is wrong.
  if (out->src.family != f.dst.family) return kernel(ToKernel::kNotUnicast);
  // A group needs no neighbour: its frames go to its own Ethernet address.
  if (group) return multicast_mac(f.dst, out->dst_mac) ? 0 : kernel(ToKernel::kNotUnicast);
  Neighbour n;
  // Not even asked (netlink failed): the kernel socket resolves it.
  if (view_->neighbour(r.ifindex, r.next_hop(f), &n) < 0)
    return kernel(ToKernel::kNeighbourPending);
  if (n.state == NeighState::kPending) return kernel(ToKernel::kNeighbourPending);
  if (n.state == NeighState::kFailed) return kernel(ToKernel::kNeighbourFailed);
  memcpy(out->dst_mac, n.mac, 6);
  return 0;
}

uint64_t NetlinkTxResolver::generation() const { return view_->route_generation(); }

std::unique_ptr<TxResolver> make_netlink_resolver(NetlinkView* view, int ifindex,
                                                  uint32_t mtu_cap) {
  return std::make_unique<NetlinkTxResolver>(view, ifindex, mtu_cap);
}

}  // namespace ss::net
