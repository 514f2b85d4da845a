#include "core/net/multicast.h"

#include <algorithm>
#include <cstring>

namespace ss::net {

bool is_multicast(const IpAddr& a) {
  if (a.family == AF_INET) return (a.bytes[0] & 0xf0) == 0xe0;
  return a.family == AF_INET6 && a.bytes[0] == 0xff;
}

bool multicast_mac(const IpAddr& group, uint8_t mac[6]) {
  if (!is_multicast(group)) return false;
  if (group.family == AF_INET) {
    mac[0] = 0x01;
    mac[1] = 0x00;
    mac[2] = 0x5e;
    mac[3] = group.bytes[1] & 0x7f;
    mac[4] = group.bytes[2];
    mac[5] = group.bytes[3];
  } else {
    mac[0] = mac[1] = 0x33;
    std::memcpy(mac + 2, group.bytes + 12, 4);
  }
  return true;
}

bool McastFilter::admits(const IpAddr& src) const {
  const bool listed = std::find(sources.begin(), sources.end(), src) != sources.end();
  return include ? listed : !listed;
}

}  // namespace ss::net
