// The RFC 1071 checksum: known values (RFC 1071's example, frames the
// kernel sent) and the incremental sum against a plain reference at every
// length, alignment and split.
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "core/net/checksum.h"
#include "core/net/udp.h"
#include "tests/core/net_frame_util.h"

namespace ss::net {
namespace {

using namespace test;

TEST(NetFrameChecksum, Rfc1071Example) {
  // RFC 1071 §3: these bytes sum to ddf2 (with carries folded).
  const uint8_t b[] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
  Checksum c;
  c.add(b, sizeof b);
  EXPECT_EQ(c.sum(), 0xddf2);
  EXPECT_EQ(c.result(), 0x220d);
}

TEST(NetFrameChecksum, EmptyAndAllOnes) {
  EXPECT_EQ(Checksum().sum(), 0);
  EXPECT_EQ(Checksum().result(), 0xffff);
  const std::vector<uint8_t> ones(65536, 0xff);  // carries at every step
  Checksum c;
  c.add(ones.data(), ones.size());
  EXPECT_EQ(c.sum(), 0xffff);
}

TEST(NetFrameChecksum, MatchesReferenceAtEveryLengthAlignmentAndSplit) {
  std::mt19937 rng(7);
  std::vector<uint8_t> buf(300 + 8);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t align = 0; align < 8; align++) {
    for (size_t n = 0; n <= 300; n++) {
      const uint8_t* p = buf.data() + align;
      const uint16_t want = ref_sum(p, n);
      Checksum whole;
      whole.add(p, n);
      ASSERT_EQ(whole.sum(), want) << "len " << n << " align " << align;
      for (size_t cut = 0; cut <= n; cut += (n > 40 ? 7 : 1)) {
        Checksum two;  // header then payload, either of odd length
        two.add(p, cut);
        two.add(p + cut, n - cut);
        ASSERT_EQ(two.sum(), want) << "len " << n << " cut " << cut;
        Checksum three;
        three.add(p, cut / 2);
        three.add(p + cut / 2, cut - cut / 2);
        three.add(std::span<const uint8_t>(p + cut, n - cut));
        ASSERT_EQ(three.sum(), want) << "len " << n << " cuts " << cut / 2 << "," << cut;
      }
    }
  }
}

// The kernel's own checksums: the IPv4 header and UDP (pseudo-header
// included) sum to ffff, and recomputing with the field zeroed gives the
// kernel's value.
TEST(NetFrameChecksum, KernelFramesSumToFfffAndRecompute) {
  for (const char* h : {kKernelV4, kKernelV4Connected, kKernelV6, kKernelV6Empty}) {
    Bytes f = hex(h);
    const bool v4 = is_v4(f);
    const uint8_t* src = &f[kL3 + (v4 ? 12 : 8)];
    const uint8_t* dst = src + (v4 ? 4 : 16);
    const size_t u = udp_off(f), ulen = f.size() - u;
    if (v4) {
      Checksum ip;
      ip.add(&f[kL3], 20);
      EXPECT_EQ(ip.sum(), 0xffff) << h;
      const uint16_t kernel_ip = get16(f, kL3 + 10);
      put16(f, kL3 + 10, 0);
      Checksum again;
      again.add(&f[kL3], 20);
      EXPECT_EQ(again.result(), kernel_ip) << h;
    }
    Checksum udp = udp_pseudo_header_sum(v4 ? 4 : 6, src, dst, static_cast<uint32_t>(ulen));
    udp.add(&f[u], ulen);
    EXPECT_EQ(udp.sum(), 0xffff) << h;
    const uint16_t kernel_udp = get16(f, u + 6);
    put16(f, u + 6, 0);
    Checksum zeroed = udp_pseudo_header_sum(v4 ? 4 : 6, src, dst, static_cast<uint32_t>(ulen));
    zeroed.add(&f[u], 8);
    zeroed.add(&f[u + 8], ulen - 8);
    EXPECT_EQ(zeroed.result(), kernel_udp) << h;
  }
}

}  // namespace
}  // namespace ss::net
