// The receive queue: tiny in-order segments copied behind the last one
// (their frames go back at once), out-of-order ones held once despite
// overlaps and delivered in order, as many as the caller allows; views
// taken out whole; a receive callback's offers (kept, dropped, taken) and
// the reads they gate.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

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
  out.resize(q.copy_out({reinterpret_cast<uint8_t*>(out.data()), out.size()}, false));
  return out;
}

std::string text(const mem::Buffer& b) {
  return std::string(static_cast<const char*>(b.data()), b.size());
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
  EXPECT_EQ(q.hold(110, bytes(*pool, "KLMNOPQRST"), 8, &refused), 10u);  // [110, 120)
  EXPECT_EQ(q.hold(105, bytes(*pool, "FGHIJKLMNOPQRSTUVWXY"), 8, &refused),
            10u);                                                // [105, 125): 10 new
  EXPECT_EQ(q.hold(112, bytes(*pool, "MNO"), 8, &refused), 0u);  // all held already
  EXPECT_FALSE(refused);
  EXPECT_EQ(q.held_bytes(), 20u);
  q.push(bytes(*pool, "ABCDE"));  // [100, 105) in order
  EXPECT_EQ(q.promote(105), 125u);
  EXPECT_EQ(q.held_bytes(), 0u);
  EXPECT_EQ(read_all(q), "ABCDEFGHIJKLMNOPQRSTUVWXY");
}

// A loss in a large window is followed by a window of segments: the
// caller's bound (not a fixed one) decides, in any arrival order.
TEST(TcpReceiveQueue, HeldUpToTheGivenCountInAnyOrder) {
  constexpr int kSegs = 2000;
  auto pool = mem::make_pool(2048, kSegs + 16, 1, 0, mem::Backing::kPrivate);
  ReceiveQueue q;
  std::vector<int> order(kSegs);
  for (int i = 0; i < kSegs; i++) order[i] = (i * 7919) % kSegs;  // a permutation
  std::string want = "A";
  for (int i = 0; i < kSegs; i++) want += static_cast<char>('a' + i % 26);
  bool refused = false;
  for (int i : order) {
    const std::string one(1, static_cast<char>('a' + i % 26));
    ASSERT_EQ(q.hold(101 + i, bytes(*pool, one), kSegs, &refused), 1u) << i;
  }
  EXPECT_FALSE(refused);
  EXPECT_EQ(q.hold(101 + kSegs, bytes(*pool, "z"), kSegs, &refused), 0u);
  EXPECT_TRUE(refused) << "one more than the bound";
  refused = false;
  EXPECT_EQ(q.hold(150, bytes(*pool, "x"), kSegs, &refused), 0u);
  EXPECT_FALSE(refused) << "held already: nothing to refuse";
  q.push(bytes(*pool, "A"));  // [100, 101) in order
  EXPECT_EQ(q.promote(101), 101u + kSegs);
  EXPECT_EQ(read_all(q), want);
}

TEST(TcpReceiveQueue, ViewsAreTakenWhole) {
  auto pool = mem::make_pool(2048, 16, 1, 0, mem::Backing::kPrivate);
  ReceiveQueue q;
  q.push(bytes(*pool, std::string(600, 'a')));
  q.push(bytes(*pool, std::string(700, 'b')));
  q.push(bytes(*pool, std::string(800, 'c')));
  std::vector<mem::Buffer> out;
  EXPECT_EQ(q.take(2, &out), 1300u);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(text(out[1]), std::string(700, 'b'));
  EXPECT_EQ(q.readable(), 800u);
}

// Each view goes to the callback once, in order; reads see only what it
// kept, a view it dropped or took leaves the queue, and small segments
// are not gathered into a frame it shares.
TEST(TcpReceiveQueue, OffersGateTheReads) {
  auto pool = mem::make_pool(2048, 16, 1, 0, mem::Backing::kPrivate);
  ReceiveQueue q;
  q.push(bytes(*pool, std::string(600, 'a')));
  q.push(bytes(*pool, std::string(600, 'b')));
  q.push(bytes(*pool, std::string(600, 'c')));
  mem::Buffer v = q.next_offer();
  EXPECT_EQ(text(v), std::string(600, 'a'));
  EXPECT_FALSE(q.next_offer()) << "one offer at a time";
  EXPECT_EQ(q.readable_now(), 0u);
  q.settle(ReceiveQueue::Offer::kKeep, v.size());
  v.reset();
  EXPECT_EQ(q.readable_now(), 600u);
  v = q.next_offer();
  EXPECT_EQ(text(v), std::string(600, 'b'));
  q.settle(ReceiveQueue::Offer::kDrop, v.size());
  v = q.next_offer();
  EXPECT_EQ(text(v), std::string(600, 'c'));
  q.push(bytes(*pool, "x"));                       // small: not into the frame the callback holds
  q.settle(ReceiveQueue::Offer::kTake, v.size());  // the view is the caller's
  EXPECT_EQ(text(v), std::string(600, 'c'));
  EXPECT_EQ(q.readable(), 601u);  // 'a' kept, 'x' not offered yet
  EXPECT_FALSE(q.offered_all());
  EXPECT_EQ(read_all(q), std::string(600, 'a'));
  mem::Buffer x = q.next_offer();
  EXPECT_EQ(text(x), "x");
  q.settle(ReceiveQueue::Offer::kKeep, 1);
  EXPECT_TRUE(q.offered_all());
  EXPECT_EQ(read_all(q), "x");
  q.push(bytes(*pool, "after"));
  EXPECT_EQ(q.readable_now(), 0u);
  q.stop_offering();  // no callback any more
  EXPECT_EQ(read_all(q), "after");
}

// The callback unregistered while a view is out (from inside it, or from
// another thread): the view's verdict still applies to its own bytes, and
// a callback registered later sees only what comes after.
TEST(TcpReceiveQueue, AStopWhileAViewIsOutWaitsForItsSettle) {
  auto pool = mem::make_pool(2048, 16, 1, 0, mem::Backing::kPrivate);
  ReceiveQueue q;
  q.push(bytes(*pool, std::string(600, 'a')));
  q.push(bytes(*pool, std::string(600, 'b')));
  mem::Buffer v = q.next_offer();
  ASSERT_EQ(text(v), std::string(600, 'a'));
  q.stop_offering();
  EXPECT_EQ(q.readable_now(), 0u) << "the view out is not readable yet";
  q.settle(ReceiveQueue::Offer::kTake, v.size());
  EXPECT_EQ(q.readable_now(), 600u);  // stopped: 'b' readable, never offered
  q.push(bytes(*pool, std::string(600, 'c')));
  EXPECT_FALSE(q.next_offer()) << "what was readable is not offered again";
  EXPECT_EQ(q.readable_now(), 1200u);
  q.push(bytes(*pool, std::string(600, 'd')));
  mem::Buffer d = q.next_offer();
  EXPECT_EQ(text(d), std::string(600, 'd'));
  EXPECT_EQ(q.readable_now(), 1200u);
}

}  // namespace
}  // namespace ss::net::tcp
