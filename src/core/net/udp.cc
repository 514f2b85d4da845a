#include "core/net/udp.h"

#include <cstring>

#include "core/net/ipv4.h"
#include "core/net/ipv6.h"

namespace ss::net {

Checksum pseudo_header_sum(uint8_t ip_version, uint8_t protocol, const uint8_t* src,
                           const uint8_t* dst, uint32_t len) {
  uint8_t ph[2 * kIpv6AddrLen + 8] = {};
  size_t n;
  if (ip_version == 4) {  // src, dst, zero, protocol, 16-bit length
    memcpy(ph, src, kIpv4AddrLen);
    memcpy(ph + kIpv4AddrLen, dst, kIpv4AddrLen);
    ph[9] = protocol;
    store_be16(ph + 10, static_cast<uint16_t>(len));
    n = 12;
  } else {  // src, dst, 32-bit length, three zeros, next header
    memcpy(ph, src, kIpv6AddrLen);
    memcpy(ph + kIpv6AddrLen, dst, kIpv6AddrLen);
    store_be32(ph + 32, len);
    ph[39] = protocol;
    n = 40;
  }
  Checksum c;
  c.add(ph, n);
  return c;
}

}  // namespace ss::net
