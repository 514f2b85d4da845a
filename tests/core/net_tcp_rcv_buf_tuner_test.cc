// Receive-buffer autotuning (rcv_buf_tuner.h): the receiver's round trip
// from a window's arrival (the least sample), the buffer grown to what a
// round trip read, bounded, and kept where the reading does not speed up.
#include "core/net/tcp/rcv_buf_tuner.h"

#include <gtest/gtest.h>

namespace ss::net::tcp {
namespace {

constexpr uint32_t kMss = 1448;

TEST(RcvBufTuner, NoGrowthBeforeARoundTripIsKnown) {
  RcvBufTuner t;
  t.start(1000, kMss, 0);
  EXPECT_EQ(t.read(1000 + (1 << 20), 65536, 1 << 22, kMss, 5000), 65536u);
  EXPECT_EQ(t.rtt_us(), 0u);
}

TEST(RcvBufTuner, RoundTripIsTheTimeOneWindowTakes) {
  RcvBufTuner t;
  t.start(0, kMss, 0);
  t.arrived(kMss, 65536, 100);   // the sample's edge: 1448 + 65536
  t.arrived(40000, 65536, 200);  // not there yet
  t.arrived(kMss + 65536, 65536, 400);
  EXPECT_EQ(t.rtt_us(), 300u);
  t.arrived(200000, 65536, 1200);  // the next one, 800 us (the sender paused): the least stays
  EXPECT_EQ(t.rtt_us(), 300u);
  t.arrived(200000 + 65536, 65536, 1300);  // 100 us: lower
  EXPECT_EQ(t.rtt_us(), 100u);
}

TEST(RcvBufTuner, GrowsToTwiceARoundTripsReadsWithinItsBound) {
  RcvBufTuner t;
  t.start(0, kMss, 0);
  t.arrived(0, 100, 0);
  t.arrived(100, 100, 100);  // round trip 100 us
  // 20 KB read in one round trip (more than the ten segments it began
  // from): at least twice that, plus 16 segments.
  const uint32_t grown = t.read(20000, 65536, 8 << 20, kMss, 150);
  EXPECT_GE(grown, 2u * 20000 + 16 * kMss);
  EXPECT_GT(grown, 65536u);
  EXPECT_LT(grown, 8u << 20);
  // The same reads the next round trip: no further growth.
  EXPECT_EQ(t.read(40000, grown, 8 << 20, kMss, 300), grown);
  // Reading sped up a hundredfold: more, but never past the bound.
  EXPECT_EQ(t.read(40000 + (1 << 22), grown, 1 << 21, kMss, 450), 1u << 21);
}

TEST(RcvBufTuner, NeverShrinksNorGrowsWithoutABound) {
  RcvBufTuner t;
  t.start(0, kMss, 0);
  t.arrived(0, 100, 0);
  t.arrived(100, 100, 100);
  EXPECT_EQ(t.read(1 << 20, 65536, 0, kMss, 200), 65536u);  // SO_RCVBUF set: the bound is 0
  RcvBufTuner u;
  u.start(0, kMss, 0);
  u.arrived(0, 100, 0);
  u.arrived(100, 100, 100);
  EXPECT_EQ(u.read(1000, 1 << 20, 8 << 20, kMss, 200), 1u << 20);  // little read: kept
  // Within a round trip: nothing decided yet.
  EXPECT_EQ(u.read(1 << 22, 1 << 20, 8 << 20, kMss, 250), 1u << 20);
}

}  // namespace
}  // namespace ss::net::tcp
