// The rings' send path, one per netdev's stacks (UDP and TCP send through
// the same one): frames from the first queue's pool, or sent frames taken
// back from the completion ring and kept for reuse; a frame goes on the tx
// ring and the device is kicked, at once (send) or once for a burst
// (queue, then flush: each kick is a system call, and in copy mode the
// call that moves the frames). The tx ring has one producer, so one lock
// covers it; the callers build their frames outside it.
#pragma once
#include <atomic>
#include <deque>
#include <mutex>
#include <vector>

#include "core/base/api.h"
#include "core/mem/buffer.h"
#include "core/mem/pool.h"
#include "core/prov/ring.h"

namespace ss::net {

class FrameTx {
 public:
  FrameTx(prov::RingQueue* queue, mem::Pool* pool) : queue_(queue), pool_(pool) {}
  SS_API ~FrameTx();
  FrameTx(const FrameTx&) = delete;
  FrameTx& operator=(const FrameTx&) = delete;

  // An empty frame, the pool's headroom in front; empty when none is free.
  mem::Buffer take();
  // Onto the tx ring, and kicks: 0; -EAGAIN when the ring stays full after
  // one kick and reap; the kick's -errno. The frame is the ring's either
  // way (released when refused).
  int send(mem::Buffer&& frame);
  // As send, without the kick unless kBurst frames wait for one: flush
  // kicks for the rest. A full ring holds the frame back, in order, until
  // a later queue or flush finds room (a TCP segment is not lost to it);
  // -EAGAIN only when kHeldMax frames wait already.
  int queue(mem::Buffer&& frame);
  // Puts held frames on the ring and kicks for those queued since the
  // last kick, if any.
  SS_API void flush();
  // Frames wait for room on the ring: someone must flush again soon.
  bool holding() const { return held_n_.load(std::memory_order_relaxed) > 0; }
  // A frame built and not sent (a dummy send): kept for the next take.
  void keep(mem::Buffer&& frame);
  // Takes sent frames back now (send does it too): what an idle sender's
  // owner calls so the frames recycle.
  void reap();

 private:
  void reclaim_locked();
  int put_locked(mem::Buffer&& frame);
  int kick_locked();
  // Moves held frames onto the ring, oldest first: true when none is left.
  bool drain_held_locked();

  static constexpr size_t kSpare = 64;
  static constexpr uint32_t kBurst = 32;  // frames the kernel's copy mode sends a call
  static constexpr size_t kHeldMax = 1024;
  prov::RingQueue* const queue_;
  mem::Pool* const pool_;
  std::mutex mu_;
  std::vector<mem::Buffer> spare_;     // completed frames kept for the next takes
  std::atomic<uint32_t> unkicked_{0};  // queued since the last kick (read unlocked by flush)
  std::deque<mem::Buffer> held_;       // queued while the ring was full, oldest first
  std::atomic<size_t> held_n_{0};      // held_.size(), read unlocked by flush
};

}  // namespace ss::net
