// A socket's receive callback (register_recv_callback, vma_extra(7)): run
// on the receive path, in the thread that takes the datagram off the
// rings (a recv*, read, poll or select on the socket), before the
// datagram is queued for the socket's receive calls. Its verdict:
// VMA_PACKET_DROP releases the frame (it recycles), VMA_PACKET_HOLD keeps
// it in the socket's HeldPackets until free_packets, VMA_PACKET_RECV (and
// any other value) lets it on to the receive calls. Datagrams the kernel
// socket receives never pass through it, as with libvma.
#pragma once
#include "core/base/api.h"
#include <mellanox/vma_extra.h>

#include <atomic>
#include <mutex>

#include "core/net/udp_stack.h"
#include "libvmacompat/held_packets.h"

namespace ss::vma {

class RecvCallback {
 public:
  // Registers cb with its context (null cb: none).
  SS_API void set(vma_recv_callback_t cb, void* context);
  bool active() const { return active_.load(std::memory_order_acquire); }
  // Runs the callback on *d (from d->src to local, for socket fd; queued:
  // the socket's ready packets and bytes besides it): VMA_PACKET_RECV
  // (also with no callback, or a value it does not know): deliver *d;
  // VMA_PACKET_DROP: released; VMA_PACKET_HOLD: moved to held.
  SS_API vma_recv_callback_retval_t pass(int fd, net::Datagram* d, const net::UdpAddr& local,
                                         uint32_t queued_pkts, uint32_t queued_bytes,
                                         HeldPackets* held);
  // Whether this thread is inside this callback now (the receive path
  // must not look at the rings again from inside it).
  SS_API bool running_here() const;

 private:
  mutable std::mutex mu_;
  vma_recv_callback_t cb_ = nullptr;  // under mu_
  void* context_ = nullptr;           // under mu_
  std::atomic<bool> active_{false};
};

}  // namespace ss::vma
