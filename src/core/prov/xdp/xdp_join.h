// A fork child's AF_XDP socket on a queue its parent's XdpQueue owns: bound
// with XDP_SHARED_UMEM to the owner's socket, so it shares the owner's
// UMEM and fill ring, and the steering program sends it the frames of its
// slot (Device::join). Each received frame is copied into a frame of the
// child's own pool and its UMEM frame goes straight back to the fill ring
// (under the family's lock): the child never holds the owner's frames, so
// its exit loses none and its receive queues never drain the fill ring.
// It sends nothing (a child sends through a packet socket): tx(), kick()
// and complete() say -EOPNOTSUPP, and fill() takes nothing.
#pragma once
#include <xdp/xsk.h>

#include <memory>
#include <mutex>
#include <vector>

#include "core/mem/pool.h"
#include "core/prov/ring.h"
#include "core/prov/xdp/xdp_device.h"

namespace ss::prov::xdp {

// The owner's queue as a joining process sees it: descriptors (valid
// here) and the sizes the owner bound it with (XdpQueue::share).
struct QueueShare {
  uint32_t queue_id = 0;
  int xsk = -1;   // the owner's AF_XDP socket on the queue
  int umem = -1;  // the UMEM's memfd
  // The joiner's own AF_XDP socket, unbound, made by the owner
  // (open_socket): a child that changed its user may not make one
  // (CAP_NET_RAW). Entering it in the XSKMAP through the map's passed
  // descriptor needs no privilege (Linux 5.19 on).
  int own = -1;
  size_t umem_len = 0;
  uint32_t frame_size = 0, fill_size = 0;
  bool multi_buffer = false;  // a packet may span frames
};

class JoinedQueue final : public RingQueue {
 public:
  // dev: the Device joined (its slot is the socket's); pool: the child's
  // own frames, of the owner's frame size, outliving the queue; rx_size a
  // power of two. -errno: the kernel's refusal of the bind, -EINVAL bad
  // sizes or no share.own.
  static int create(const char* ifname, const QueueShare& share, std::shared_ptr<Device> dev,
                    mem::Pool* pool, uint32_t rx_size, std::unique_ptr<RingQueue>* out);
  // An unbound AF_XDP socket for QueueShare::own: a descriptor or -errno.
  static int open_socket();
  ~JoinedQueue() override;

  uint32_t caps() const override;
  int fill(mem::Buffer*, int) override { return 0; }
  int rx(mem::Buffer* out, int max) override;
  int tx(mem::Buffer*, int) override { return -EOPNOTSUPP; }
  int kick() override { return -EOPNOTSUPP; }
  int complete(mem::Buffer*, int) override { return -EOPNOTSUPP; }
  int poll_fd(Ring r, short* events) const override;
  RingStats stats() const override;
  uint32_t fill_level() const override { return 0; }

 private:
  JoinedQueue() = default;
  // The frames copied out (and pending_) back into the shared fill ring.
  void refill_locked();

  QueueShare share_;
  std::shared_ptr<Device> dev_;
  mem::Pool* pool_ = nullptr;
  int fd_ = -1;
  uint32_t rx_size_ = 0;
  void* rx_map_ = nullptr;
  size_t rx_map_len_ = 0;
  void* fill_map_ = nullptr;
  size_t fill_map_len_ = 0;
  const uint8_t* umem_ = nullptr;  // read only
  xsk_ring_cons rx_{};
  xsk_ring_prod fill_{};
  bool steered_ = false;

  mutable std::mutex mu_;
  std::vector<uint64_t> pending_;  // UMEM frames to give back to the fill ring
  mem::Buffer partial_;            // a multi-frame packet so far
  uint32_t partial_frames_ = 0;
  bool partial_bad_ = false;
  RingStats stats_;
};

}  // namespace ss::prov::xdp
