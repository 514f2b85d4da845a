// IPv6 fixed header (RFC 8200): layout, a view, and the next-header values
// that are extension headers rather than an upper layer.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/net/byte_order.h"

namespace ss::net {

constexpr size_t kIpv6HeaderLen = 40;
constexpr size_t kIpv6AddrLen = 16;
constexpr size_t kIpv6PayloadLenOffset = 4, kIpv6NextHeaderOffset = 6, kIpv6HopLimitOffset = 7,
                 kIpv6SrcOffset = 8, kIpv6DstOffset = 24;
constexpr uint8_t kIpv6NextFragment = 44;
constexpr uint32_t kIpv6FlowLabelMask = 0xfffff;

// The IANA "IPv6 Extension Header Types" registry, fragment (44) aside.
inline bool ipv6_is_extension_header(uint8_t next) {
  switch (next) {
    case 0:    // hop-by-hop options
    case 43:   // routing
    case 50:   // ESP
    case 51:   // AH
    case 60:   // destination options
    case 135:  // mobility
    case 139:  // HIP
    case 140:  // shim6
    case 253:  // experimental
    case 254:
      return true;
    default:
      return false;
  }
}

// p: at least kIpv6HeaderLen bytes. The first word: version (4 bits),
// traffic class (8), flow label (20).
struct Ipv6View {
  const uint8_t* p;
  uint8_t version() const { return p[0] >> 4; }
  uint8_t traffic_class() const { return static_cast<uint8_t>(load_be32(p) >> 20); }
  uint32_t flow_label() const { return load_be32(p) & kIpv6FlowLabelMask; }
  uint16_t payload_len() const { return load_be16(p + kIpv6PayloadLenOffset); }
  uint8_t next_header() const { return p[kIpv6NextHeaderOffset]; }
  uint8_t hop_limit() const { return p[kIpv6HopLimitOffset]; }
  const uint8_t* src() const { return p + kIpv6SrcOffset; }
  const uint8_t* dst() const { return p + kIpv6DstOffset; }
};

}  // namespace ss::net
