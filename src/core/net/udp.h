// UDP header (RFC 768) and the checksum over the pseudo-header that UDP
// and TCP share: IPv4's (RFC 768, RFC 9293 §3.1) or IPv6's (RFC 8200
// §8.1), the same for parse and build.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/net/byte_order.h"
#include "core/net/checksum.h"
#include "core/net/ipv4.h"

namespace ss::net {

constexpr size_t kUdpHeaderLen = 8;
constexpr size_t kUdpLenOffset = 4, kUdpChecksumOffset = 6;

// p: at least kUdpHeaderLen bytes.
struct UdpView {
  const uint8_t* p;
  uint16_t src_port() const { return load_be16(p); }
  uint16_t dst_port() const { return load_be16(p + 2); }
  uint16_t length() const { return load_be16(p + kUdpLenOffset); }
  uint16_t checksum() const { return load_be16(p + kUdpChecksumOffset); }
};

// Starts the checksum of a transport header and payload (UDP's, TCP's):
// the pseudo-header of `ip_version` (4: 4-byte addresses, else 16) with
// `protocol` and the transport length; header and payload are added after.
Checksum pseudo_header_sum(uint8_t ip_version, uint8_t protocol, const uint8_t* src,
                           const uint8_t* dst, uint32_t len);

inline Checksum udp_pseudo_header_sum(uint8_t ip_version, const uint8_t* src, const uint8_t* dst,
                                      uint32_t udp_len) {
  return pseudo_header_sum(ip_version, kIpProtoUdp, src, dst, udp_len);
}

}  // namespace ss::net
