// The ring-provider interface: packet queues whose buffers are pool frames,
// with completion semantics, for the VMA-compatible face (AF_XDP, raw verbs
// queues). A queue has four rings, each single-producer/single-consumer:
//
//   fill        caller -> device  empty frames to receive into
//   rx          device -> caller  received packets, in fill frames
//   tx          caller -> device  packets to send
//   completion  device -> caller  sent packets, their frames given back
//
// Frames are mem::Buffers of the queue's pool throughout, so the same
// handle is the UMEM frame, the receive buffer handed to an application
// (into_raw / Pool::from_raw) and the buffer a released packet recycles
// into the fill ring through the pool's Recycler. A receive with an empty
// fill ring or a full rx ring drops the packet and counts it (RingStats).
//
// Every call returns a count or 0, or -errno; nothing throws, nothing
// blocks: wait on poll_fd(). Providers register a descriptor whose create
// function has the RingCreateFn shape.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/mem/buffer.h"
#include "core/mem/pool.h"

namespace ss::prov {

// What a ring provider can do; a test checks the flags against behaviour.
enum RingCap : uint32_t {
  kRingCapZeroCopy = 1u << 0,   // the device reads and writes pool frames in place
                                // (else it copies, as AF_XDP's copy mode does)
  kRingCapChained = 1u << 1,    // a packet may span chained frames, on rx and tx
  kRingCapHeadroom = 1u << 2,   // rx payload starts after the pool's headroom, so
                                // headers can be pushed in front without a copy
  kRingCapNeedsKick = 1u << 3,  // queued tx leaves only after kick() (a syscall)
  kRingCapRxChained = 1u << 4,  // a received packet may span chained frames (tx
                                // not: kRingCapChained says both)
};

enum class Ring : uint8_t { kFill, kRx, kTx, kCompletion };

struct RingQueueConfig {
  mem::Pool* pool = nullptr;  // every frame of every ring; outlives the queue
  // Entries per ring; powers of two (as AF_XDP requires), else -EINVAL.
  uint32_t fill_size = 4096, rx_size = 2048, tx_size = 2048, completion_size = 2048;
  // Released frames of the pool go straight into the fill ring (the pool's
  // Recycler) while it has room; the rest reach the pool's free list. A
  // pool has one recycler: at most one queue per pool sets this.
  bool recycle_into_fill = true;
  const char* ifname = nullptr;  // the device, for providers bound to one
  uint32_t queue_id = 0;
};

struct RingStats {
  uint64_t rx_packets = 0, tx_packets = 0;
  uint64_t rx_dropped_no_fill = 0;   // arrived while the fill ring was empty
  uint64_t rx_dropped_rx_full = 0;   // arrived while the rx ring was full
  uint64_t fill_full = 0;            // frames refused by a full fill ring
  uint64_t rx_dropped_bad_desc = 0;  // rx descriptor outside its frame: refilled
};

class RingQueue {
 public:
  virtual ~RingQueue() = default;
  virtual uint32_t caps() const = 0;

  // Moves up to n frames, from the front of frames[], into the fill ring
  // (whatever their views: the device writes after the pool's headroom).
  // Returns how many it took; fewer when the ring is full (the caller keeps
  // the rest). -EINVAL for an empty handle or a frame of another pool,
  // -EBUSY for a frame someone else still holds (the device will write it).
  virtual int fill(mem::Buffer* frames, int n) = 0;
  // Up to max received packets into out[]: each view is the payload;
  // with kRingCapChained the rest of a long packet is linked (Buffer::next).
  virtual int rx(mem::Buffer* out, int max) = 0;
  // Moves up to n packets (views = the bytes to send, chains if
  // kRingCapChained) from the front of pkts[] into the tx ring. Returns how
  // many it took: fewer when the tx ring, or the completion ring that must
  // give each one back, is full. -EINVAL for a frame of another pool, an
  // empty handle, or a chain without kRingCapChained.
  virtual int tx(mem::Buffer* pkts, int n) = 0;
  // Starts queued tx where kRingCapNeedsKick; 0 or -errno.
  virtual int kick() = 0;
  // Up to max sent packets back, as they were queued (chains included):
  // reuse them, or release them (they recycle into the fill ring).
  virtual int complete(mem::Buffer* out, int max) = 0;

  // A descriptor to poll for `r` and the events that mean it is ready (rx,
  // completion: POLLIN while entries wait; tx, fill: POLLOUT while there is
  // room). Several rings may share one descriptor (an AF_XDP socket).
  // -EOPNOTSUPP for a ring the provider has no descriptor for.
  virtual int poll_fd(Ring r, short* events) const = 0;
  virtual RingStats stats() const = 0;
  // Frames the queue holds for arriving packets: in its fill ring, or
  // received and not yet taken by rx(). Cheap and lock-free: a hint for
  // topping the fill ring up (a moment old under concurrent calls).
  virtual uint32_t fill_level() const = 0;
  // Marks, by pool frame index, the frames the queue holds in its rings
  // (the device's, or sent and not completed): no program sees them, so a
  // fork child needs no copy (mem::ForkFrames). by_index is sized to the
  // pool here; a provider that cannot tell marks none. Between
  // hold_for_fork and release_after_fork: a fork's prepare handler holds
  // the rings from before the mark to after the fork (in the parent and
  // in the child, as pthread_atfork's locks go), so no frame leaves them
  // for the program unmarked and uncopied.
  virtual void mark_ring_frames(std::vector<uint8_t>* by_index) const { by_index->clear(); }
  virtual void hold_for_fork() {}
  virtual void release_after_fork() {}
};

using RingCreateFn = int (*)(const RingQueueConfig& cfg, std::unique_ptr<RingQueue>* out);

// A ring provider's operations, in its registry Descriptor (registry.h).
struct RingOps {
  RingCreateFn create;  // one queue of cfg.ifname's rx queue cfg.queue_id
};

}  // namespace ss::prov
