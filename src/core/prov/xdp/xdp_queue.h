// One AF_XDP socket on one rx queue of a netdev, as a prov::RingQueue. The
// UMEM is the queue's pool: one contiguous area (max_chunks 1), its frames
// the UMEM frames (aligned mode, frame size 2048 or 4096), so the Buffers in
// the fill, rx, tx and completion rings are the frames the kernel reads and
// writes. Bound zero-copy where the driver allows it, else in copy mode.
// While a frame sits in a kernel ring the queue holds its Buffer, found
// again by the descriptor's address.
#pragma once
#include <xdp/xsk.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "core/mem/buffer.h"
#include "core/mem/pool.h"
#include "core/mem/registrar.h"
#include "core/prov/ring.h"
#include "core/prov/xdp/xdp_device.h"
#include "core/prov/xdp/xdp_join.h"

namespace ss::prov::xdp {

class XdpQueue final : public RingQueue, public mem::Recycler, public mem::Registrar {
 public:
  // cfg.ifname and cfg.queue_id name the queue. -EINVAL for a pool that is
  // not one area of 2048- or 4096-byte frames or sizes not powers of two;
  // Device::open's errors; -EBUSY when another socket has the queue.
  static int create(const RingQueueConfig& cfg, std::unique_ptr<RingQueue>* out);
  ~XdpQueue() override;
  // What a fork child needs to join this queue (xdp_join.h), its
  // descriptors valid while the queue lives: -EOPNOTSUPP for a UMEM that
  // is not shared memory (Backing::kShared) or a Device without a family.
  int share(QueueShare* out) const;

  uint32_t caps() const override;
  int fill(mem::Buffer* frames, int n) override;
  int rx(mem::Buffer* out, int max) override;
  int tx(mem::Buffer* pkts, int n) override;
  int kick() override;
  int complete(mem::Buffer* out, int max) override;
  int poll_fd(Ring r, short* events) const override;
  RingStats stats() const override;
  // Counted here; read off the rings once children share the fill ring
  // (a child's exit loses what it had taken: the owner tops up anew).
  uint32_t fill_level() const override;
  void mark_ring_frames(std::vector<uint8_t>* by_index) const override;
  void hold_for_fork() override { mu_.lock(); }
  void release_after_fork() override { mu_.unlock(); }

  void recycle(mem::Buffer& frame) override;
  // The UMEM is the pool's one area: its chunk starts at UMEM offset 0.
  int reg(void* addr, size_t len, mem::RegHandle* out) override;
  void dereg(void* addr, size_t len, const mem::RegHandle& h) override {}

 private:
  explicit XdpQueue(const RingQueueConfig& cfg);
  int bind(bool zero_copy, bool multi_buffer);
  void unbind();
  uint32_t index_of(uint64_t addr) const { return static_cast<uint32_t>(addr >> shift_); }
  uint64_t frame_addr(const mem::Buffer& b) const {
    return b.reg(reg_index_).offset + b.chunk_offset() - b.offset();
  }
  // Frames on the tx ring the kernel has not taken yet.
  uint32_t tx_unsent();
  // Puts frames into the fill ring; mu_ held. The family's lock is taken
  // inside: fork children that joined put frames there too.
  int fill_locked(mem::Buffer* frames, int n);

  const RingQueueConfig cfg_;
  char ifname_[16] = {};  // IFNAMSIZ
  uint32_t shift_ = 0;
  int reg_index_ = -1;
  bool zero_copy_ = false, steered_ = false, recycling_ = false;
  bool multi_buffer_ = false;  // bound with XDP_USE_SG: a packet may span descriptors
  std::shared_ptr<Device> dev_;
  xsk_umem* umem_ = nullptr;
  xsk_socket* xsk_ = nullptr;
  xsk_ring_prod fill_{}, tx_{};
  xsk_ring_cons rx_{}, comp_{};

  mutable std::mutex mu_;             // every ring: the recycler fills from any thread
  std::vector<mem::Buffer> in_fill_;  // by frame index: in the fill/rx rings
  std::vector<mem::Buffer> in_tx_;    // by frame index: in the tx/completion rings
  uint32_t tx_inflight_ = 0;
  std::atomic<uint32_t> fill_level_{0};  // frames in the fill and rx rings; written under mu_
  RingStats stats_;
  // A packet whose descriptors so far all said "continued" (mu_ held);
  // dropping it: one of them was bad.
  mem::Buffer partial_;
  uint32_t partial_frames_ = 0;
  bool partial_bad_ = false;
};

}  // namespace ss::prov::xdp
