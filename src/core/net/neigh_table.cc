#include "core/net/neigh_table.h"

#include <linux/rtnetlink.h>

#include <cstring>

#include "core/net/netlink_socket.h"

namespace ss::net {

Neighbour NeighEntry::answer() const {
  Neighbour n;
  n.nud = nud;
  constexpr uint16_t kUsable =
      NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT | NUD_NOARP;
  if (has_mac && (nud & kUsable)) {
    n.state = NeighState::kReady;
    std::memcpy(n.mac, mac, sizeof n.mac);
  } else {
    n.state = (nud & NUD_FAILED) ? NeighState::kFailed : NeighState::kPending;
  }
  return n;
}

bool parse_neigh(const nlmsghdr* nlh, NeighKey* key, NeighEntry* entry) {
  if (mnl_nlmsg_get_payload_len(nlh) < sizeof(ndmsg)) return false;
  const auto* nd = static_cast<const ndmsg*>(mnl_nlmsg_get_payload(nlh));
  if ((nd->ndm_family != AF_INET && nd->ndm_family != AF_INET6) || (nd->ndm_flags & NTF_PROXY))
    return false;
  const nlattr* tb[NDA_MAX + 1];
  netlink_attrs(nlh, sizeof *nd, tb, NDA_MAX);
  if (!tb[NDA_DST]) return false;
  const IpAddr dst = IpAddr::raw(nd->ndm_family, mnl_attr_get_payload(tb[NDA_DST]),
                                 mnl_attr_get_payload_len(tb[NDA_DST]));
  if (dst.empty()) return false;
  *key = {nd->ndm_ifindex, dst};
  *entry = {};
  entry->nud = nd->ndm_state;
  if (tb[NDA_LLADDR] && mnl_attr_get_payload_len(tb[NDA_LLADDR]) == sizeof entry->mac) {
    std::memcpy(entry->mac, mnl_attr_get_payload(tb[NDA_LLADDR]), sizeof entry->mac);
    entry->has_mac = true;
  }
  return true;
}

bool NeighTable::apply(const nlmsghdr* nlh) {
  if (nlh->nlmsg_type != RTM_NEWNEIGH && nlh->nlmsg_type != RTM_DELNEIGH) return false;
  NeighKey k;
  NeighEntry e;
  if (!parse_neigh(nlh, &k, &e)) return true;
  changes_++;
  if (nlh->nlmsg_type == RTM_DELNEIGH)
    map_.erase(k);
  else
    map_[k] = e;
  return true;
}

}  // namespace ss::net
