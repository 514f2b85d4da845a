// The retransmission timeout (core/net/tcp/rtt.*) against RFC 6298's
// formulas worked by hand: 1 s before a sample, the first and a later
// sample, the minimum and maximum, doubling on expiry, a new sample ending
// the back-off.
#include <gtest/gtest.h>

#include "core/net/tcp/rtt.h"

namespace ss::net::tcp {
namespace {

constexpr uint64_t kMs = 1000;

TEST(NetTcpRtt, OneSecondBeforeAnySample) {
  RttEstimator r(200 * kMs, 120'000 * kMs);
  EXPECT_FALSE(r.has_sample());
  EXPECT_EQ(r.rto_us(), 1000 * kMs);
}

TEST(NetTcpRtt, FirstAndLaterSamples) {
  RttEstimator r(200 * kMs, 120'000 * kMs);
  r.sample(100 * kMs);  // SRTT 100, RTTVAR 50, RTO 100 + 4 * 50
  EXPECT_EQ(r.srtt_us(), 100 * kMs);
  EXPECT_EQ(r.rttvar_us(), 50 * kMs);
  EXPECT_EQ(r.rto_us(), 300 * kMs);
  r.sample(200 * kMs);  // RTTVAR 3/4 * 50 + 1/4 * 100, then SRTT 7/8 * 100 + 1/8 * 200
  EXPECT_EQ(r.rttvar_us(), 62500u);
  EXPECT_EQ(r.srtt_us(), 112500u);
  EXPECT_EQ(r.rto_us(), 112500u + 4 * 62500u);
}

TEST(NetTcpRtt, BoundedByTheMinimumAndTheMaximum) {
  RttEstimator r(200 * kMs, 2000 * kMs);
  for (int i = 0; i < 50; i++) r.sample(10);  // 10 µs: far below the minimum
  EXPECT_EQ(r.rto_us(), 200 * kMs);
  RttEstimator low(5 * kMs, 2000 * kMs);  // a minimum of 5 ms (a setting)
  for (int i = 0; i < 50; i++) low.sample(1 * kMs);
  EXPECT_LT(low.rto_us(), 10 * kMs);
  EXPECT_GE(low.rto_us(), 5 * kMs);
  r.sample(5000 * kMs);
  EXPECT_EQ(r.rto_us(), 2000 * kMs);
  RttEstimator odd(300, 100);  // a maximum below the minimum: the minimum
  EXPECT_EQ(odd.rto_us(), 300u);
}

TEST(NetTcpRtt, DoublesOnExpiryUntilTheMaximumANewSampleResets) {
  RttEstimator r(200 * kMs, 1000 * kMs);
  r.sample(100 * kMs);
  ASSERT_EQ(r.rto_us(), 300 * kMs);
  r.back_off();
  EXPECT_EQ(r.rto_us(), 600 * kMs);
  r.back_off();
  EXPECT_EQ(r.rto_us(), 1000 * kMs);
  for (int i = 0; i < 100; i++) r.back_off();
  EXPECT_EQ(r.rto_us(), 1000 * kMs);
  EXPECT_LE(r.backoffs(), 3);
  r.sample(100 * kMs);
  EXPECT_EQ(r.backoffs(), 0);
  EXPECT_LT(r.rto_us(), 600 * kMs);
}

}  // namespace
}  // namespace ss::net::tcp
