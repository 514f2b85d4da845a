// Two of our connections across the fake wire (tcp_wire.h): a transfer
// with its bytes checked, clean and under injected loss, duplication and
// reordering, by seed; the closes end in TIME-WAIT and CLOSED; a single
// loss is repaired without an RTO.
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "tests/core/tcp_wire.h"

namespace ss::net::tcp {
namespace {

uint8_t pattern(uint64_t k) { return static_cast<uint8_t>((k * 2654435761u) >> 13); }

struct Result {
  uint64_t received = 0;
  bool intact = true, eof = false;
  State a_state = State::kClosed, b_state = State::kClosed;
  uint64_t dropped = 0, retransmits = 0, dup_segs = 0, ooo_segs = 0, end_us = 0;
  uint64_t rtos = 0, recoveries = 0;
  uint32_t a_snd_buf = 0;
};

// Side 0 connects and sends `total` bytes then closes; side 1 reads
// everything, sees the end of stream and closes.
Result transfer(const wire::Faults& f, uint64_t total, Config ca = {}, Config cb = {}) {
  wire::Wire w(ca, cb, f);
  Connection& a = w.end(0);
  Connection& b = w.end(1);
  // Side 1 "listens": the first SYN it sees opens it passively.
  uint64_t sent = 0;
  Result r;
  bool a_closed = false, b_closed = false, b_opened = false;
  std::vector<uint8_t> buf(65536);
  a.connect(1000, 0);
  (void)b;
  w.run(600'000'000, [&] {
    if (sent < total && a.writable()) {
      const size_t n = std::min<uint64_t>(buf.size(), total - sent);
      for (size_t i = 0; i < n; i++) buf[i] = pattern(sent + i);
      const ssize_t k = a.send({buf.data(), n}, w.now());
      if (k > 0) sent += static_cast<uint64_t>(k);
    }
    if (sent == total && !a_closed && a.state() == State::kEstablished) {
      a.close(w.now());
      a_closed = true;
    }
    b_opened = b_opened || b.state() != State::kClosed;  // side 1 opens on the SYN
    while (b_opened) {
      const ssize_t k = b.recv(buf, false, w.now());
      if (k <= 0) {
        if (k == 0) r.eof = true;
        break;
      }
      for (ssize_t i = 0; i < k; i++) {
        if (buf[i] != pattern(r.received + static_cast<uint64_t>(i))) r.intact = false;
      }
      r.received += static_cast<uint64_t>(k);
    }
    if (r.eof && !b_closed) {
      b.close(w.now());
      b_closed = true;
    }
    return !(a.state() == State::kTimeWait && b.state() == State::kClosed);
  });
  r.dropped = w.dropped();
  r.retransmits = a.counters().retrans_segs + b.counters().retrans_segs;
  r.dup_segs = b.counters().dup_segs;
  r.ooo_segs = b.counters().ooo_segs;
  r.end_us = w.now();
  r.rtos = a.counters().rto_expiries;
  r.recoveries = a.counters().sack_recoveries + a.counters().dupack_recoveries;
  r.a_snd_buf = a.info().snd_buf;
  r.a_state = a.state();
  r.b_state = b.state();
  return r;
}


TEST(TcpPair, CleanTransfer) {
  const Result r = transfer({}, 4 << 20);
  EXPECT_EQ(r.received, 4u << 20);
  EXPECT_TRUE(r.intact);
  EXPECT_TRUE(r.eof);
  EXPECT_EQ(r.a_state, State::kTimeWait);
  EXPECT_EQ(r.b_state, State::kClosed);
}

// The send buffer grows with the window up to snd_buf_max (Linux's
// tcp_wmem autotuning), and stays put without one (SO_SNDBUF set).
TEST(TcpPair, SendBufferGrowsWithTheWindowToItsBound) {
  Config ca;
  ca.snd_buf = 16384;
  const Result fixed = transfer({}, 4 << 20, ca);
  EXPECT_EQ(fixed.a_snd_buf, 16384u);
  ca.snd_buf_max = 256 << 10;
  const Result grown = transfer({}, 4 << 20, ca);
  EXPECT_EQ(grown.received, 4u << 20);
  EXPECT_TRUE(grown.intact);
  EXPECT_GT(grown.a_snd_buf, 16384u);
  EXPECT_LE(grown.a_snd_buf, 256u << 10);
  EXPECT_LT(grown.end_us, fixed.end_us);  // more in flight: sooner done
}

// One data segment lost mid-transfer: repaired by SACK recovery (or, to a
// peer without SACK, by the third duplicate ACK), never by the RTO.
TEST(TcpPair, SingleLossIsRepairedWithoutRto) {
  for (bool sack : {true, false}) {
    wire::Faults f;
    f.drop_rule = [](int side, uint64_t n) { return side == 0 && n == 20; };
    Config c;
    c.sack = sack;
    const Result r = transfer(f, 1 << 20, c, c);
    EXPECT_EQ(r.dropped, 1u);
    EXPECT_EQ(r.received, 1u << 20) << "sack " << sack;
    EXPECT_TRUE(r.intact) << "sack " << sack;
    EXPECT_EQ(r.recoveries, 1u) << "sack " << sack;
    EXPECT_EQ(r.rtos, 0u) << "sack " << sack;
  }
}

struct FaultCase {
  const char* name;
  double drop, duplicate, reorder;
  bool sack = true;
};

class TcpPairFaults : public testing::TestWithParam<FaultCase> {};

TEST_P(TcpPairFaults, TransferSurvives) {
  for (uint32_t seed = 1; seed <= 5; seed++) {
    wire::Faults f;
    f.drop = GetParam().drop;
    f.duplicate = GetParam().duplicate;
    f.reorder = GetParam().reorder;
    f.seed = seed;
    Config c;
    c.sack = GetParam().sack;
    const Result r = transfer(f, 1 << 20, c, c);
    EXPECT_EQ(r.received, 1u << 20) << "seed " << seed;
    EXPECT_TRUE(r.intact) << "seed " << seed;
    EXPECT_TRUE(r.eof) << "seed " << seed;
    EXPECT_EQ(r.a_state, State::kTimeWait) << "seed " << seed;
    EXPECT_EQ(r.b_state, State::kClosed) << "seed " << seed;
    // The faults happened and were recovered from.
    EXPECT_TRUE(f.drop == 0 || r.retransmits > 0) << "seed " << seed;
    EXPECT_TRUE(f.duplicate == 0 || r.dup_segs > 0) << "seed " << seed;
    EXPECT_TRUE(f.reorder == 0 || r.ooo_segs > 0) << "seed " << seed;
    printf("seed %u: %lu dropped, %lu retransmitted, %lu duplicates, %lu out of order, "
           "%lu recoveries, %lu RTOs, %.3f s\n",
           seed, (unsigned long)r.dropped, (unsigned long)r.retransmits, (unsigned long)r.dup_segs,
           (unsigned long)r.ooo_segs, (unsigned long)r.recoveries, (unsigned long)r.rtos,
           r.end_us / 1e6);
  }
}

INSTANTIATE_TEST_SUITE_P(Faults, TcpPairFaults,
                         testing::Values(FaultCase{"loss1", 0.01, 0, 0},
                                         FaultCase{"loss5", 0.05, 0, 0},
                                         FaultCase{"dup5", 0, 0.05, 0},
                                         FaultCase{"reorder5", 0, 0, 0.05},
                                         FaultCase{"mixed", 0.03, 0.03, 0.03},
                                         FaultCase{"loss5_nosack", 0.05, 0, 0, false},
                                         FaultCase{"mixed_nosack", 0.03, 0.03, 0.03, false}),
                         [](const testing::TestParamInfo<FaultCase>& p) { return p.param.name; });

}  // namespace
}  // namespace ss::net::tcp
