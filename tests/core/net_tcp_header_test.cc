// The TCP header and sequence arithmetic (core/net/tcp): a header written
// and read back, the checksum against a slow reference over a pseudo-
// header built by hand (IPv4 and IPv6), refused headers, and comparisons
// across the 2^32 wrap.
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "core/net/tcp/header.h"
#include "core/net/tcp/seq.h"
#include "tests/core/net_frame_util.h"

namespace ss::net::tcp {
namespace {

using test::Bytes;
using test::ref_sum;

Bytes segment(const Header& h, size_t options_len, size_t data_len) {
  Bytes s(kHeaderLen + options_len + data_len);
  write_header(s.data(), h, options_len);
  for (size_t i = 0; i < options_len; i++) s[kHeaderLen + i] = 1;  // NOPs
  for (size_t i = 0; i < data_len; i++)
    s[kHeaderLen + options_len + i] = static_cast<uint8_t>(i * 7);
  return s;
}

TEST(NetTcpHeader, WrittenThenParsed) {
  Header h;
  h.src_port = 40000;
  h.dst_port = 80;
  h.seq = 0xfffffff0;
  h.ack = 0x12345678;
  h.flags = kAck | kPsh;
  h.window = 502;
  Bytes s = segment(h, 12, 5);
  Header got;
  std::span<const uint8_t> data;
  ASSERT_EQ(parse_header(s, &got, &data), HeaderVerdict::kOk);
  EXPECT_EQ(got.src_port, 40000);
  EXPECT_EQ(got.dst_port, 80);
  EXPECT_EQ(got.seq, 0xfffffff0u);
  EXPECT_EQ(got.ack, 0x12345678u);
  EXPECT_EQ(got.flags, kAck | kPsh);
  EXPECT_EQ(got.window, 502);
  EXPECT_EQ(got.options.size(), 12u);
  EXPECT_EQ(got.options.data(), s.data() + kHeaderLen);
  EXPECT_EQ(data.size(), 5u);
  EXPECT_EQ(data.data(), s.data() + 32);
  EXPECT_EQ(HeaderView{s.data()}.header_len(), 32u);
}

TEST(NetTcpHeader, RefusedWhenShortOrTheDataOffsetIsWrong) {
  Header got;
  std::span<const uint8_t> data;
  Bytes s = segment(Header{}, 0, 0);
  EXPECT_EQ(parse_header(std::span<const uint8_t>(s).first(19), &got, &data),
            HeaderVerdict::kShort);
  s[kDataOffsetOffset] = 4 << 4;  // 16 bytes: below the fixed header
  EXPECT_EQ(parse_header(s, &got, &data), HeaderVerdict::kBadDataOffset);
  s[kDataOffsetOffset] = 15 << 4;  // 60 bytes in a 20-byte segment
  EXPECT_EQ(parse_header(s, &got, &data), HeaderVerdict::kBadDataOffset);
  s.resize(60);
  EXPECT_EQ(parse_header(s, &got, &data), HeaderVerdict::kOk);
  EXPECT_EQ(got.options.size(), 40u);
  EXPECT_TRUE(data.empty());
}

// The checksum of an IP payload the slow way, its pseudo-header built
// here (RFC 9293 §3.1; RFC 8200 §8.1).
uint16_t reference_checksum(const Bytes& src, const Bytes& dst, const Bytes& seg) {
  Bytes ph(src);
  ph.insert(ph.end(), dst.begin(), dst.end());
  if (src.size() == 4) {
    ph.insert(ph.end(), {0, kIpProtoTcp, static_cast<uint8_t>(seg.size() >> 8),
                         static_cast<uint8_t>(seg.size())});
  } else {
    ph.insert(ph.end(), {0, 0, static_cast<uint8_t>(seg.size() >> 8),
                         static_cast<uint8_t>(seg.size()), 0, 0, 0, kIpProtoTcp});
  }
  Bytes all(ph);
  all.insert(all.end(), seg.begin(), seg.end());
  return static_cast<uint16_t>(~ref_sum(all.data(), all.size()));
}

TEST(NetTcpHeader, ChecksumMatchesTheReferenceAndCatchesAFlippedBit) {
  const Bytes v4s = {10, 0, 0, 1}, v4d = {10, 0, 0, 2};
  Bytes v6s(16, 0), v6d(16, 0);
  v6s[0] = v6d[0] = 0xfd;
  v6s[15] = 1;
  v6d[15] = 2;
  for (size_t data_len : {0, 1, 2, 1447, 1448}) {
    for (int v : {4, 6}) {
      const Bytes& src = v == 4 ? v4s : v6s;
      const Bytes& dst = v == 4 ? v4d : v6d;
      Header h;
      h.src_port = 1234;
      h.dst_port = 5678;
      h.seq = 99;
      h.flags = kAck;
      Bytes s = segment(h, 4, data_len);
      fill_checksum(static_cast<uint8_t>(v), src.data(), dst.data(), s);
      const uint16_t got = HeaderView{s.data()}.checksum();
      test::put16(s, kChecksumOffset, 0);
      EXPECT_EQ(got, reference_checksum(src, dst, s)) << "v" << v << " data " << data_len;
      test::put16(s, kChecksumOffset, got);
      EXPECT_TRUE(checksum_ok(static_cast<uint8_t>(v), src.data(), dst.data(), s));
      s[s.size() - 1] ^= 0x10;
      EXPECT_FALSE(checksum_ok(static_cast<uint8_t>(v), src.data(), dst.data(), s));
      Bytes other_dst(dst);
      other_dst.back() ^= 1;
      EXPECT_FALSE(checksum_ok(static_cast<uint8_t>(v), src.data(), other_dst.data(), s));
    }
  }
}

TEST(NetTcpSeq, ComparisonsHoldAcrossTheWrap) {
  EXPECT_TRUE(seq_lt(1, 2));
  EXPECT_TRUE(seq_lt(0xfffffff0, 0x10));  // 0x10 is 32 ahead, past the wrap
  EXPECT_FALSE(seq_lt(0x10, 0xfffffff0));
  EXPECT_TRUE(seq_le(5, 5));
  EXPECT_FALSE(seq_lt(5, 5));
  EXPECT_TRUE(seq_gt(0x80000000 - 1, 0));
  EXPECT_TRUE(seq_lt(0x80000001, 0));  // more than 2^31 ahead is behind
  EXPECT_EQ(seq_max(0xfffffff0, 0x10), 0x10u);
  EXPECT_EQ(seq_min(0xfffffff0, 0x10), 0xfffffff0u);
  EXPECT_TRUE(seq_in(0x5, 0xfffffffe, 10));
  EXPECT_FALSE(seq_in(0x8, 0xfffffffe, 10));
  EXPECT_FALSE(seq_in(7, 7, 0));  // an empty window holds nothing
  EXPECT_TRUE(seq_in(7, 7, 1));
}

}  // namespace
}  // namespace ss::net::tcp
