// The buffers socketXtreme lends a program (vma_extra(7)): a datagram's
// UMEM frame, described by a vma_buff_t the program reads. The vma_buff_t
// lives at the start of the frame itself (the headroom in front of the
// packet, which nothing uses while the frame is lent), with a tag and a
// reference count beside it, so a pointer the program gives back maps to
// its frame by address alone: no table, no lock. A pointer is taken only
// when it is the start of a frame of a pool that lent, carries this
// object's tag and has a count above 0 (changed by compare-and-swap); the
// frame itself goes back through Pool::from_raw, which refuses a frame not
// lent. So a made-up pointer, a buffer freed already or one never handed
// out is refused (-EINVAL) and nothing is freed twice. As with libvma, a
// pointer kept past its free may name the frame's next datagram once the
// frame is lent again.
#pragma once
#include "core/base/api.h"
#include <mellanox/vma_extra.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>

#include "core/mem/pool.h"
#include "core/net/udp_stack.h"

namespace ss::vma {

// Whom a lent buffer's bytes are owed back to when it is freed: a TCP
// connection's receive window counts what the program holds, and collects
// the bytes freed at its next call. Shared by the owner and each buffer
// lent for it; the last to let go deletes it.
class LentOwner {
 public:
  // A count several owners add to (a poller's cap over all of them), with
  // its own arm: a free by any of them wakes once after Share::armed is
  // set, as arm_wake does for one. It outlives every owner that has it.
  struct Share {
    std::atomic<size_t> out{0};
    std::atomic<bool> armed{false};
  };
  static LentOwner* make() { return new LentOwner; }
  void ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  // A buffer lent for it (with a reference), and its last free: the bytes
  // owed back, counted before the buffer is.
  void lent() {
    ref();
    out_.fetch_add(1, std::memory_order_relaxed);
    if (share_) share_->out.fetch_add(1, std::memory_order_relaxed);
  }
  void returned(size_t bytes) {
    freed_.fetch_add(bytes, std::memory_order_seq_cst);  // owed() after an arm_wake sees it
    out_.fetch_sub(1, std::memory_order_seq_cst);
    if (share_) share_->out.fetch_sub(1, std::memory_order_seq_cst);
    const bool own = wake_armed_.exchange(false, std::memory_order_seq_cst);
    const bool shared = share_ && share_->armed.exchange(false, std::memory_order_seq_cst);
    if (wake_ && (own || shared)) wake_(wake_arg_);
    unref();
  }
  // The buffers lent for it and not yet freed.
  size_t buffers_out() const { return out_.load(std::memory_order_seq_cst); }
  // A poller that stopped reading for what the program holds: the next
  // free (on the freeing thread, maybe a signal handler: fn must be
  // async-signal-safe) calls fn(arg) once after arm_wake. Armed, then
  // buffers_out() read again: either that read sees the free, or the free
  // sees the arm. Set before any buffer is lent.
  void set_wake(void (*fn)(void*), void* arg) {
    wake_ = fn;
    wake_arg_ = arg;
  }
  void arm_wake() { wake_armed_.store(true, std::memory_order_seq_cst); }
  // Counted in *s too (set before any buffer is lent).
  void set_share(Share* s) { share_ = s; }
  size_t collect() { return freed_.exchange(0, std::memory_order_acq_rel); }
  // seq_cst: after arm_wake it sees a free, or the free sees the arm.
  bool owed() const { return freed_.load(std::memory_order_seq_cst) != 0; }
  // No buffer out and nothing owed: a poller may stop watching it.
  bool quiet() const { return out_.load(std::memory_order_acquire) == 0 && !owed(); }
  // The poller's mark that it watches this owner (true: marked now).
  bool watch_once() { return !watched_.exchange(true, std::memory_order_acq_rel); }
  void unwatch() { watched_.store(false, std::memory_order_release); }

 private:
  LentOwner() = default;
  std::atomic<size_t> freed_{0};
  std::atomic<size_t> out_{0};
  std::atomic<int32_t> refs_{1};
  std::atomic<bool> watched_{false};
  void (*wake_)(void*) = nullptr;
  void* wake_arg_ = nullptr;
  Share* share_ = nullptr;
  std::atomic<bool> wake_armed_{false};
};

class XtremeBuffs {
 public:
  SS_API XtremeBuffs();
  // Lends d's payload as a one-buffer chain with count 1 (*out). The frame
  // is lent in place when d holds it alone with room in front of the
  // payload, else the payload is copied into a fresh frame of its pool (a
  // multicast frame other members share). owner (if any) is told its
  // bytes when the last reference goes. 0 (d's buffer moved out), or
  // -ENOBUFS (no frame for the copy; d is left as it was).
  SS_API int lend(net::Datagram& d, vma_buff_t** out, LentOwner* owner = nullptr);
  // Lends what read(to, room) writes into a fresh frame of pool (room: at
  // most `most` bytes, the frame's after the descriptor, 65535), as a
  // one-buffer chain with count 1 (*out), for owner as lend: read's
  // bytes, or its 0 or -errno (nothing lent then), or -ENOBUFS (no frame).
  SS_API ssize_t lend_read(mem::Pool* pool, size_t most,
                           const std::function<ssize_t(void*, size_t)>& read, vma_buff_t** out,
                           LentOwner* owner = nullptr);
  // One more reference on b: the new count, or -EINVAL when b is not a
  // lent buffer (-EOVERFLOW at INT32_MAX).
  SS_API int ref(vma_buff_t* b);
  // One reference less: the new count (0: the frame went back to its
  // fill ring), or -EINVAL when b is not a lent buffer.
  SS_API int unref(vma_buff_t* b);
  // Drops each packet's reference on every buffer of its chain. All or
  // nothing: -EINVAL for NULL, a negative num, a packet without buffers,
  // a buffer not lent or listed twice (none is freed then). 0 on success.
  SS_API int free_packets(const vma_packet_desc_t* pkts, int num);

  // Bytes at the frame's start the descriptor takes.
  static size_t header_size();

 private:
  struct Lent;
  static constexpr size_t kMaxPools = 64;
  Lent* find(const void* b) const;
  // b (one reference, its view the payload) as a lent buffer.
  vma_buff_t* lend_frame(mem::Buffer b, LentOwner* owner);
  // Registers p (a pool whose frames may be lent): false when full.
  bool add_pool(mem::Pool* p);
  const uint64_t tag_;
  std::mutex add_mu_;  // adding a pool (rare); readers take none
  std::atomic<size_t> npools_{0};
  std::atomic<mem::Pool*> pools_[kMaxPools] = {};
};

}  // namespace ss::vma
