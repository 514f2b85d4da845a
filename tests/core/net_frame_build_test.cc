// build_frame: the kernel's frames rebuilt byte for byte from their parsed
// fields, round trips through parse_frame at payload sizes 0, 1, odd and
// the MTU's largest (checksums checked by the reference sum too), and the
// clean refusals (MTU, buffer, version).
#include <arpa/inet.h>
#include <sys/types.h>

#include <cerrno>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "core/net/frame_build.h"
#include "core/net/frame_parse.h"
#include "tests/core/net_frame_util.h"

namespace ss::net {
namespace {

using namespace test;

constexpr size_t kMtu = 1500;

ssize_t build(Bytes& buf, const FrameFields& f, size_t payload_len, size_t mtu = kMtu) {
  return build_frame(std::span<uint8_t>(buf.data(), buf.size()), f, payload_len, mtu);
}

FrameFields fields(uint8_t version) {
  FrameFields f;
  const uint8_t dst_mac[6] = {0x52, 0x54, 0, 0x12, 0x34, 0x56}, src_mac[6] = {2, 1, 2, 3, 4, 5};
  memcpy(f.dst_mac, dst_mac, 6);
  memcpy(f.src_mac, src_mac, 6);
  f.ip_version = version;
  const int af = version == 4 ? AF_INET : AF_INET6;
  inet_pton(af, version == 4 ? "192.0.2.7" : "2001:db8::7", f.src_ip);
  inet_pton(af, version == 4 ? "198.51.100.200" : "2001:db8:ffff::c8", f.dst_ip);
  f.src_port = 54321;
  f.dst_port = 319;
  f.ttl = 3;
  f.tos = 0xb8;  // EF
  if (version == 4)
    f.ip_id = 0xbeef;
  else
    f.flow_label = 0xabcde;
  return f;
}

TEST(NetFrameBuild, KernelFramesRebuiltByteForByte) {
  for (const char* h : {kKernelV4, kKernelV4Connected, kKernelV6, kKernelV6Empty}) {
    const Bytes kernel = hex(h);
    ParsedFrame p;
    ASSERT_EQ(parse_frame(std::span<const uint8_t>(kernel.data(), kernel.size()), &p),
              FrameReason::kAccepted);
    const size_t hlen = frame_header_len(p.fields.ip_version);
    Bytes buf(hlen + p.payload.size(), 0xa5);
    memcpy(buf.data() + hlen, p.payload.data(), p.payload.size());
    ASSERT_EQ(build(buf, p.fields, p.payload.size()), static_cast<ssize_t>(kernel.size()));
    EXPECT_EQ(buf, kernel) << h;
  }
}

TEST(NetFrameBuild, RoundTripEveryPayloadSize) {
  std::mt19937 rng(15);
  for (uint8_t v : {4, 6}) {
    const size_t hlen = frame_header_len(v);
    const size_t max = kMtu - (v == 4 ? 20 : 40) - 8;  // 1472, 1452
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1001}, max - 1, max}) {
      FrameFields f = fields(v);
      f.dont_fragment = v == 6 || n % 2 == 0;  // both DF settings (IPv4 has the bit)
      Bytes buf(hlen + n + 3);                 // room to spare: the frame is hlen + n
      std::vector<uint8_t> payload(n);
      for (auto& b : payload) b = static_cast<uint8_t>(rng());
      if (n) memcpy(buf.data() + hlen, payload.data(), n);
      ASSERT_EQ(build(buf, f, n), static_cast<ssize_t>(hlen + n)) << int(v) << " " << n;
      buf.resize(hlen + n);
      // The checksums by the reference sum: each covered span sums to ffff.
      const size_t u = udp_off(buf);
      if (v == 4) {
        EXPECT_EQ(ref_sum(&buf[kL3], 20), 0xffff);
        EXPECT_EQ(get16(buf, kL3 + 6), f.dont_fragment ? 0x4000 : 0);
      }
      const uint32_t pseudo = ref_sum(&buf[kL3 + (v == 4 ? 12 : 8)], v == 4 ? 8 : 32,
                                      17 + static_cast<uint32_t>(8 + n));
      EXPECT_EQ(ref_sum(&buf[u], 8 + n, pseudo), 0xffff) << int(v) << " " << n;
      EXPECT_NE(get16(buf, u + 6), 0);

      ParsedFrame p;
      ASSERT_EQ(parse_frame(std::span<const uint8_t>(buf.data(), buf.size()), &p),
                FrameReason::kAccepted)
          << int(v) << " " << n;
      EXPECT_TRUE(p.fields == f) << int(v) << " " << n;
      EXPECT_EQ(p.payload.data(), buf.data() + hlen);
      ASSERT_EQ(p.payload.size(), n);
      if (n) {  // an empty vector's data may be null
        EXPECT_EQ(memcmp(p.payload.data(), payload.data(), n), 0);
      }
    }
  }
}

// A payload whose UDP checksum comes out zero is sent with ffff (zero
// would mean "none" to IPv4 and be dropped by IPv6).
TEST(NetFrameBuild, ZeroUdpChecksumSentAsFfff) {
  for (uint8_t v : {4, 6}) {
    const size_t hlen = frame_header_len(v);
    Bytes buf(hlen + 2, 0);
    FrameFields f = fields(v);
    ASSERT_GT(build(buf, f, 2), 0);
    // With payload word 0 the checksum is C; a payload word of C makes
    // the sum ffff, so the computed checksum is zero.
    const uint16_t c = get16(buf, hlen - 2);
    put16(buf, hlen, c);
    ASSERT_GT(build(buf, f, 2), 0);
    EXPECT_EQ(get16(buf, hlen - 2), 0xffff) << int(v);
    ParsedFrame p;
    EXPECT_EQ(parse_frame(std::span<const uint8_t>(buf.data(), buf.size()), &p),
              FrameReason::kAccepted);
  }
}

TEST(NetFrameBuild, RefusesCleanly) {
  for (uint8_t v : {4, 6}) {
    const size_t hlen = frame_header_len(v);
    const size_t max = kMtu - (v == 4 ? 20 : 40) - 8;
    Bytes buf(hlen + max + 1, 0x5a);
    const Bytes before = buf;
    // One byte over the MTU: fragmentation is the kernel's.
    EXPECT_EQ(build(buf, fields(v), max + 1), -EMSGSIZE);
    // Over IP's 16-bit length whatever the MTU says.
    Bytes big(hlen + 65536);
    EXPECT_EQ(build(big, fields(v), 65536 - 8 - (v == 4 ? 20 : 0), SIZE_MAX), -EMSGSIZE);
    EXPECT_EQ(build(big, fields(v), 65535 - 8 - (v == 4 ? 20 : 0), SIZE_MAX),
              static_cast<ssize_t>(hlen + 65535 - 8 - (v == 4 ? 20 : 0)));
    // The payload does not fit the buffer, or the headroom is missing.
    EXPECT_EQ(build(buf, fields(v), max + 2), -ENOBUFS);
    Bytes tiny(hlen - 1);
    EXPECT_EQ(build(tiny, fields(v), 0), -ENOBUFS);
    EXPECT_EQ(buf, before);  // nothing written by a refusal
  }
  FrameFields f = fields(4);
  f.ip_version = 5;
  Bytes buf(100);
  EXPECT_EQ(frame_header_len(5), 0u);
  EXPECT_EQ(build(buf, f, 0), -EINVAL);
}

TEST(NetFrameBuild, Ipv4IdSequenceCountsByOne) {
  Ipv4IdSequence s(0xfffe);
  EXPECT_EQ(s.next(), 0xffff);
  EXPECT_EQ(s.next(), 0);
  EXPECT_EQ(s.next(), 1);
  Ipv4IdSequence r;  // random start, then one by one
  const uint16_t a = r.next();
  EXPECT_EQ(r.next(), static_cast<uint16_t>(a + 1));
}

}  // namespace
}  // namespace ss::net
