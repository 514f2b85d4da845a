// TCP options (core/net/tcp/options.*): Linux's SYN options read, every
// combination written and read back, SACK blocks trimmed to fit, and the
// hostile cases: bad and truncated lengths, SYN-only options elsewhere, a
// window scale over 14, and random bytes (read only inside, never more
// than four SACK blocks).
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/net/tcp/header.h"
#include "core/net/tcp/options.h"

namespace ss::net::tcp {
namespace {

using Bytes = std::vector<uint8_t>;

OptionsVerdict parse(const Bytes& b, bool syn, Options* o) {
  return parse_options(std::span<const uint8_t>(b.data(), b.size()), syn, o);
}

TEST(NetTcpOptions, LinuxSynOptions) {
  // MSS 1460, SACK permitted, timestamps, NOP, window scale 7: what a
  // Linux 6.x client puts on its SYN.
  const Bytes b = {2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 1, 2, 0, 0, 0, 0, 1, 3, 3, 7};
  Options o;
  ASSERT_EQ(parse(b, true, &o), OptionsVerdict::kOk);
  EXPECT_TRUE(o.has_mss);
  EXPECT_EQ(o.mss, 1460);
  EXPECT_TRUE(o.sack_permitted);
  EXPECT_TRUE(o.has_ts);
  EXPECT_EQ(o.ts_val, 258u);
  EXPECT_EQ(o.ts_ecr, 0u);
  EXPECT_TRUE(o.has_wscale);
  EXPECT_EQ(o.wscale, 7);
  EXPECT_EQ(o.sack_count, 0);
}

TEST(NetTcpOptions, EveryCombinationWrittenReadsBack) {
  for (int mask = 0; mask < 16; mask++) {
    Options o;
    o.has_mss = mask & 1;
    o.mss = 8960;
    o.sack_permitted = mask & 2;
    o.has_ts = mask & 4;
    o.ts_val = 0xdeadbeef;
    o.ts_ecr = 42;
    o.has_wscale = mask & 8;
    o.wscale = 9;
    uint8_t buf[kMaxOptionsLen];
    const size_t n = write_options(o, buf);
    EXPECT_EQ(n % 4, 0u) << mask;
    EXPECT_LE(n, 20u) << mask;
    Options got;
    ASSERT_EQ(parse_options({buf, n}, true, &got), OptionsVerdict::kOk) << mask;
    EXPECT_EQ(got.has_mss, o.has_mss);
    EXPECT_EQ(got.sack_permitted, o.sack_permitted);
    EXPECT_EQ(got.has_ts, o.has_ts);
    EXPECT_EQ(got.has_wscale, o.has_wscale);
    EXPECT_EQ(got.mss, o.has_mss ? 8960 : 0);
    EXPECT_EQ(got.ts_val, o.has_ts ? 0xdeadbeefu : 0u);
    EXPECT_EQ(got.ts_ecr, o.has_ts ? 42u : 0u);
    EXPECT_EQ(got.wscale, o.has_wscale ? 9 : 0);
  }
}

TEST(NetTcpOptions, SackBlocksTrimmedToFitFromTheLast) {
  for (bool ts : {false, true}) {
    Options o;
    o.has_ts = ts;
    o.sack_count = 4;
    for (uint32_t b = 0; b < 4; b++) o.sack[b] = {1000 * (b + 1), 1000 * (b + 1) + 500};
    uint8_t buf[kMaxOptionsLen];
    const size_t n = write_options(o, buf);
    EXPECT_LE(n, kMaxOptionsLen);
    Options got;
    ASSERT_EQ(parse_options({buf, n}, false, &got), OptionsVerdict::kOk);
    EXPECT_EQ(got.sack_count, ts ? 3 : 4);
    EXPECT_EQ(got.has_ts, ts);
    for (uint32_t b = 0; b < got.sack_count; b++) {
      EXPECT_EQ(got.sack[b].left, 1000 * (b + 1));
      EXPECT_EQ(got.sack[b].right, 1000 * (b + 1) + 500);
    }
  }
}

TEST(NetTcpOptions, SynOnlyOptionsElsewhereAreIgnoredTheRestKept) {
  const Bytes b = {2, 4, 0x05, 0xb4, 1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 3};
  Options o;
  EXPECT_EQ(parse(b, false, &o), OptionsVerdict::kIgnored);
  EXPECT_FALSE(o.has_mss);
  EXPECT_TRUE(o.has_ts);
  EXPECT_EQ(o.ts_val, 9u);
  // And SACK blocks on a SYN.
  const Bytes s = {1, 1, 5, 10, 0, 0, 0, 1, 0, 0, 0, 2};
  EXPECT_EQ(parse(s, true, &o), OptionsVerdict::kIgnored);
  EXPECT_EQ(o.sack_count, 0);
}

TEST(NetTcpOptions, WindowScaleOver14IsTakenAs14) {
  const Bytes b = {1, 3, 3, 200};
  Options o;
  EXPECT_EQ(parse(b, true, &o), OptionsVerdict::kOk);
  EXPECT_EQ(o.wscale, kMaxWscale);
}

TEST(NetTcpOptions, WrongLengthsOfKnownKindsAreIgnored) {
  Options o;
  EXPECT_EQ(parse({2, 5, 0, 0, 0, 1, 1, 1}, true, &o), OptionsVerdict::kIgnored);  // MSS of 5
  EXPECT_FALSE(o.has_mss);
  EXPECT_EQ(parse({5, 11, 0, 0, 0, 1, 0, 0, 0, 2, 0}, false, &o), OptionsVerdict::kIgnored);
  EXPECT_EQ(o.sack_count, 0);
  EXPECT_EQ(parse({8, 6, 0, 0, 0, 1}, false, &o), OptionsVerdict::kIgnored);  // short timestamps
  EXPECT_FALSE(o.has_ts);
}

TEST(NetTcpOptions, BadLengthsStopParsingWhatCameBeforeKept) {
  Options o;
  EXPECT_EQ(parse({1, 3, 3, 5, 30, 0, 1, 1}, true, &o), OptionsVerdict::kMalformed);  // length 0
  EXPECT_TRUE(o.has_wscale);
  EXPECT_EQ(parse({1, 3, 3, 5, 30, 1}, true, &o), OptionsVerdict::kMalformed);   // length 1
  EXPECT_EQ(parse({8, 10, 0, 0, 0, 1}, false, &o), OptionsVerdict::kMalformed);  // past the end
  EXPECT_FALSE(o.has_ts);
  EXPECT_EQ(parse({1, 1, 8}, false, &o), OptionsVerdict::kMalformed);  // no length byte
}

TEST(NetTcpOptions, UnknownKindsSkippedEndStops) {
  Options o;
  EXPECT_EQ(parse({30, 4, 9, 9, 1, 3, 3, 2}, true, &o), OptionsVerdict::kOk);
  EXPECT_EQ(o.wscale, 2);
  EXPECT_EQ(parse({0, 3, 3, 2}, true, &o), OptionsVerdict::kOk);  // after End: padding
  EXPECT_FALSE(o.has_wscale);
  EXPECT_EQ(parse({}, true, &o), OptionsVerdict::kOk);
}

TEST(NetTcpOptions, RandomBytesAreReadOnlyInside) {
  std::mt19937 rng(29);
  for (int round = 0; round < 20000; round++) {
    // Exactly sized, so reading past the end is a heap overflow ASan sees.
    Bytes b(rng() % (kMaxOptionsLen + 1));
    for (auto& x : b) x = static_cast<uint8_t>(rng() % 4 ? rng() % 9 : rng());
    Options o;
    parse(b, round % 2, &o);
    ASSERT_LE(o.sack_count, kMaxSackBlocks);
    ASSERT_LE(o.wscale, kMaxWscale);
  }
}

}  // namespace
}  // namespace ss::net::tcp
