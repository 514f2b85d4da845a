// Sequence ranges (core/net/tcp/seq_ranges.*): merging, trimming, the
// counts RFC 6675's IsLost() needs, across the 2^32 wrap and against a
// byte-per-sequence reference; and the SACK blocks a receiver reports
// (RFC 2018 §4: newest first; RFC 2883: a duplicate before them).
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/net/tcp/seq_ranges.h"

namespace ss::net::tcp {
namespace {

TEST(NetTcpSeqRanges, MergesWhatTouches) {
  SeqRanges s;
  s.add(10, 20);
  s.add(30, 40);
  EXPECT_EQ(s.size(), 2u);
  s.add(20, 30);  // adjacent on both sides
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].left, 10u);
  EXPECT_EQ(s[0].right, 40u);
  s.add(5, 15);
  s.add(35, 50);
  s.add(60, 60);  // empty: nothing
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s.bytes(), 45u);
  s.add(1, 100);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].left, 1u);
}

TEST(NetTcpSeqRanges, AcrossTheWrap) {
  SeqRanges s;
  s.add(0x10, 0x20);
  s.add(0xfffffff0, 0x10);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].left, 0xfffffff0u);
  EXPECT_EQ(s[0].right, 0x20u);
  EXPECT_EQ(s.bytes(), 0x30u);
  EXPECT_TRUE(s.contains(0xffffffff));
  EXPECT_TRUE(s.contains(0));
  EXPECT_FALSE(s.contains(0x20));
  s.trim_below(0x8);
  EXPECT_EQ(s[0].left, 0x8u);
  EXPECT_EQ(s.bytes(), 0x18u);
}

TEST(NetTcpSeqRanges, CountsForIsLost) {
  SeqRanges s;
  s.add(100, 200);
  s.add(300, 400);
  s.add(500, 600);
  EXPECT_EQ(s.bytes_from(150), 250u);
  EXPECT_EQ(s.ranges_from(150), 2u);
  EXPECT_EQ(s.ranges_from(100), 3u);
  EXPECT_EQ(s.bytes_from(600), 0u);
  EXPECT_EQ(s.highest(7), 600u);
  s.trim_below(350);
  EXPECT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].left, 350u);
  s.trim_below(1000);
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.highest(7), 7u);
}

TEST(NetTcpSeqRanges, RandomRunMatchesAByteReference) {
  std::mt19937 rng(41);
  constexpr uint32_t kBase = 0xfffff000, kSpan = 8192;  // crosses the wrap
  for (int round = 0; round < 200; round++) {
    SeqRanges s;
    std::vector<bool> ref(kSpan, false);
    uint32_t floor = 0;  // offsets below it trimmed
    for (int op = 0; op < 60; op++) {
      if (rng() % 8 == 0) {
        floor = std::min<uint32_t>(kSpan, floor + rng() % 300);
        s.trim_below(kBase + floor);
        for (uint32_t k = 0; k < floor; k++) ref[k] = false;
      } else {
        const uint32_t l = floor + rng() % (kSpan - floor + 1);
        const uint32_t r = std::min<uint32_t>(kSpan, l + rng() % 400);
        s.add(kBase + l, kBase + r);
        for (uint32_t k = l; k < r; k++) ref[k] = true;
      }
      uint64_t bytes = 0;
      for (uint32_t k = 0; k < kSpan; k += 7) ASSERT_EQ(s.contains(kBase + k), ref[k]) << k;
      for (bool b : ref) bytes += b;
      ASSERT_EQ(s.bytes(), bytes);
      for (size_t i = 1; i < s.size(); i++)
        ASSERT_NE(s[i - 1].right, s[i].left) << "adjacent, unmerged";
    }
  }
}

TEST(NetTcpSackReport, NewestFirstDuplicateBeforeAll) {
  SeqRanges held;
  SackReport rep;
  for (uint32_t seq : {400u, 600u, 200u}) {
    held.add(seq, seq + 100);
    rep.arrived(seq);
  }
  Options o;
  rep.fill(held, 0, 0, &o);
  ASSERT_EQ(o.sack_count, 3);
  EXPECT_EQ(o.sack[0].left, 200u);
  EXPECT_EQ(o.sack[1].left, 600u);
  EXPECT_EQ(o.sack[2].left, 400u);
  rep.fill(held, 100, 150, &o);  // a duplicate below rcv_nxt
  ASSERT_EQ(o.sack_count, 4);
  EXPECT_EQ(o.sack[0].left, 100u);
  EXPECT_EQ(o.sack[0].right, 150u);
  EXPECT_EQ(o.sack[1].left, 200u);
  // 200..300 delivered in order: its arrival is forgotten.
  held.trim_below(300);
  rep.fill(held, 0, 0, &o);
  ASSERT_EQ(o.sack_count, 2);
  EXPECT_EQ(o.sack[0].left, 600u);
  EXPECT_EQ(o.sack[1].left, 400u);
  // A segment joining two ranges reports the merged one first.
  held.add(500, 600);
  rep.arrived(500);
  rep.fill(held, 0, 0, &o);
  ASSERT_EQ(o.sack_count, 1);
  EXPECT_EQ(o.sack[0].left, 400u);
  EXPECT_EQ(o.sack[0].right, 700u);
}

TEST(NetTcpSackReport, AtMostFourBlocks) {
  SeqRanges held;
  SackReport rep;
  for (uint32_t k = 0; k < 10; k++) {
    held.add(1000 * k, 1000 * k + 10);
    rep.arrived(1000 * k);
  }
  Options o;
  rep.fill(held, 0, 0, &o);
  ASSERT_EQ(o.sack_count, 4);
  EXPECT_EQ(o.sack[0].left, 9000u);
  EXPECT_EQ(o.sack[3].left, 6000u);
}

}  // namespace
}  // namespace ss::net::tcp
