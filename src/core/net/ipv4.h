// IPv4 header (RFC 791): layout and a view; options may follow the fixed
// 20 bytes (IHL counts 32-bit words, header included).
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/net/byte_order.h"

namespace ss::net {

constexpr size_t kIpv4MinHeaderLen = 20;
constexpr size_t kIpv4AddrLen = 4;
constexpr size_t kIpv4TosOffset = 1, kIpv4TotalLenOffset = 2, kIpv4IdOffset = 4,
                 kIpv4FragOffset = 6, kIpv4TtlOffset = 8, kIpv4ProtoOffset = 9,
                 kIpv4ChecksumOffset = 10, kIpv4SrcOffset = 12, kIpv4DstOffset = 16;
constexpr uint16_t kIpv4FlagDf = 0x4000;  // don't fragment
constexpr uint16_t kIpv4FlagMf = 0x2000;  // more fragments
constexpr uint16_t kIpv4FragOffsetMask = 0x1fff;
constexpr uint8_t kIpProtoUdp = 17;  // IPv4 protocol and IPv6 next header
constexpr uint8_t kIpProtoTcp = 6;

// p: at least kIpv4MinHeaderLen bytes.
struct Ipv4View {
  const uint8_t* p;
  uint8_t version() const { return p[0] >> 4; }
  size_t header_len() const { return static_cast<size_t>(p[0] & 0xf) * 4; }
  uint8_t tos() const { return p[kIpv4TosOffset]; }
  uint16_t total_len() const { return load_be16(p + kIpv4TotalLenOffset); }
  uint16_t id() const { return load_be16(p + kIpv4IdOffset); }
  uint16_t frag() const { return load_be16(p + kIpv4FragOffset); }  // flags and offset
  bool is_fragment() const { return frag() & (kIpv4FlagMf | kIpv4FragOffsetMask); }
  uint8_t ttl() const { return p[kIpv4TtlOffset]; }
  uint8_t protocol() const { return p[kIpv4ProtoOffset]; }
  const uint8_t* src() const { return p + kIpv4SrcOffset; }
  const uint8_t* dst() const { return p + kIpv4DstOffset; }
};

}  // namespace ss::net
