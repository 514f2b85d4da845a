// Congestion control (core/net/tcp/congestion.*): RFC 6928's initial
// window, NewReno's slow start (byte counting, at most two segments an
// ACK) and avoidance (a segment a window), the cuts on recovery and on
// the RTO; CUBIC's curve after a loss (below W_max before K, past it
// after, never more than 1.5x a round), its cut to 0.7x; no control.
#include <cmath>

#include <gtest/gtest.h>

#include "core/net/tcp/congestion.h"

namespace ss::net::tcp {
namespace {

constexpr uint32_t kMss = 1000;

TEST(NetTcpCongestion, InitialWindowRfc6928) {
  EXPECT_EQ(initial_window(1460), 14600u);
  EXPECT_EQ(initial_window(536), 5360u);
  EXPECT_EQ(initial_window(9000), 18000u);
  EXPECT_EQ(initial_window(100), 1000u);
}

TEST(NetTcpCongestion, NewRenoSlowStartThenAvoidance) {
  auto cc = make_congestion_control(CcAlgo::kNewReno, kMss);
  ASSERT_EQ(cc->cwnd(), 10 * kMss);
  EXPECT_TRUE(cc->in_slow_start());
  cc->on_ack(kMss, 0, 0);
  EXPECT_EQ(cc->cwnd(), 11 * kMss);
  cc->on_ack(5 * kMss, 0, 0);  // a stretch ACK: two segments at most
  EXPECT_EQ(cc->cwnd(), 13 * kMss);
  cc->on_recovery_start(20 * kMss, 0);
  EXPECT_EQ(cc->ssthresh(), 10 * kMss);
  EXPECT_EQ(cc->cwnd(), 10 * kMss);
  cc->on_recovery_end();
  EXPECT_EQ(cc->cwnd(), 10 * kMss);
  EXPECT_FALSE(cc->in_slow_start());
  for (int i = 0; i < 9; i++) cc->on_ack(kMss, 0, 0);
  EXPECT_EQ(cc->cwnd(), 10 * kMss);  // a window not yet acknowledged
  cc->on_ack(kMss, 0, 0);
  EXPECT_EQ(cc->cwnd(), 11 * kMss);
}

TEST(NetTcpCongestion, NewRenoRtoLossWindowAndFloor) {
  auto cc = make_congestion_control(CcAlgo::kNewReno, kMss);
  cc->on_rto(3 * kMss, 0);
  EXPECT_EQ(cc->cwnd(), kMss);
  EXPECT_EQ(cc->ssthresh(), 2 * kMss);  // never below two segments
  cc->on_ack(kMss, 0, 0);
  EXPECT_EQ(cc->cwnd(), 2 * kMss);  // slow start up to ssthresh
  cc->on_ack(kMss, 0, 0);
  EXPECT_EQ(cc->cwnd(), 2 * kMss);  // then a window per segment
}

// One ACK per round of cwnd bytes, every `rtt_us`, for `rounds`.
void rounds(CongestionControl& cc, uint64_t* now, uint64_t rtt_us, int n) {
  for (int i = 0; i < n; i++) {
    const uint32_t before = cc.cwnd();
    cc.on_ack(before, *now, rtt_us);
    *now += rtt_us;
    ASSERT_GE(cc.cwnd(), before);
    ASSERT_LE(cc.cwnd(), before + before / 2 + kMss) << "more than 1.5x in a round";
  }
}

TEST(NetTcpCongestion, CubicCurveAfterALoss) {
  auto cc = make_congestion_control(CcAlgo::kCubic, kMss);
  uint64_t now = 1;
  const uint64_t rtt = 100'000;  // 100 ms: the cubic curve, not Reno, dominates
  // Up to 100 segments, then a loss.
  while (cc->cwnd() < 100 * kMss) cc->on_ack(2 * kMss, now, rtt);
  const uint32_t w_max = cc->cwnd();
  cc->on_recovery_start(w_max, now);
  EXPECT_EQ(cc->ssthresh(), static_cast<uint32_t>(w_max * 0.7));
  EXPECT_EQ(cc->cwnd(), cc->ssthresh());
  cc->on_recovery_end();
  EXPECT_EQ(cc->cwnd(), cc->ssthresh());
  // K = cbrt(W_max (1 - beta) / C) seconds, W in segments.
  const double k_s = std::cbrt(w_max / double(kMss) * 0.3 / 0.4);
  const int k_rounds = static_cast<int>(k_s * 1e6 / rtt);
  rounds(*cc, &now, rtt, k_rounds / 2);
  EXPECT_LT(cc->cwnd(), w_max) << "concave: still below W_max halfway to K";
  EXPECT_GT(cc->cwnd(), static_cast<uint32_t>(w_max * 0.7)) << "but growing";
  rounds(*cc, &now, rtt, k_rounds / 2 + 2);
  EXPECT_NEAR(double(cc->cwnd()), double(w_max), 0.1 * w_max) << "at K: about W_max";
  rounds(*cc, &now, rtt, k_rounds);
  EXPECT_GT(cc->cwnd(), w_max + 10 * kMss) << "convex: past W_max after K";
}

TEST(NetTcpCongestion, CubicRtoCutsFromTheWindow) {
  auto cc = make_congestion_control(CcAlgo::kCubic, kMss);
  cc->on_rto(5 * kMss, 0);
  EXPECT_EQ(cc->cwnd(), kMss);
  EXPECT_EQ(cc->ssthresh(), 7 * kMss);  // 0.7 of the window (10), not of the flight
}

TEST(NetTcpCongestion, NoneKeepsNoWindow) {
  auto cc = make_congestion_control(CcAlgo::kNone, kMss);
  EXPECT_EQ(cc->cwnd(), UINT32_MAX);
  cc->on_rto(kMss, 0);
  cc->on_recovery_start(kMss, 0);
  EXPECT_EQ(cc->cwnd(), UINT32_MAX);
  EXPECT_FALSE(cc->in_slow_start());
}

}  // namespace
}  // namespace ss::net::tcp
