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
  uint32_t a_snd_buf = 0, b_rcv_buf = 0;
  uint8_t b_wscale = 0;  // what side 1 offered
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
  r.b_rcv_buf = b.info().rcv_buf;
  r.b_wscale = a.info().snd_wscale;
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

// The receive buffer grows with what the reader takes each round trip,
// up to rcv_buf_max (Linux's tcp_rmem autotuning), the window scale
// offered covering it; it stays put without one (SO_RCVBUF set).
TEST(TcpPair, ReceiveBufferGrowsWithTheReadsToItsBound) {
  Config ca, cb;
  ca.snd_buf_max = 4 << 20;
  cb.rcv_buf = 60000;
  const Result fixed = transfer({}, 8 << 20, ca, cb);
  EXPECT_EQ(fixed.b_rcv_buf, 60000u);
  EXPECT_EQ(fixed.b_wscale, 0u);
  cb.rcv_buf_max = 1 << 20;
  const Result grown = transfer({}, 8 << 20, ca, cb);
  EXPECT_EQ(grown.received, 8u << 20);
  EXPECT_TRUE(grown.intact);
  EXPECT_EQ(grown.b_rcv_buf, 1u << 20);  // a reader that keeps up reaches the bound
  EXPECT_EQ(grown.b_wscale, 5u);         // 0xffff << 5 covers 1 MiB
  EXPECT_LT(grown.end_us, fixed.end_us / 2);
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

// The receiver takes the data without a copy (lend) and holds it: the
// window it offers shrinks by what it holds and reaches zero, and the
// sender stalls (probing, nothing lost); once it gives the bytes back the
// window reopens and the transfer ends intact.
TEST(TcpPair, LentDataClosesTheWindowUntilReturned) {
  Config cb;
  cb.rcv_buf = 64 << 10;
  wire::Wire w({}, cb, {});
  Connection& a = w.end(0);
  Connection& b = w.end(1);
  constexpr uint64_t kTotal = 1 << 20;
  std::vector<uint8_t> buf(65536);
  std::vector<mem::Buffer> held;
  uint64_t sent = 0, received = 0, held_bytes = 0, most_held = 0;
  bool intact = true, eof = false, holding = true, a_closed = false;
  uint64_t stalled_at = 0;
  a.connect(1000, 0);
  w.run(600'000'000, [&] {
    while (sent < kTotal && a.writable()) {
      const size_t n = std::min<uint64_t>(buf.size(), kTotal - sent);
      for (size_t i = 0; i < n; i++) buf[i] = pattern(sent + i);
      const ssize_t k = a.send({buf.data(), n}, w.now());
      if (k <= 0) break;
      sent += static_cast<uint64_t>(k);
    }
    if (sent == kTotal && !a_closed && a.state() == State::kEstablished) {
      a.close(w.now());
      a_closed = true;
    }
    for (;;) {
      const size_t before = held.size();
      const ssize_t k = b.lend(8, &held, w.now(), false);
      if (k <= 0) {
        eof = eof || k == 0;
        break;
      }
      for (size_t j = before; j < held.size(); j++) {
        const auto* p = static_cast<const uint8_t*>(held[j].data());
        for (size_t i = 0; i < held[j].size(); i++)
          if (p[i] != pattern(received + i)) intact = false;
        received += held[j].size();
      }
      held_bytes += static_cast<uint64_t>(k);
    }
    most_held = std::max(most_held, held_bytes);
    // Held until the window has been shut for a second of the clock.
    if (holding && b.rcv_wnd() == 0 && !stalled_at) stalled_at = w.now();
    if (holding && stalled_at && w.now() - stalled_at > 1'000'000) holding = false;
    if (!holding && held_bytes) {
      held.clear();
      b.returned(held_bytes, w.now());
      held_bytes = 0;
    }
    if (eof && b.state() == State::kCloseWait) b.close(w.now());
    return !(a.state() == State::kTimeWait && b.state() == State::kClosed);
  });
  EXPECT_NE(stalled_at, 0u) << "the window never shut";
  EXPECT_LE(most_held, cb.rcv_buf);
  EXPECT_GE(most_held, cb.rcv_buf - 2 * 1460u) << "held " << most_held;
  EXPECT_EQ(received, kTotal);
  EXPECT_TRUE(intact);
  EXPECT_TRUE(eof);
  EXPECT_GT(a.counters().zero_window_probes, 0u);
  EXPECT_EQ(a.counters().rto_expiries, 0u);
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
    printf(
        "seed %u: %lu dropped, %lu retransmitted, %lu duplicates, %lu out of order, "
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
