// FrameTx's burst: queued frames wait on the tx ring for one kick (flush,
// or the 32nd frame), where send kicks for each.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/mem/pool.h"
#include "core/net/frame_tx.h"
#include "tests/core/loopback_ring.h"
#include "tests/core/mem_test_pool.h"

namespace ss::net {
namespace {

using mem::Backing;
using mem::Buffer;
using sstest::LoopbackQueue;

// Counts the kicks of a queue whose tx waits for one; its tx ring takes
// nothing while `full` is set.
class CountedKicks final : public sstest::QueueWrapper {
 public:
  explicit CountedKicks(prov::RingQueue* q) : QueueWrapper(q) {}
  int tx(Buffer* p, int n) override { return full ? 0 : q_->tx(p, n); }
  int kick() override {
    kicks++;
    return q_->kick();
  }
  int kicks = 0;
  bool full = false;
};

class FrameTxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pool_ = mem::make_pool(2048, 256, 1, 256, Backing::kPrivate);
    peer_pool_ = mem::make_pool(2048, 256, 1, 256, Backing::kPrivate);
    ASSERT_TRUE(pool_ && peer_pool_);
    prov::RingQueueConfig c, p;
    c.pool = pool_.get();
    p.pool = peer_pool_.get();
    ASSERT_EQ(LoopbackQueue::create_pair(c, p, /*needs_kick=*/true, &ours_, &peer_), 0);
    std::vector<Buffer> v;
    for (int i = 0; i < 128; i++) v.push_back(peer_pool_->get());
    ASSERT_EQ(peer_->fill(v.data(), 128), 128);
    counted_ = std::make_unique<CountedKicks>(ours_.get());
    tx_ = std::make_unique<FrameTx>(counted_.get(), pool_.get());
  }
  void TearDown() override {
    tx_.reset();
    counted_.reset();
    ours_.reset();
    peer_.reset();
  }
  Buffer frame() {
    Buffer b = tx_->take();
    EXPECT_TRUE(b);
    EXPECT_EQ(b.set_size(64), 0);
    return b;
  }
  int arrived() {
    Buffer got[64];
    int n = 0, k;
    while ((k = peer_->rx(got, 64)) > 0) n += k;
    return n;
  }

  std::unique_ptr<mem::Pool> pool_, peer_pool_;
  std::unique_ptr<LoopbackQueue> ours_, peer_;
  std::unique_ptr<CountedKicks> counted_;
  std::unique_ptr<FrameTx> tx_;
};

TEST_F(FrameTxTest, SendKicksForEachFrame) {
  for (int i = 0; i < 3; i++) ASSERT_EQ(tx_->send(frame()), 0);
  EXPECT_EQ(counted_->kicks, 3);
  EXPECT_EQ(arrived(), 3);
}

TEST_F(FrameTxTest, QueuedFramesWaitForOneKick) {
  for (int i = 0; i < 5; i++) ASSERT_EQ(tx_->queue(frame()), 0);
  EXPECT_EQ(counted_->kicks, 0);
  EXPECT_EQ(arrived(), 0);
  tx_->flush();
  EXPECT_EQ(counted_->kicks, 1);
  EXPECT_EQ(arrived(), 5);
  tx_->flush();  // nothing queued: no kick
  EXPECT_EQ(counted_->kicks, 1);
}

TEST_F(FrameTxTest, ABurstKicksEveryThirtyTwoFrames) {
  for (int i = 0; i < 70; i++) ASSERT_EQ(tx_->queue(frame()), 0);
  EXPECT_EQ(counted_->kicks, 2);
  EXPECT_EQ(arrived(), 64);
  tx_->flush();
  EXPECT_EQ(counted_->kicks, 3);
  EXPECT_EQ(arrived(), 6);
}

// A full ring holds queued frames back, in order, until a flush finds room.
TEST_F(FrameTxTest, AFullRingHoldsFramesInOrderUntilAFlush) {
  counted_->full = true;
  for (uint8_t i = 0; i < 3; i++) {
    Buffer b = frame();
    static_cast<uint8_t*>(b.data())[0] = i;
    ASSERT_EQ(tx_->queue(std::move(b)), 0);
  }
  tx_->flush();
  EXPECT_EQ(arrived(), 0);
  counted_->full = false;
  tx_->flush();
  Buffer got[8];
  int n = 0, k;
  while ((k = peer_->rx(got + n, 8 - n)) > 0) n += k;
  ASSERT_EQ(n, 3);
  for (int i = 0; i < 3; i++) EXPECT_EQ(static_cast<const uint8_t*>(got[i].data())[0], i);
}

}  // namespace
}  // namespace ss::net
