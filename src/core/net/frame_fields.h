// What a UDP frame says apart from its payload: what parse_frame reports
// and build_frame writes (Ethernet II, IPv4 or IPv6 without options or
// extension headers, UDP).
#pragma once
#include <cstdint>

namespace ss::net {

struct FrameFields {
  uint8_t dst_mac[6] = {}, src_mac[6] = {};
  uint8_t ip_version = 4;                    // 4 or 6
  uint8_t src_ip[16] = {}, dst_ip[16] = {};  // network order; IPv4 uses the first 4
  uint16_t src_port = 0, dst_port = 0;       // host order
  uint8_t ttl = 64;                          // IPv4 TTL, IPv6 hop limit
  uint8_t tos = 0;                           // IPv4 TOS, IPv6 traffic class
  uint32_t flow_label = 0;                   // IPv6 only (20 bits)
  uint16_t ip_id = 0;                        // IPv4 only
  bool dont_fragment = true;                 // IPv4 only: DF
  bool operator==(const FrameFields&) const = default;
};

}  // namespace ss::net
