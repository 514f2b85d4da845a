// The AF_XDP rings' depth from VMA_RX_WRE and VMA_TX_WRE (ring_depth.h):
// powers of two at least the values asked for, never under 64; the pool
// holds both rings' frames and half a fill ring more, as a power of two;
// the settings in effect (defaults, the latency profile, socketXtreme,
// explicit variables) reach it.
#include <stdlib.h>

#include <gtest/gtest.h>

#include "core/base/config.h"
#include "libvmacompat/ring_depth.h"

namespace ss::vma {
namespace {

bool pow2(uint64_t n) { return n && !(n & (n - 1)); }

void expect_sane(const RingDepth& d, int64_t rx_wre, int64_t tx_wre) {
  SCOPED_TRACE(testing::Message() << "rx_wre " << rx_wre << ", tx_wre " << tx_wre);
  for (const uint64_t n : {uint64_t{d.fill}, uint64_t{d.rx}, uint64_t{d.tx}, uint64_t{d.completion},
                           uint64_t{d.frames}})
    EXPECT_TRUE(pow2(n)) << n;
  EXPECT_EQ(d.rx, d.fill);
  EXPECT_EQ(d.completion, d.tx);
  EXPECT_GE(int64_t{d.fill}, rx_wre);
  EXPECT_GE(d.fill, 64u);
  EXPECT_LT(int64_t{d.fill} / 2, rx_wre < 64 ? 64 : rx_wre);  // the next power, not beyond
  EXPECT_GE(int64_t{d.tx}, tx_wre);
  EXPECT_GE(d.tx, 64u);
  EXPECT_GE(d.frames, size_t{d.fill} + d.tx + d.fill / 2);
  EXPECT_LT(d.frames / 2, size_t{d.fill} + d.tx + d.fill / 2);
  EXPECT_EQ(d.frame_size, 2048u);
  EXPECT_EQ(d.bytes(), d.frames * 2048);
}

TEST(RingDepth, PowersOfTwoWithRoomForWhatTheProgramHolds) {
  // libvma's default, the latency profile's, socketXtreme's, the bench's
  // experiment (8192 and the default tx), the settings' limits.
  const RingDepth def = ring_depth(16000, 2048);
  EXPECT_EQ(def.fill, 16384u);
  EXPECT_EQ(def.tx, 2048u);
  EXPECT_EQ(def.frames, 32768u);  // 16384 + 2048 + 8192 = 26624, rounded up
  EXPECT_EQ(def.bytes(), size_t{64} << 20);
  const RingDepth lat = ring_depth(256, 256);
  EXPECT_EQ(lat.fill, 256u);
  EXPECT_EQ(lat.frames, 1024u);  // 2 MiB
  const RingDepth xt = ring_depth(1024, 2048);
  EXPECT_EQ(xt.frames, 4096u);  // 8 MiB, as the rings were before the setting acted
  EXPECT_EQ(ring_depth(8192, 2048).frames, 16384u);
  EXPECT_EQ(ring_depth(1, 1).fill, 64u);
  EXPECT_EQ(ring_depth(32768, 32768).bytes(), size_t{256} << 20);
  for (const int64_t rx : {1, 63, 64, 65, 100, 1000, 4096, 4097, 16000, 32767, 32768})
    for (const int64_t tx : {1, 64, 300, 2048, 32768}) expect_sane(ring_depth(rx, tx), rx, tx);
}

TEST(RingDepth, FollowsTheSettingsInEffect) {
  constexpr const char* kVars[] = {"VMA_RX_WRE", "VMA_TX_WRE", "VMA_SPEC", "VMA_SOCKETXTREME"};
  for (const char* v : kVars) unsetenv(v);
  config::reload();
  EXPECT_EQ(ring_depth().fill, 16384u);
  EXPECT_EQ(ring_depth().tx, 2048u);
  setenv("VMA_SPEC", "latency", 1);
  config::reload();
  EXPECT_EQ(ring_depth().fill, 256u);
  EXPECT_EQ(ring_depth().tx, 256u);
  unsetenv("VMA_SPEC");
  setenv("VMA_SOCKETXTREME", "1", 1);
  config::reload();
  EXPECT_EQ(ring_depth().fill, 1024u);
  setenv("VMA_RX_WRE", "300", 1);
  setenv("VMA_TX_WRE", "100", 1);
  config::reload();
  EXPECT_EQ(ring_depth().fill, 512u);
  EXPECT_EQ(ring_depth().tx, 128u);
  for (const char* v : kVars) unsetenv(v);
  config::reload();
}

}  // namespace
}  // namespace ss::vma
