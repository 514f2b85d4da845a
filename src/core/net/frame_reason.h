// Why a received frame is not delivered: handed to the kernel (valid, but
// not ours to process: VLAN tags, other protocols, fragments, IPv6
// extension headers) or dropped (malformed), and per-reason counters the
// receive path bumps. kAccepted counts the frames delivered.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ss::net {

enum class FrameVerdict : uint8_t { kAccept, kToKernel, kDrop };

enum class FrameReason : uint8_t {
  kAccepted,
  // to the kernel
  kVlan,                 // 802.1Q / 802.1ad tag
  kNotIp,                // another EtherType (ARP, ...)
  kIpv4Fragment,         // MF set or a fragment offset
  kIpv6Fragment,         // fragment header
  kIpv6ExtensionHeader,  // any other extension header before UDP
  kNotUdp,               // another upper-layer protocol
  // dropped
  kTruncatedEthernet,  // shorter than the Ethernet header
  kTruncatedIp,        // shorter than the fixed IP header
  kBadIpVersion,       // version field does not match the EtherType
  kBadIhl,             // IPv4 IHL below 5
  kIhlPastEnd,         // IPv4 header (IHL) longer than the frame
  kBadIpChecksum,      // IPv4 header checksum
  kBadIpLength,        // IPv4 total length shorter than its header
  kIpLengthPastFrame,  // IP length says more bytes than the frame has
  kTruncatedUdp,       // IP payload shorter than the UDP header
  kBadUdpLength,       // UDP length differs from the IP payload's
  kBadUdpChecksum,     // UDP checksum (pseudo-header included)
  kZeroUdpChecksumV6,  // IPv6 forbids "no checksum" (RFC 8200 §8.1)
  kCount
};
constexpr size_t kFrameReasonCount = static_cast<size_t>(FrameReason::kCount);

FrameVerdict frame_verdict(FrameReason r);
// A short name for statistics ("bad_udp_checksum").
const char* frame_reason_name(FrameReason r);

struct FrameCounters {
  uint64_t by_reason[kFrameReasonCount] = {};
  void count(FrameReason r) { by_reason[static_cast<size_t>(r)]++; }
  uint64_t operator[](FrameReason r) const { return by_reason[static_cast<size_t>(r)]; }
};

}  // namespace ss::net
