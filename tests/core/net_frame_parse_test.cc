// parse_frame on frames the kernel sent and on each malformed variant:
// every variant is a kernel frame with one thing wrong (checksums made
// right again by the reference sum), so only the check under test can
// give its verdict.
#include <arpa/inet.h>

#include <cstring>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "core/net/frame_parse.h"
#include "tests/core/net_frame_util.h"

namespace ss::net {
namespace {

using namespace test;
using R = FrameReason;

R parse(const Bytes& f, ParsedFrame* out = nullptr) {
  ParsedFrame p;
  const R r = parse_frame(std::span<const uint8_t>(f.data(), f.size()), out ? out : &p);
  return r;
}

std::string payload_of(const ParsedFrame& p) {
  return std::string(reinterpret_cast<const char*>(p.payload.data()), p.payload.size());
}

void expect_fields(const ParsedFrame& p, uint8_t version, uint16_t sport, uint16_t dport) {
  const uint8_t dst_mac[6] = {2, 0, 0, 0, 0, 0x0b}, src_mac[6] = {2, 0, 0, 0, 0, 0x0a};
  EXPECT_EQ(memcmp(p.fields.dst_mac, dst_mac, 6), 0);
  EXPECT_EQ(memcmp(p.fields.src_mac, src_mac, 6), 0);
  EXPECT_EQ(p.fields.ip_version, version);
  uint8_t src[16] = {}, dst[16] = {};
  inet_pton(version == 4 ? AF_INET : AF_INET6, version == 4 ? "10.77.0.1" : "fd77::1", src);
  inet_pton(version == 4 ? AF_INET : AF_INET6, version == 4 ? "10.77.0.2" : "fd77::2", dst);
  EXPECT_EQ(memcmp(p.fields.src_ip, src, 16), 0);
  EXPECT_EQ(memcmp(p.fields.dst_ip, dst, 16), 0);
  EXPECT_EQ(p.fields.src_port, sport);
  EXPECT_EQ(p.fields.dst_port, dport);
  EXPECT_EQ(p.fields.ttl, 64);
  EXPECT_EQ(p.fields.tos, 0);
}

TEST(NetFrameParse, KernelFramesAccepted) {
  ParsedFrame p;
  Bytes f = hex(kKernelV4);
  ASSERT_EQ(parse(f, &p), R::kAccepted);
  expect_fields(p, 4, 40000, 9000);
  EXPECT_EQ(p.fields.ip_id, 0x1009);
  EXPECT_TRUE(p.fields.dont_fragment);
  EXPECT_EQ(payload_of(p), "hello, frame");
  EXPECT_EQ(p.payload.data(), f.data() + 42);  // a view into the frame

  f = hex(kKernelV4Connected);
  ASSERT_EQ(parse(f, &p), R::kAccepted);
  expect_fields(p, 4, 40001, 9000);
  EXPECT_EQ(p.fields.ip_id, 0xc2b9);
  EXPECT_EQ(payload_of(p), "abc");

  f = hex(kKernelV6);
  ASSERT_EQ(parse(f, &p), R::kAccepted);
  expect_fields(p, 6, 40000, 9000);
  EXPECT_EQ(p.fields.flow_label, 0xfd8f6u);
  EXPECT_EQ(payload_of(p), "hello, frame");

  f = hex(kKernelV6Empty);
  ASSERT_EQ(parse(f, &p), R::kAccepted);
  expect_fields(p, 6, 40000, 9001);
  EXPECT_EQ(p.payload.size(), 0u);
}

TEST(NetFrameParse, TrafficClassAndOptionsRead) {
  Bytes f = hex(kKernelV6);
  f[kL3] = 0x6b;  // traffic class 0xb8 across the first two bytes
  f[kL3 + 1] = 0x8f;
  ParsedFrame p;
  ASSERT_EQ(parse(f, &p), R::kAccepted);  // the class is not in any checksum
  EXPECT_EQ(p.fields.tos, 0xb8);
  EXPECT_EQ(p.fields.flow_label, 0xfd8f6u);

  // IPv4 with 4 bytes of options (NOPs): IHL 6; UDP is found after them.
  f = hex(kKernelV4);
  f.insert(f.begin() + kL3 + 20, {1, 1, 1, 1});
  f[kL3] = 0x46;
  put16(f, kL3 + 2, static_cast<uint16_t>(get16(f, kL3 + 2) + 4));
  f[kL3 + 1] = 0x2e;  // TOS
  fix_ipv4_checksum(f);
  ASSERT_EQ(parse(f, &p), R::kAccepted);
  EXPECT_EQ(payload_of(p), "hello, frame");
  EXPECT_EQ(p.fields.tos, 0x2e);
}

TEST(NetFrameParse, EthernetPaddingAccepted) {
  Bytes f = hex(kKernelV4Connected);
  f.resize(60, 0);  // a short frame padded to Ethernet's minimum
  ParsedFrame p;
  ASSERT_EQ(parse(f, &p), R::kAccepted);
  EXPECT_EQ(payload_of(p), "abc");
  f = hex(kKernelV6Empty);
  f.resize(f.size() + 5, 0xee);
  ASSERT_EQ(parse(f, &p), R::kAccepted);
  EXPECT_EQ(p.payload.size(), 0u);
}

// Every prefix of a good frame: cut in the Ethernet header, in the fixed
// IP header, or after it (the IP length then says more than there is).
TEST(NetFrameParse, EveryTruncationDropped) {
  for (const char* h : {kKernelV4, kKernelV4Connected, kKernelV6, kKernelV6Empty}) {
    const Bytes whole = hex(h);
    const size_t ip_fixed = is_v4(whole) ? 20 : 40;
    for (size_t n = 0; n < whole.size(); n++) {
      // Copied to a buffer of exactly n bytes, so ASan sees any read past it.
      const Bytes f(whole.begin(), whole.begin() + static_cast<long>(n));
      const R want = n < 14              ? R::kTruncatedEthernet
                     : n < 14 + ip_fixed ? R::kTruncatedIp
                                         : R::kIpLengthPastFrame;
      ASSERT_EQ(parse(f), want) << h << " cut at " << n;
    }
  }
}

TEST(NetFrameParse, VlanAndOtherEtherTypesToKernel) {
  Bytes f = hex(kKernelV4);
  put16(f, 12, 0x8100);
  EXPECT_EQ(parse(f), R::kVlan);
  put16(f, 12, 0x88a8);
  EXPECT_EQ(parse(f), R::kVlan);
  put16(f, 12, 0x0806);  // ARP
  EXPECT_EQ(parse(f), R::kNotIp);
}

TEST(NetFrameParse, VersionMustMatchEtherType) {
  Bytes f = hex(kKernelV4);
  f[kL3] = 0x65;  // version 6 behind EtherType IPv4
  fix_ipv4_checksum(f);
  EXPECT_EQ(parse(f), R::kBadIpVersion);
  f = hex(kKernelV6);
  f[kL3] = 0x40;  // version 4 behind EtherType IPv6
  EXPECT_EQ(parse(f), R::kBadIpVersion);
}

TEST(NetFrameParse, Ipv4HeaderLength) {
  Bytes f = hex(kKernelV4);
  f[kL3] = 0x44;  // IHL 4: 16 bytes
  fix_ipv4_checksum(f);
  EXPECT_EQ(parse(f), R::kBadIhl);
  f = hex(kKernelV4Connected);
  f[kL3] = 0x4f;  // IHL 15: 60 bytes, the frame has 31 after Ethernet
  EXPECT_EQ(parse(f), R::kIhlPastEnd);
}

TEST(NetFrameParse, Ipv4HeaderChecksum) {
  Bytes f = hex(kKernelV4);
  f[kL3 + 8]--;  // TTL: covered by the header checksum only
  EXPECT_EQ(parse(f), R::kBadIpChecksum);
  f = hex(kKernelV4);
  f[kL3 + 10] ^= 0x01;  // the checksum itself
  EXPECT_EQ(parse(f), R::kBadIpChecksum);
}

TEST(NetFrameParse, IpLengths) {
  Bytes f = hex(kKernelV4);
  put16(f, kL3 + 2, 19);  // total length shorter than the header
  fix_ipv4_checksum(f);
  EXPECT_EQ(parse(f), R::kBadIpLength);
  f = hex(kKernelV4);
  put16(f, kL3 + 2, static_cast<uint16_t>(f.size() - kL3 + 1));  // one past the frame
  fix_ipv4_checksum(f);
  EXPECT_EQ(parse(f), R::kIpLengthPastFrame);
  f = hex(kKernelV6);
  put16(f, kL3 + 4, static_cast<uint16_t>(f.size() - kL3 - 40 + 1));
  EXPECT_EQ(parse(f), R::kIpLengthPastFrame);
}

TEST(NetFrameParse, FragmentsToKernel) {
  Bytes f = hex(kKernelV4);
  put16(f, kL3 + 6, 0x2000);  // MF, offset 0: a first fragment
  fix_ipv4_checksum(f);
  EXPECT_EQ(parse(f), R::kIpv4Fragment);
  put16(f, kL3 + 6, 0x0001);  // the last fragment (offset 8 bytes)
  fix_ipv4_checksum(f);
  EXPECT_EQ(parse(f), R::kIpv4Fragment);
  put16(f, kL3 + 6, 0x0000);  // neither DF nor fragment: an ordinary datagram
  fix_ipv4_checksum(f);
  ParsedFrame p;
  ASSERT_EQ(parse(f, &p), R::kAccepted);
  EXPECT_FALSE(p.fields.dont_fragment);
  f = hex(kKernelV6);
  f[kL3 + 6] = 44;
  EXPECT_EQ(parse(f), R::kIpv6Fragment);
}

TEST(NetFrameParse, ExtensionHeadersAndOtherProtocolsToKernel) {
  Bytes f = hex(kKernelV6);
  for (uint8_t next : {0, 43, 60}) {  // hop-by-hop, routing, destination options
    f[kL3 + 6] = next;
    EXPECT_EQ(parse(f), R::kIpv6ExtensionHeader) << int(next);
  }
  f[kL3 + 6] = 58;  // ICMPv6
  EXPECT_EQ(parse(f), R::kNotUdp);
  f = hex(kKernelV4);
  f[kL3 + 9] = 6;  // TCP
  fix_ipv4_checksum(f);
  EXPECT_EQ(parse(f), R::kNotUdp);
}

// A caller with a TCP stack takes TCP: the IP fields read, the segment
// left whole (header included) for the TCP stack to check; other
// protocols still go to the kernel.
TEST(NetFrameParse, TcpTakenWhole) {
  Bytes f = hex(kKernelV4);
  f[kL3 + 9] = 6;
  fix_ipv4_checksum(f);
  ParsedFrame p;
  ASSERT_EQ(parse_frame(f, &p, true), R::kAccepted);
  EXPECT_EQ(p.protocol, kIpProtoTcp);
  EXPECT_EQ(p.payload.data(), f.data() + kL3 + 20);
  EXPECT_EQ(p.payload.size(), f.size() - kL3 - 20);
  EXPECT_EQ(p.fields.src_port, 0) << "a TCP segment's ports are the TCP stack's";
  uint8_t src[4];
  inet_pton(AF_INET, "10.77.0.1", src);
  EXPECT_EQ(memcmp(p.fields.src_ip, src, 4), 0);
  f = hex(kKernelV6);
  f[kL3 + 6] = 6;
  ASSERT_EQ(parse_frame(f, &p, true), R::kAccepted);
  EXPECT_EQ(p.protocol, kIpProtoTcp);
  EXPECT_EQ(p.payload.data(), f.data() + kL3 + 40);
  f[kL3 + 6] = 58;  // ICMPv6
  EXPECT_EQ(parse_frame(f, &p, true), R::kNotUdp);
  f = hex(kKernelV6);
  ASSERT_EQ(parse_frame(f, &p, true), R::kAccepted);
  EXPECT_EQ(p.protocol, kIpProtoUdp);
}

TEST(NetFrameParse, TruncatedUdpHeader) {
  Bytes f = hex(kKernelV4);
  f.resize(kL3 + 20 + 4);  // the IP datagram holds 4 bytes of UDP
  put16(f, kL3 + 2, 24);
  fix_ipv4_checksum(f);
  EXPECT_EQ(parse(f), R::kTruncatedUdp);
  f = hex(kKernelV6);
  put16(f, kL3 + 4, 7);  // the rest is padding
  EXPECT_EQ(parse(f), R::kTruncatedUdp);
}

// UDP checksum zero (IPv4: none) so the length check alone can tell.
TEST(NetFrameParse, UdpLengthMustMatchIpPayload) {
  const Bytes good = hex(kKernelV4);
  const size_t u = udp_off(good);
  const uint16_t ulen = get16(good, u + 4);
  for (int delta : {-1, +1, -static_cast<int>(ulen) + 7}) {
    Bytes f = good;
    put16(f, u + 6, 0);
    put16(f, u + 4, static_cast<uint16_t>(ulen + delta));
    EXPECT_EQ(parse(f), R::kBadUdpLength) << delta;
  }
  Bytes f = hex(kKernelV6);
  put16(f, udp_off(f) + 4, static_cast<uint16_t>(get16(f, udp_off(f) + 4) - 1));
  fix_udp_checksum(f);
  EXPECT_EQ(parse(f), R::kBadUdpLength);
}

TEST(NetFrameParse, UdpChecksum) {
  for (const char* h : {kKernelV4, kKernelV6}) {
    Bytes f = hex(h);
    f.back() ^= 0x20;  // a payload byte
    EXPECT_EQ(parse(f), R::kBadUdpChecksum) << h;
    // The pseudo-header counts: another destination address (IPv4's
    // header checksum made right again).
    f = hex(h);
    f[kL3 + (is_v4(f) ? 19 : 39)] ^= 1;
    if (is_v4(f)) fix_ipv4_checksum(f);
    EXPECT_EQ(parse(f), R::kBadUdpChecksum) << h;
  }
  // An empty datagram: the checksum covers the header alone.
  Bytes f = hex(kKernelV6Empty);
  f[udp_off(f) + 1] ^= 1;  // source port
  EXPECT_EQ(parse(f), R::kBadUdpChecksum);
}

TEST(NetFrameParse, ZeroUdpChecksum) {
  Bytes f = hex(kKernelV4);
  put16(f, udp_off(f) + 6, 0);
  f.back() ^= 0x20;  // would fail a checksum; IPv4's zero means none
  ParsedFrame p;
  ASSERT_EQ(parse(f, &p), R::kAccepted);
  EXPECT_EQ(payload_of(p), "hello, framE");
  f = hex(kKernelV6);
  put16(f, udp_off(f) + 6, 0);
  EXPECT_EQ(parse(f), R::kZeroUdpChecksumV6);
}

TEST(NetFrameParse, ReasonsNamedWithVerdictsAndCounted) {
  std::set<std::string> names;
  for (size_t i = 0; i < kFrameReasonCount; i++) {
    const std::string n = frame_reason_name(static_cast<R>(i));
    EXPECT_NE(n, "unknown");
    names.insert(n);
  }
  EXPECT_EQ(names.size(), kFrameReasonCount);
  EXPECT_EQ(frame_verdict(R::kAccepted), FrameVerdict::kAccept);
  for (R r : {R::kVlan, R::kNotIp, R::kIpv4Fragment, R::kIpv6Fragment, R::kIpv6ExtensionHeader,
              R::kNotUdp})
    EXPECT_EQ(frame_verdict(r), FrameVerdict::kToKernel) << frame_reason_name(r);
  for (R r : {R::kTruncatedEthernet, R::kBadIpChecksum, R::kBadUdpChecksum, R::kZeroUdpChecksumV6})
    EXPECT_EQ(frame_verdict(r), FrameVerdict::kDrop) << frame_reason_name(r);
  EXPECT_STREQ(frame_reason_name(R::kBadUdpChecksum), "bad_udp_checksum");
  FrameCounters c;
  c.count(parse(hex(kKernelV4)));
  c.count(parse(Bytes(3)));
  c.count(parse(Bytes(3)));
  EXPECT_EQ(c[R::kAccepted], 1u);
  EXPECT_EQ(c[R::kTruncatedEthernet], 2u);
  EXPECT_EQ(c[R::kBadUdpChecksum], 0u);
}

}  // namespace
}  // namespace ss::net
