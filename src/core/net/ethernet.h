// Ethernet II header (IEEE 802.3 with an EtherType): layout and a view.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/net/byte_order.h"

namespace ss::net {

constexpr size_t kMacLen = 6;
constexpr size_t kEthHeaderLen = 14;  // dst MAC, src MAC, EtherType
constexpr size_t kEthTypeOffset = 12;

constexpr uint16_t kEtherTypeIpv4 = 0x0800;
constexpr uint16_t kEtherTypeIpv6 = 0x86dd;
constexpr uint16_t kEtherTypeVlan = 0x8100;  // 802.1Q
constexpr uint16_t kEtherTypeQinQ = 0x88a8;  // 802.1ad service tag

// p: at least kEthHeaderLen bytes.
struct EthView {
  const uint8_t* p;
  const uint8_t* dst() const { return p; }
  const uint8_t* src() const { return p + kMacLen; }
  uint16_t type() const { return load_be16(p + kEthTypeOffset); }
};

}  // namespace ss::net
