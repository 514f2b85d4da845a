// Test-only ring provider (not shipped): two queues joined back to back on
// the buffer model. What one queue sends arrives on its peer's rx ring,
// copied into frames from the peer's fill ring (as AF_XDP's copy mode
// does), chained when it does not fit one frame; the sent packet comes back
// on the sender's completion ring. It proves prov/ring.h can be implemented
// before AF_XDP implements it.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/mem/buffer.h"
#include "core/mem/pool.h"
#include "core/prov/ring.h"

namespace sstest {

// A bounded FIFO of frames (a ring of the queue).
class FrameRing {
 public:
  explicit FrameRing(uint32_t size) : slots_(size) {}
  bool full() const { return count_ == slots_.size(); }
  size_t count() const { return count_; }
  size_t room() const { return slots_.size() - count_; }
  void push(ss::mem::Buffer&& b) { slots_[(head_ + count_++) % slots_.size()] = std::move(b); }
  ss::mem::Buffer pop() {
    ss::mem::Buffer b = std::move(slots_[head_]);
    head_ = (head_ + 1) % slots_.size();
    count_--;
    return b;
  }
  // Moves every frame out (to be released outside the queue's lock).
  void drain(std::vector<ss::mem::Buffer>* out) {
    while (count_) out->push_back(pop());
  }

 private:
  std::vector<ss::mem::Buffer> slots_;
  size_t head_ = 0, count_ = 0;
};

class LoopbackQueue final : public ss::prov::RingQueue, public ss::mem::Recycler {
 public:
  // Queue a's tx arrives on b's rx and the reverse. needs_kick: tx waits
  // in the tx ring until kick() (kRingCapNeedsKick), else it goes at once.
  static int create_pair(const ss::prov::RingQueueConfig& a, const ss::prov::RingQueueConfig& b,
                         bool needs_kick, std::unique_ptr<LoopbackQueue>* qa,
                         std::unique_ptr<LoopbackQueue>* qb);
  ~LoopbackQueue() override;

  uint32_t caps() const override;
  int fill(ss::mem::Buffer* frames, int n) override;
  int rx(ss::mem::Buffer* out, int max) override;
  int tx(ss::mem::Buffer* pkts, int n) override;
  int kick() override;
  int complete(ss::mem::Buffer* out, int max) override;
  int poll_fd(ss::prov::Ring r, short* events) const override;
  ss::prov::RingStats stats() const override;
  uint32_t fill_level() const override;

  void recycle(ss::mem::Buffer& frame) override;

 private:
  LoopbackQueue(const ss::prov::RingQueueConfig& cfg, bool needs_kick,
                std::shared_ptr<std::mutex> mu);
  int open_fds();
  // Moves up to max entries of ring into out[] (rx and completion).
  int take(FrameRing* ring, int fd, ss::mem::Buffer* out, int max);
  void flush_locked();
  void deliver_locked(const ss::mem::Buffer& pkt);
  // Keeps an eventfd readable exactly while its ring has entries.
  static void signal(int fd, bool ready);

  const ss::prov::RingQueueConfig cfg_;
  const bool needs_kick_;
  std::shared_ptr<std::mutex> mu_;  // one for the pair: delivery touches both
  LoopbackQueue* peer_ = nullptr;
  FrameRing fill_, rx_, tx_, comp_;
  int rx_fd_ = -1, comp_fd_ = -1;
  ss::prov::RingStats stats_;
};

// Another queue's operations, for a test to change or count one of them.
class QueueWrapper : public ss::prov::RingQueue {
 public:
  explicit QueueWrapper(ss::prov::RingQueue* q) : q_(q) {}
  uint32_t caps() const override { return q_->caps(); }
  int fill(ss::mem::Buffer* f, int n) override { return q_->fill(f, n); }
  int rx(ss::mem::Buffer* o, int m) override { return q_->rx(o, m); }
  int tx(ss::mem::Buffer* p, int n) override { return q_->tx(p, n); }
  int kick() override { return q_->kick(); }
  int complete(ss::mem::Buffer* o, int m) override { return q_->complete(o, m); }
  int poll_fd(ss::prov::Ring r, short* e) const override { return q_->poll_fd(r, e); }
  ss::prov::RingStats stats() const override { return q_->stats(); }
  uint32_t fill_level() const override { return q_->fill_level(); }

 protected:
  ss::prov::RingQueue* const q_;
};

}  // namespace sstest
