// UDP header (RFC 768) and its checksum over the pseudo-header: IPv4's
// (RFC 768) or IPv6's (RFC 8200 §8.1), the same for parse and build.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/net/byte_order.h"
#include "core/net/checksum.h"

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

// Starts a UDP checksum: the pseudo-header of `ip_version` (4: 4-byte
// addresses, else 16) with the UDP length; the UDP header and payload are
// added after it.
Checksum udp_pseudo_header_sum(uint8_t ip_version, const uint8_t* src, const uint8_t* dst,
                               uint32_t udp_len);

}  // namespace ss::net
