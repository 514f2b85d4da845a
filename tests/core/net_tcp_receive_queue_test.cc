// The receive queue: tiny in-order segments copied behind the last one
// (their frames go back at once), out-of-order ones held once despite
// overlaps and delivered in order.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "core/net/tcp/receive_queue.h"
#include "tests/core/mem_test_pool.h"

namespace ss::net::tcp {
namespace {

mem::Buffer bytes(mem::Pool& pool, const std::string& s) {
  mem::Buffer b = pool.get();
  EXPECT_TRUE(b) << "the pool ran out";
  if (!b) return b;
  b.set_size(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

std::string read_all(ReceiveQueue& q) {
  std::string out(q.readable(), '\0');
  q.copy_out({reinterpret_cast<uint8_t*>(out.data()), out.size()}, false);
  return out;
}

TEST(TcpReceiveQueue, TinySegmentsDoNotPinAFrameEach) {
  auto pool = mem::make_pool(2048, 16, 1, 0, mem::Backing::kPrivate);
  ReceiveQueue q;
  std::string want;
  for (int i = 0; i < 1000; i++) {  // 1000 one-byte segments, 16 frames
    const std::string one(1, static_cast<char>('a' + i % 26));
    q.push(bytes(*pool, one));
    want += one;
  }
  EXPECT_EQ(q.readable(), 1000u);
  EXPECT_EQ(read_all(q), want);
}

TEST(TcpReceiveQueue, OverlapsAreHeldOnceAndDeliveredInOrder) {
  auto pool = mem::make_pool(2048, 16, 1, 0, mem::Backing::kPrivate);
  ReceiveQueue q;
  bool refused = false;
  EXPECT_EQ(q.hold(110, bytes(*pool, "KLMNOPQRST"), &refused), 10u);       // [110, 120)
  EXPECT_EQ(q.hold(105, bytes(*pool, "FGHIJKLMNOPQRSTUVWXY"), &refused), 10u);  // [105, 125): 10 new
  EXPECT_EQ(q.hold(112, bytes(*pool, "MNO"), &refused), 0u);              // all held already
  EXPECT_FALSE(refused);
  EXPECT_EQ(q.held_bytes(), 20u);
  q.push(bytes(*pool, "ABCDE"));  // [100, 105) in order
  EXPECT_EQ(q.promote(105), 125u);
  EXPECT_EQ(q.held_bytes(), 0u);
  EXPECT_EQ(read_all(q), "ABCDEFGHIJKLMNOPQRSTUVWXY");
}

}  // namespace
}  // namespace ss::net::tcp
