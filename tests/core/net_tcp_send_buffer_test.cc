// The send buffer's growth keeps what it holds in order, wrapped or not;
// the sent log finds the entries a retransmission or a SACK block covers
// anywhere in a long log.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/net/tcp/send_buffer.h"
#include "core/net/tcp/sent_log.h"

namespace ss::net::tcp {
namespace {

std::vector<uint8_t> bytes(size_t from, size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; i++) v[i] = static_cast<uint8_t>(from + i);
  return v;
}

TEST(TcpSendBuffer, GrowKeepsWrappedBytesInOrder) {
  SendBuffer b(8);
  ASSERT_EQ(b.append(bytes(0, 6)), 6u);
  b.consume(4);                          // head at 4
  ASSERT_EQ(b.append(bytes(6, 6)), 6u);  // wraps: bytes 4..11 held
  EXPECT_EQ(b.space(), 0u);
  b.grow(20);
  EXPECT_EQ(b.capacity(), 20u);
  EXPECT_EQ(b.size(), 8u);
  ASSERT_EQ(b.append(bytes(12, 12)), 12u);
  std::vector<uint8_t> out(20);
  b.copy_out(0, 20, out.data());
  EXPECT_EQ(out, bytes(4, 20));
  b.grow(10);  // smaller: nothing changes
  EXPECT_EQ(b.capacity(), 20u);
}

TEST(TcpSentLog, RetransmissionAndSackFindTheirEntries) {
  SentLog log;
  const uint32_t base = 0xfffff000;  // across the wrap
  for (uint32_t k = 0; k < 1000; k++)
    log.sent(base + k * 100, base + (k + 1) * 100, k, base + k * 100);
  ASSERT_EQ(log.size(), 1000u);
  const uint32_t snd_max = base + 1000 * 100;
  log.mark_lost(log.entries()[500]);
  EXPECT_EQ(log.lost_bytes(), 100u);
  log.sent(base + 500 * 100, base + 501 * 100, 5000, snd_max);  // sent again
  EXPECT_EQ(log.lost_bytes(), 0u);
  EXPECT_TRUE(log.entries()[500].retransmitted);
  EXPECT_FALSE(log.entries()[499].retransmitted);
  EXPECT_FALSE(log.entries()[501].retransmitted);
  EXPECT_EQ(log.entries()[500].sent_us, 5000u);
  SentSegment newest{};
  EXPECT_EQ(log.sack(base + 700 * 100, base + 703 * 100, &newest), 300u);
  EXPECT_EQ(log.sacked_count(), 3u);
  EXPECT_TRUE(log.entries()[700].sacked && log.entries()[702].sacked);
  EXPECT_FALSE(log.entries()[699].sacked || log.entries()[703].sacked);
  EXPECT_EQ(newest.seq, base + 702 * 100);
}

// SO_SNDBUF set lower keeps what is held and takes nothing more until it
// drains below; TIME-WAIT's release lets the ring go and keeps its size,
// and a buffer grown again after it works.
TEST(TcpSendBuffer, ResizedAndReleased) {
  SendBuffer b(8);
  const uint8_t data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(b.append(data), 8u);
  ASSERT_TRUE(b.resize(4));
  EXPECT_EQ(b.capacity(), 4u);
  EXPECT_EQ(b.space(), 0u);
  b.consume(6);
  EXPECT_EQ(b.space(), 2u);
  uint8_t out[2] = {};
  b.copy_out(0, 2, out);
  EXPECT_EQ(out[0], 7);
  EXPECT_EQ(out[1], 8);
  b.consume(2);
  b.release();
  EXPECT_EQ(b.capacity(), 4u);
  EXPECT_LE(b.space(), 1u);
  ASSERT_TRUE(b.resize(16));
  EXPECT_EQ(b.append(data), 8u);
  b.copy_out(7, 1, out);
  EXPECT_EQ(out[0], 8);
}

}  // namespace
}  // namespace ss::net::tcp
