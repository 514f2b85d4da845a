// Multicast facts the UDP layer needs: which addresses are groups, the
// Ethernet address a group's frames go to (RFC 1112 §6.4: 01:00:5e and
// the group's low 23 bits; RFC 2464 §7: 33:33 and its low 32 bits), and a
// membership's source filter (RFC 3376's model, as RFC 3678's socket
// options set it: include only the listed sources, or exclude them).
#pragma once
#include <cstdint>
#include <vector>

#include "core/base/api.h"
#include "core/net/netlink_addr.h"

namespace ss::net {

// 224.0.0.0/4 or ff00::/8.
SS_API bool is_multicast(const IpAddr& a);
// The group's Ethernet address into mac; false when `group` is not one.
bool multicast_mac(const IpAddr& group, uint8_t mac[6]);

// Which sources of a group a member takes. The default (exclude nothing)
// is an any-source join; a source-specific join includes its sources.
struct McastFilter {
  bool include = false;
  std::vector<IpAddr> sources;
  bool admits(const IpAddr& src) const;
  friend bool operator==(const McastFilter&, const McastFilter&) = default;
};

}  // namespace ss::net
