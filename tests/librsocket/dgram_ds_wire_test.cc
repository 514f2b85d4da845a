// Upstream librdmacm's datagram headers (dgram_ds_wire.h): the exact bytes
// we put on the wire, and the refusal of bad ones before anything in them
// is used. The layouts come from docs/protocol.md ("Datagram rsockets over
// verbs"), written down from upstream's structures.
#include "librsocket/dgram_ds_wire.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tests/librsocket/conformance.h"

namespace ss::rs {
namespace {

using rsconf::v4;
using rsconf::v6;

const sockaddr* sa(const void* p) { return static_cast<const sockaddr*>(p); }

std::vector<uint8_t> bytes(const void* p, size_t n) {
  auto* b = static_cast<const uint8_t*>(p);
  return {b, b + n};
}

TEST(DsWire, UdpHeaderIpv4Bytes) {
  DsUdpHeader h;
  auto qp = v4("192.168.77.1", 0);
  ASSERT_EQ(16u, ds_udp_header_make(&h, kDsOpData, 0x00abcdef, sa(&qp)));
  std::vector<uint8_t> want = {0x55, 0x55, 0x55, 0x55, 4,   0,   16, 0,
                               0x00, 0xab, 0xcd, 0xef, 192, 168, 77, 1};
  EXPECT_EQ(want, bytes(&h, 16));
}

TEST(DsWire, UdpHeaderIpv6CtrlBytes) {
  DsUdpHeader h;
  auto qp = v6("fd00:77::1", 0);
  ASSERT_EQ(28u, ds_udp_header_make(&h, kDsOpCtrl, 17, sa(&qp)));
  std::vector<uint8_t> want = {0x55, 0x55, 0x55, 0x55, 6, 7, 28, 0, 0, 0, 0, 17, 0xfd, 0,
                               0,    0x77, 0,    0,    0, 0, 0,  0, 0, 0, 0, 0,  0,    1};
  EXPECT_EQ(want, bytes(&h, 28));
}

TEST(DsWire, UdpHeaderRefusesWhatItCannotSay) {
  DsUdpHeader h;
  auto qp = v4("10.0.0.1", 0);
  EXPECT_EQ(0u, ds_udp_header_make(&h, kDsOpData, 0x01000000, sa(&qp)));  // QPNs are 24 bits
  sockaddr other{};
  other.sa_family = AF_UNIX;
  EXPECT_EQ(0u, ds_udp_header_make(&h, kDsOpData, 1, &other));
}

TEST(DsWire, UdpHeaderRoundTrip) {
  DsUdpHeader h;
  auto qp = v4("192.168.77.1", 0);
  auto src = v4("192.168.77.1", 7174);
  ds_udp_header_make(&h, kDsOpData, 0x123456, sa(&qp));
  uint8_t dgram[16 + 5];
  std::memcpy(dgram, &h, 16);
  std::memcpy(dgram + 16, "hello", 5);
  DsUdpInfo info;
  ASSERT_EQ(DgramFault::kNone, ds_udp_header_check(dgram, sizeof dgram, sa(&src), &info));
  EXPECT_EQ(kDsOpData, info.op);
  EXPECT_EQ(16, info.length);
  EXPECT_EQ(0x123456u, info.qpn);
  auto* a = reinterpret_cast<sockaddr_in*>(&info.qp_addr);
  EXPECT_EQ(AF_INET, a->sin_family);
  EXPECT_EQ(qp.sin_addr.s_addr, a->sin_addr.s_addr);
  // a v4 sender seen by an IPv6 socket (v4-mapped source) is version 4 too
  auto mapped = v6("::ffff:192.168.77.1", 7174);
  EXPECT_EQ(DgramFault::kNone, ds_udp_header_check(dgram, sizeof dgram, sa(&mapped), &info));
}

TEST(DsWire, HostileUdpHeadersAreRefused) {
  DsUdpHeader good;
  auto qp = v4("192.168.77.1", 0);
  auto src = v4("192.168.77.2", 7174);
  auto src6 = v6("fd00:77::2", 7174);
  ds_udp_header_make(&good, kDsOpData, 99, sa(&qp));
  DsUdpInfo info;
  auto check = [&](DsUdpHeader h, size_t n, const void* from) {
    uint8_t buf[2100] = {};
    std::memcpy(buf, &h, sizeof h);
    return ds_udp_header_check(buf, n, sa(from), &info);
  };
  EXPECT_EQ(DgramFault::kShort, check(good, 15, &src));
  DsUdpHeader h = good;
  h.tag = htonl(0x53534447);  // our own UDP format's tag
  EXPECT_EQ(DgramFault::kTag, check(h, 16, &src));
  h = good;
  h.version = 5;
  EXPECT_EQ(DgramFault::kHeader, check(h, 16, &src));
  h = good;
  h.length = 28;  // IPv6's length on an IPv4 header
  EXPECT_EQ(DgramFault::kHeader, check(h, 28, &src));
  h = good;
  h.op = 1;
  EXPECT_EQ(DgramFault::kHeader, check(h, 16, &src));
  h = good;
  h.qpn = htonl(0xff000001);
  EXPECT_EQ(DgramFault::kHeader, check(h, 16, &src));
  EXPECT_EQ(DgramFault::kFamily, check(good, 16, &src6));  // says 4, came over IPv6
  EXPECT_EQ(DgramFault::kOversize, check(good, 2049, &src));
  auto qp6 = v6("fd00:77::1", 0);
  ds_udp_header_make(&h, kDsOpCtrl, 99, sa(&qp6));
  EXPECT_EQ(DgramFault::kShort, check(h, 20, &src6));  // an IPv6 header cut short
  EXPECT_EQ(DgramFault::kNone, check(h, 28, &src6));
}

TEST(DsWire, SendHeaderBytes) {
  DsHeader h;
  auto me = v4("192.168.77.1", 7174);
  ASSERT_EQ(8u, ds_header_make(&h, sa(&me)));
  std::vector<uint8_t> want4 = {4, 8, 0x1c, 0x06, 192, 168, 77, 1};
  EXPECT_EQ(want4, bytes(&h, 8));
  auto me6 = v6("fd00:77::1", 7174, 0x12345);
  ASSERT_EQ(24u, ds_header_make(&h, sa(&me6)));
  std::vector<uint8_t> want6 = {6, 24, 0x1c, 0x06, 0, 1, 0x23, 0x45, 0xfd, 0, 0, 0x77,
                                0, 0,  0,    0,    0, 0, 0,    0,    0,    0, 0, 1};
  EXPECT_EQ(want6, bytes(&h, 24));
}

TEST(DsWire, SendHeaderGivesTheSourceBack) {
  DsHeader h;
  auto me = v4("192.168.77.1", 7174);
  ds_header_make(&h, sa(&me));
  size_t len;
  sockaddr_storage src;
  socklen_t src_len;
  ASSERT_EQ(DgramFault::kNone, ds_header_check(&h, 8 + 3, AF_INET, &len, &src, &src_len));
  EXPECT_EQ(8u, len);
  ASSERT_EQ(sizeof(sockaddr_in), src_len);
  EXPECT_EQ(0, std::memcmp(&me, &src, sizeof me));
  // to an IPv6 socket, v4-mapped
  ASSERT_EQ(DgramFault::kNone, ds_header_check(&h, 8, AF_INET6, &len, &src, &src_len));
  auto mapped = v6("::ffff:192.168.77.1", 7174);
  ASSERT_EQ(sizeof(sockaddr_in6), src_len);
  EXPECT_EQ(0, std::memcmp(&mapped, &src, sizeof mapped));
  auto me6 = v6("fd00:77::1", 7174, 0x12345);
  ds_header_make(&h, sa(&me6));
  ASSERT_EQ(DgramFault::kNone, ds_header_check(&h, 24, AF_INET6, &len, &src, &src_len));
  EXPECT_EQ(24u, len);
  EXPECT_EQ(0, std::memcmp(&me6, &src, sizeof me6));
}

TEST(DsWire, HostileSendHeadersAreRefused) {
  DsHeader good;
  auto me = v4("192.168.77.1", 7174);
  ds_header_make(&good, sa(&me));
  size_t len;
  sockaddr_storage src;
  socklen_t src_len;
  auto check = [&](DsHeader h, size_t n, int domain) {
    uint8_t buf[2100] = {};
    std::memcpy(buf, &h, sizeof h);
    return ds_header_check(buf, n, domain, &len, &src, &src_len);
  };
  EXPECT_EQ(DgramFault::kShort, check(good, 7, AF_INET));
  DsHeader h = good;
  h.version = 5;
  EXPECT_EQ(DgramFault::kHeader, check(h, 8, AF_INET));
  h = good;
  h.length = 24;  // IPv6's length with version 4
  EXPECT_EQ(DgramFault::kHeader, check(h, 24, AF_INET));
  EXPECT_EQ(DgramFault::kOversize, check(good, 2049, AF_INET));
  auto me6 = v6("fd00:77::1", 7174);
  ds_header_make(&h, sa(&me6));
  EXPECT_EQ(DgramFault::kShort, check(h, 20, AF_INET6));
  EXPECT_EQ(DgramFault::kFamily, check(h, 24, AF_INET));  // an IPv6 sender to an IPv4 socket
}

}  // namespace
}  // namespace ss::rs
