#include "core/net/frame_parse.h"

#include <cstring>

#include "core/net/checksum.h"
#include "core/net/ethernet.h"
#include "core/net/ipv4.h"
#include "core/net/ipv6.h"
#include "core/net/udp.h"

namespace ss::net {
namespace {

using R = FrameReason;

// What both IP versions report; addresses are kIpv4AddrLen or
// kIpv6AddrLen bytes.
void take_ip(FrameFields& f, uint8_t version, const uint8_t* src, const uint8_t* dst, uint8_t ttl,
             uint8_t tos) {
  const size_t alen = version == 4 ? kIpv4AddrLen : kIpv6AddrLen;
  f.ip_version = version;
  memcpy(f.src_ip, src, alen);
  memcpy(f.dst_ip, dst, alen);
  f.ttl = ttl;
  f.tos = tos;
}

// ip: the IP payload (the bytes the IP length covers, Ethernet padding
// excluded) that should be one UDP datagram.
R parse_udp(std::span<const uint8_t> ip, ParsedFrame* out) {
  FrameFields& f = out->fields;
  if (ip.size() < kUdpHeaderLen) return R::kTruncatedUdp;
  const UdpView u{ip.data()};
  // Linux trims a UDP length shorter than the IP payload; we take only
  // exact ones (the kernel's senders never make others).
  if (u.length() != ip.size()) return R::kBadUdpLength;
  if (u.checksum() == 0) {
    if (f.ip_version == 6) return R::kZeroUdpChecksumV6;
  } else {  // IPv4's zero: the sender computed none (RFC 768)
    Checksum c = udp_pseudo_header_sum(f.ip_version, f.src_ip, f.dst_ip, u.length());
    c.add(ip);
    if (c.sum() != 0xffff) return R::kBadUdpChecksum;
  }
  f.src_port = u.src_port();
  f.dst_port = u.dst_port();
  out->payload = ip.subspan(kUdpHeaderLen);
  return R::kAccepted;
}

bool wanted(uint8_t proto, bool take_tcp) {
  return proto == kIpProtoUdp || (take_tcp && proto == kIpProtoTcp);
}

// ip: the IP payload of a wanted protocol.
R parse_l4(uint8_t proto, std::span<const uint8_t> ip, ParsedFrame* out) {
  out->protocol = proto;
  if (proto == kIpProtoUdp) return parse_udp(ip, out);
  out->payload = ip;
  return R::kAccepted;
}

// linked: bytes past l3's end in linked frames (the IP length covers them
// exactly: no padding on a frame that long).
R parse_ipv4(std::span<const uint8_t> l3, ParsedFrame* out, bool take_tcp, size_t linked) {
  if (l3.size() < kIpv4MinHeaderLen) return R::kTruncatedIp;
  const Ipv4View h{l3.data()};
  if (h.version() != 4) return R::kBadIpVersion;
  const size_t hlen = h.header_len();
  if (hlen < kIpv4MinHeaderLen) return R::kBadIhl;
  if (hlen > l3.size()) return R::kIhlPastEnd;
  Checksum c;
  c.add(l3.first(hlen));
  if (c.sum() != 0xffff) return R::kBadIpChecksum;
  const size_t total = h.total_len();
  if (total < hlen) return R::kBadIpLength;
  if (total > l3.size() + linked) return R::kIpLengthPastFrame;  // shorter: Ethernet padding
  if (linked && total != l3.size() + linked) return R::kBadIpLength;
  if (h.is_fragment()) return R::kIpv4Fragment;
  if (!wanted(h.protocol(), take_tcp)) return R::kNotUdp;
  take_ip(out->fields, 4, h.src(), h.dst(), h.ttl(), h.tos());
  out->fields.ip_id = h.id();
  out->fields.dont_fragment = h.frag() & kIpv4FlagDf;
  return parse_l4(h.protocol(), l3.subspan(hlen, total - hlen - linked), out);
}

R parse_ipv6(std::span<const uint8_t> l3, ParsedFrame* out, bool take_tcp, size_t linked) {
  if (l3.size() < kIpv6HeaderLen) return R::kTruncatedIp;
  const Ipv6View h{l3.data()};
  if (h.version() != 6) return R::kBadIpVersion;
  const size_t len = h.payload_len();
  if (len > l3.size() + linked - kIpv6HeaderLen) return R::kIpLengthPastFrame;
  if (linked && len != l3.size() + linked - kIpv6HeaderLen) return R::kBadIpLength;
  if (h.next_header() == kIpv6NextFragment) return R::kIpv6Fragment;
  if (ipv6_is_extension_header(h.next_header())) return R::kIpv6ExtensionHeader;
  if (!wanted(h.next_header(), take_tcp)) return R::kNotUdp;
  take_ip(out->fields, 6, h.src(), h.dst(), h.hop_limit(), h.traffic_class());
  out->fields.flow_label = h.flow_label();
  return parse_l4(h.next_header(), l3.subspan(kIpv6HeaderLen, len - linked), out);
}

}  // namespace

FrameReason parse_frame(std::span<const uint8_t> frame, ParsedFrame* out, bool take_tcp,
                        size_t linked) {
  *out = ParsedFrame{};
  if (frame.size() < kEthHeaderLen) return R::kTruncatedEthernet;
  const EthView e{frame.data()};
  memcpy(out->fields.dst_mac, e.dst(), kMacLen);
  memcpy(out->fields.src_mac, e.src(), kMacLen);
  const std::span<const uint8_t> l3 = frame.subspan(kEthHeaderLen);
  switch (e.type()) {
    case kEtherTypeIpv4:
      return parse_ipv4(l3, out, take_tcp, linked);
    case kEtherTypeIpv6:
      return parse_ipv6(l3, out, take_tcp, linked);
    case kEtherTypeVlan:
    case kEtherTypeQinQ:
      return R::kVlan;
    default:
      return R::kNotIp;
  }
}

}  // namespace ss::net
