// The ring-provider interface (prov/ring.h) exercised through the test-only
// loopback provider: tx on one queue arrives on its peer's rx in frames from
// the peer's fill ring and comes back on the sender's completion ring;
// headroom, chains, full and empty rings, the pool's recycle hook.
#include <poll.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/mem/pool.h"
#include "core/prov/ring.h"
#include "tests/core/loopback_ring.h"
#include "tests/core/mem_test_pool.h"

namespace sstest {
namespace {

using ss::mem::Backing;
using ss::mem::Buffer;
using ss::mem::Pool;
using ss::prov::Ring;
using ss::prov::RingQueueConfig;

bool ready(const LoopbackQueue& q, Ring r) {
  short ev = 0;
  int fd = q.poll_fd(r, &ev);
  if (fd < 0) return false;
  pollfd p{fd, ev, 0};
  return poll(&p, 1, 0) == 1 && (p.revents & ev);
}

std::string bytes(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i++) s[i] = static_cast<char>('a' + (i * 7 + seed) % 26);
  return s;
}

// All of a received chain's bytes, and how many frames carried them.
std::string gather(const Buffer& pkt, int* frames) {
  std::string s;
  *frames = 0;
  for (Buffer f = pkt.share(); f; f = f.next(), ++*frames)
    s.append(static_cast<const char*>(f.data()), f.size());
  return s;
}

class LoopbackRingTest : public ::testing::Test {
 protected:
  // Sender a: 2 KiB frames with 256 B headroom; receiver b: frame size and
  // headroom per test. Both pools are one private area, as a UMEM.
  void make(size_t b_frame = 2048, size_t b_headroom = 256, bool kick = false) {
    pa_ = ss::mem::make_pool(2048, 64, 1, 256, Backing::kPrivate);
    pb_ = ss::mem::make_pool(b_frame, 64, 1, b_headroom, Backing::kPrivate);
    ASSERT_TRUE(pa_ && pb_);
    ca_.pool = pa_.get();
    cb_.pool = pb_.get();
    ASSERT_EQ(LoopbackQueue::create_pair(ca_, cb_, kick, &a_, &b_), 0);
  }
  void TearDown() override {
    a_.reset();
    b_.reset();
    for (Pool* p : {pa_.get(), pb_.get()}) {  // nothing leaked
      if (p) {
        EXPECT_EQ(p->free_count(), p->frame_count());
      }
    }
  }
  // n frames of b's pool into b's fill ring; how many it took.
  int fill_b(int n) {
    std::vector<Buffer> v;
    for (int i = 0; i < n; i++) v.push_back(pb_->get());
    return b_->fill(v.data(), n);
  }
  // A packet of a's pool carrying s, split over frames of at most `per` bytes.
  Buffer packet(const std::string& s, size_t per = 1792) {
    Buffer head;
    for (size_t at = 0; at < s.size() || !head; at += per) {
      Buffer f = pa_->get();
      const size_t n = s.size() - at < per ? s.size() - at : per;
      std::memcpy(f.data(), s.data() + at, n);
      f.set_size(n);
      if (!head) {
        head = std::move(f);
      } else {
        EXPECT_EQ(head.append(std::move(f)), 0);
      }
    }
    return head;
  }
  int send(Buffer pkt) { return a_->tx(&pkt, 1); }

  std::unique_ptr<Pool> pa_, pb_;
  RingQueueConfig ca_, cb_;
  std::unique_ptr<LoopbackQueue> a_, b_;
};

TEST_F(LoopbackRingTest, ConfigMustBePowersOfTwoWithAPool) {
  make();
  std::unique_ptr<LoopbackQueue> x, y;
  RingQueueConfig bad = ca_;
  bad.rx_size = 1000;
  EXPECT_EQ(LoopbackQueue::create_pair(bad, cb_, false, &x, &y), -EINVAL);
  bad = ca_;
  bad.pool = nullptr;
  EXPECT_EQ(LoopbackQueue::create_pair(bad, cb_, false, &x, &y), -EINVAL);
  EXPECT_FALSE(x || y);
}

TEST_F(LoopbackRingTest, TxArrivesOnPeerRxWithHeadroomAndCompletes) {
  make();
  EXPECT_TRUE(a_->caps() & ss::prov::kRingCapHeadroom);
  EXPECT_TRUE(a_->caps() & ss::prov::kRingCapChained);
  EXPECT_FALSE(a_->caps() & ss::prov::kRingCapNeedsKick);
  ASSERT_EQ(fill_b(8), 8);
  EXPECT_FALSE(ready(*b_, Ring::kRx));

  const std::string payload = bytes(100, 1), hdr = bytes(14, 2);
  Buffer pkt = packet(payload);
  void* sent_frame = pkt.frame();
  ASSERT_EQ(pkt.push_head(14), 0);  // a header in the sender's headroom
  std::memcpy(pkt.data(), hdr.data(), 14);
  ASSERT_EQ(send(std::move(pkt)), 1);

  EXPECT_TRUE(ready(*b_, Ring::kRx));
  Buffer got[4];
  ASSERT_EQ(b_->rx(got, 4), 1);
  EXPECT_FALSE(ready(*b_, Ring::kRx));
  EXPECT_EQ(got[0].pool(), pb_.get());
  EXPECT_EQ(got[0].offset(), 256u);  // after the receiving pool's headroom
  EXPECT_EQ(std::string(static_cast<char*>(got[0].data()), got[0].size()), hdr + payload);
  ASSERT_EQ(got[0].pull_head(14), 0);
  EXPECT_EQ(std::string(static_cast<char*>(got[0].data()), got[0].size()), payload);

  EXPECT_TRUE(ready(*a_, Ring::kCompletion));
  Buffer done[4];
  ASSERT_EQ(a_->complete(done, 4), 1);
  EXPECT_FALSE(ready(*a_, Ring::kCompletion));
  EXPECT_EQ(done[0].frame(), sent_frame);  // the sender's own frame, back
  EXPECT_EQ(a_->stats().tx_packets, 1u);
  EXPECT_EQ(b_->stats().rx_packets, 1u);
  short ev;
  EXPECT_EQ(a_->poll_fd(Ring::kFill, &ev), -EOPNOTSUPP);
}

TEST_F(LoopbackRingTest, ChainedPacketsArriveChainedInReceiverSizedFrames) {
  make(/*b_frame=*/1024, /*b_headroom=*/0);
  ASSERT_EQ(fill_b(16), 16);
  const std::string s = bytes(5000, 3);
  Buffer pkt = packet(s);  // 1792 + 1792 + 1416 in three frames
  int n = 0;
  EXPECT_EQ(gather(pkt, &n), s);
  EXPECT_EQ(n, 3);
  ASSERT_EQ(send(std::move(pkt)), 1);
  Buffer got;
  ASSERT_EQ(b_->rx(&got, 1), 1);
  EXPECT_EQ(got.chain_size(), 5000u);
  EXPECT_EQ(gather(got, &n), s);
  EXPECT_EQ(n, 5);  // 1024-byte frames
  Buffer done;
  ASSERT_EQ(a_->complete(&done, 1), 1);
  EXPECT_EQ(done.chain_size(), 5000u);  // given back as it was queued
}

TEST_F(LoopbackRingTest, EmptyFillRingDropsAndCounts) {
  make();
  ASSERT_EQ(send(packet(bytes(10, 4))), 1);
  Buffer got;
  EXPECT_EQ(b_->rx(&got, 1), 0);
  EXPECT_EQ(b_->stats().rx_dropped_no_fill, 1u);
  EXPECT_EQ(b_->stats().rx_packets, 0u);
  Buffer done;
  EXPECT_EQ(a_->complete(&done, 1), 1);  // the sender still gets it back

  // Too few fill frames for a long packet: dropped, the frames stay filled.
  ASSERT_EQ(fill_b(2), 2);
  ASSERT_EQ(send(packet(bytes(4000, 5))), 1);  // needs 3 frames
  EXPECT_EQ(b_->rx(&got, 1), 0);
  EXPECT_EQ(b_->stats().rx_dropped_no_fill, 2u);
  ASSERT_EQ(send(packet(bytes(3000, 6))), 1);  // 2 frames: fits
  ASSERT_EQ(b_->rx(&got, 1), 1);
  EXPECT_EQ(got.chain_size(), 3000u);
}

TEST_F(LoopbackRingTest, FullFillRingRefusesAndCounts) {
  cb_.fill_size = 4;
  cb_.recycle_into_fill = false;
  make();
  std::vector<Buffer> v;
  for (int i = 0; i < 6; i++) v.push_back(pb_->get());
  EXPECT_EQ(b_->fill(v.data(), 6), 4);
  EXPECT_FALSE(v[3]);
  EXPECT_TRUE(v[4] && v[5]);  // the caller keeps what did not fit
  EXPECT_EQ(b_->stats().fill_full, 2u);
}

TEST_F(LoopbackRingTest, ReleasedFramesRecycleIntoTheFillRing) {
  cb_.fill_size = 2;
  make();
  ASSERT_EQ(fill_b(1), 1);
  Buffer got;
  for (int round = 0; round < 3; round++) {
    ASSERT_EQ(send(packet(bytes(64, round))), 1);
    ASSERT_EQ(b_->rx(&got, 1), 1) << round;
    got.reset();  // back into b's fill ring, not the free list
    EXPECT_EQ(pb_->free_count(), pb_->frame_count() - 1);
  }
  EXPECT_EQ(b_->stats().rx_dropped_no_fill, 0u);

  // With the fill ring full, a released frame goes to the free list.
  ASSERT_EQ(fill_b(1), 1);  // ring: 2 of 2
  Buffer extra = pb_->get();
  const size_t before = pb_->free_count();
  extra.reset();
  EXPECT_EQ(pb_->free_count(), before + 1);
  EXPECT_EQ(b_->stats().fill_full, 1u);
}

TEST_F(LoopbackRingTest, WithoutRecyclingReleasedFramesDoNotRefill) {
  cb_.recycle_into_fill = false;
  make();
  ASSERT_EQ(fill_b(1), 1);
  Buffer got;
  ASSERT_EQ(send(packet(bytes(64, 1))), 1);
  ASSERT_EQ(b_->rx(&got, 1), 1);
  got.reset();
  ASSERT_EQ(send(packet(bytes(64, 2))), 1);
  EXPECT_EQ(b_->rx(&got, 1), 0);
  EXPECT_EQ(b_->stats().rx_dropped_no_fill, 1u);
}

TEST_F(LoopbackRingTest, FullRxRingDropsAndCounts) {
  cb_.rx_size = 2;
  make();
  ASSERT_EQ(fill_b(8), 8);
  for (int i = 0; i < 3; i++) ASSERT_EQ(send(packet(bytes(32, i))), 1);
  Buffer got[4];
  EXPECT_EQ(b_->rx(got, 4), 2);
  EXPECT_EQ(b_->stats().rx_dropped_rx_full, 1u);
  EXPECT_EQ(b_->stats().rx_packets, 2u);
}

TEST_F(LoopbackRingTest, CompletionRingBoundsTx) {
  ca_.completion_size = 2;
  make();
  ASSERT_EQ(fill_b(8), 8);
  Buffer pkts[3] = {packet("x"), packet("y"), packet("z")};
  EXPECT_EQ(a_->tx(pkts, 3), 2);
  EXPECT_TRUE(pkts[2]);  // no room to give it back later: not taken
  EXPECT_EQ(a_->tx(&pkts[2], 1), 0);
  Buffer done[2];
  ASSERT_EQ(a_->complete(done, 2), 2);
  EXPECT_EQ(a_->tx(&pkts[2], 1), 1);
}

TEST_F(LoopbackRingTest, NeedsKickHoldsTxUntilKicked) {
  make(2048, 256, /*kick=*/true);
  EXPECT_TRUE(a_->caps() & ss::prov::kRingCapNeedsKick);
  ASSERT_EQ(fill_b(2), 2);
  ASSERT_EQ(send(packet("held")), 1);
  Buffer got;
  EXPECT_EQ(b_->rx(&got, 1), 0);
  EXPECT_FALSE(ready(*a_, Ring::kCompletion));
  ASSERT_EQ(a_->kick(), 0);
  ASSERT_EQ(b_->rx(&got, 1), 1);
  EXPECT_EQ(std::string(static_cast<char*>(got.data()), got.size()), "held");
}

TEST_F(LoopbackRingTest, ForeignOrSharedFramesRefused) {
  make();
  Buffer theirs = pb_->get();
  EXPECT_EQ(a_->tx(&theirs, 1), -EINVAL);  // not the sender's pool
  EXPECT_TRUE(theirs);
  Buffer mixed = packet("head");
  Buffer tail = pb_->get();
  ASSERT_EQ(mixed.append(std::move(tail)), 0);
  EXPECT_EQ(a_->tx(&mixed, 1), -EINVAL);  // a frame of the chain is foreign
  Buffer empty;
  EXPECT_EQ(a_->tx(&empty, 1), -EINVAL);
  Buffer mine = pa_->get();
  EXPECT_EQ(b_->fill(&mine, 1), -EINVAL);
  Buffer shared = pb_->get();
  Buffer other = shared.share();
  EXPECT_EQ(b_->fill(&shared, 1), -EBUSY);  // the device would write under a holder
  EXPECT_TRUE(shared);
}

}  // namespace
}  // namespace sstest
