// The host's links (ifindex -> name, MAC, MTU, flags) and local addresses,
// as rtnetlink describes them: filled by a dump, kept by RTM_NEWLINK,
// RTM_DELLINK, RTM_NEWADDR and RTM_DELADDR messages. Not locked: its owner
// (NetlinkView) serialises access.
#pragma once
#include <linux/netlink.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/net/netlink_addr.h"

namespace ss::net {

struct Link {
  int ifindex = 0;
  std::string name;
  uint8_t mac[6] = {};
  bool has_mac = false;  // a 6-byte hardware address (Ethernet-like)
  uint32_t mtu = 0;
  unsigned flags = 0;  // IFF_*
  bool up() const;     // administratively up (IFF_UP)
};

class LinkTable {
 public:
  // Applies a link or address message: true when it was one.
  bool apply(const nlmsghdr* nlh);
  const Link* find(int ifindex) const;
  bool is_local(const IpAddr& a) const;
  std::vector<IpAddr> addresses() const;

 private:
  void apply_link(const nlmsghdr* nlh);
  void apply_addr(const nlmsghdr* nlh);
  std::map<int, Link> links_;
  std::set<std::pair<IpAddr, int>> addrs_;  // address, its ifindex
};

}  // namespace ss::net
