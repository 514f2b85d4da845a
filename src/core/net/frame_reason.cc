#include "core/net/frame_reason.h"

namespace ss::net {

FrameVerdict frame_verdict(FrameReason r) {
  if (r == FrameReason::kAccepted) return FrameVerdict::kAccept;
  return r < FrameReason::kTruncatedEthernet ? FrameVerdict::kToKernel : FrameVerdict::kDrop;
}

const char* frame_reason_name(FrameReason r) {
  switch (r) {
    case FrameReason::kAccepted:
      return "accepted";
    case FrameReason::kVlan:
      return "vlan";
    case FrameReason::kNotIp:
      return "not_ip";
    case FrameReason::kIpv4Fragment:
      return "ipv4_fragment";
    case FrameReason::kIpv6Fragment:
      return "ipv6_fragment";
    case FrameReason::kIpv6ExtensionHeader:
      return "ipv6_extension_header";
    case FrameReason::kNotUdp:
      return "not_udp";
    case FrameReason::kTruncatedEthernet:
      return "truncated_ethernet";
    case FrameReason::kTruncatedIp:
      return "truncated_ip";
    case FrameReason::kBadIpVersion:
      return "bad_ip_version";
    case FrameReason::kBadIhl:
      return "bad_ihl";
    case FrameReason::kIhlPastEnd:
      return "ihl_past_end";
    case FrameReason::kBadIpChecksum:
      return "bad_ip_checksum";
    case FrameReason::kBadIpLength:
      return "bad_ip_length";
    case FrameReason::kIpLengthPastFrame:
      return "ip_length_past_frame";
    case FrameReason::kTruncatedUdp:
      return "truncated_udp";
    case FrameReason::kBadUdpLength:
      return "bad_udp_length";
    case FrameReason::kBadUdpChecksum:
      return "bad_udp_checksum";
    case FrameReason::kZeroUdpChecksumV6:
      return "zero_udp_checksum_v6";
    case FrameReason::kCount:
      break;
  }
  return "unknown";
}

}  // namespace ss::net
