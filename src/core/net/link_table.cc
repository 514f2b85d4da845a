#include "core/net/link_table.h"

#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <net/if.h>

#include <cstring>

#include "core/net/netlink_socket.h"

namespace ss::net {

bool Link::up() const { return flags & IFF_UP; }

bool LinkTable::apply(const nlmsghdr* nlh) {
  switch (nlh->nlmsg_type) {
    case RTM_NEWLINK:
    case RTM_DELLINK:
      apply_link(nlh);
      return true;
    case RTM_NEWADDR:
    case RTM_DELADDR:
      apply_addr(nlh);
      return true;
    default:
      return false;
  }
}

void LinkTable::apply_link(const nlmsghdr* nlh) {
  if (mnl_nlmsg_get_payload_len(nlh) < sizeof(ifinfomsg)) return;
  const auto* ifi = static_cast<const ifinfomsg*>(mnl_nlmsg_get_payload(nlh));
  if (nlh->nlmsg_type == RTM_DELLINK) {
    links_.erase(ifi->ifi_index);
    return;
  }
  const nlattr* tb[IFLA_MAX + 1];
  netlink_attrs(nlh, sizeof *ifi, tb, IFLA_MAX);
  Link l;
  l.ifindex = ifi->ifi_index;
  l.flags = ifi->ifi_flags;
  l.name = attr_str(tb[IFLA_IFNAME]);
  if (tb[IFLA_ADDRESS] && mnl_attr_get_payload_len(tb[IFLA_ADDRESS]) == sizeof l.mac) {
    std::memcpy(l.mac, mnl_attr_get_payload(tb[IFLA_ADDRESS]), sizeof l.mac);
    l.has_mac = true;
  }
  l.mtu = attr_u32(tb[IFLA_MTU], 0);
  links_[l.ifindex] = l;
}

void LinkTable::apply_addr(const nlmsghdr* nlh) {
  if (mnl_nlmsg_get_payload_len(nlh) < sizeof(ifaddrmsg)) return;
  const auto* ifa = static_cast<const ifaddrmsg*>(mnl_nlmsg_get_payload(nlh));
  const nlattr* tb[IFA_MAX + 1];
  netlink_attrs(nlh, sizeof *ifa, tb, IFA_MAX);
  // IFA_LOCAL is the host's own address (IFA_ADDRESS the peer's on a
  // point-to-point link); IPv6 gives IFA_ADDRESS only.
  const nlattr* a = tb[IFA_LOCAL] ? tb[IFA_LOCAL] : tb[IFA_ADDRESS];
  if (!a) return;
  const IpAddr ip =
      IpAddr::raw(ifa->ifa_family, mnl_attr_get_payload(a), mnl_attr_get_payload_len(a));
  if (ip.empty()) return;
  const auto key = std::make_pair(ip, static_cast<int>(ifa->ifa_index));
  if (nlh->nlmsg_type == RTM_NEWADDR)
    addrs_.insert(key);
  else
    addrs_.erase(key);
}

const Link* LinkTable::find(int ifindex) const {
  auto it = links_.find(ifindex);
  return it == links_.end() ? nullptr : &it->second;
}

bool LinkTable::is_local(const IpAddr& a) const {
  auto it = addrs_.lower_bound({a, 0});
  return it != addrs_.end() && it->first == a;
}

std::vector<IpAddr> LinkTable::addresses() const {
  std::vector<IpAddr> out;
  for (const auto& [ip, ifindex] : addrs_)
    if (out.empty() || !(out.back() == ip)) out.push_back(ip);
  return out;
}

}  // namespace ss::net
