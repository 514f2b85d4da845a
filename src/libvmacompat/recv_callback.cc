#include "libvmacompat/recv_callback.h"

#include <sys/uio.h>

namespace ss::vma {
namespace {

// The callback this thread is inside (nested callbacks of other sockets
// stack through the saved value).
thread_local const RecvCallback* t_running = nullptr;

}  // namespace

void RecvCallback::set(vma_recv_callback_t cb, void* context) {
  std::lock_guard lock(mu_);
  cb_ = cb;
  context_ = context;
  active_.store(cb != nullptr, std::memory_order_release);
}

bool RecvCallback::running_here() const { return t_running == this; }

vma_recv_callback_retval_t RecvCallback::pass(int fd, net::Datagram* d, const net::UdpAddr& local,
                                              uint32_t queued_pkts, uint32_t queued_bytes,
                                              HeldPackets* held) {
  vma_recv_callback_t cb;
  void* context;
  {
    std::lock_guard lock(mu_);
    cb = cb_;
    context = context_;
  }
  if (!cb) return VMA_PACKET_RECV;
  sockaddr_storage src, dst;
  d->src.ip.to_sockaddr(d->src.port, 0, &src);
  local.ip.to_sockaddr(local.port, 0, &dst);
  iovec iov{d->buf.data(), d->buf.size()};
  vma_info_t info{};
  info.struct_sz = sizeof info;
  info.packet_id = held->new_id();  // its id, should it be held
  info.src = reinterpret_cast<sockaddr_in*>(&src);
  info.dst = reinterpret_cast<sockaddr_in*>(&dst);
  info.payload_sz = d->buf.size();
  info.socket_ready_queue_pkt_count = queued_pkts;
  info.socket_ready_queue_byte_count = queued_bytes;
  const RecvCallback* outer = t_running;
  t_running = this;
  const vma_recv_callback_retval_t verdict = cb(fd, 1, &iov, &info, context);
  t_running = outer;
  switch (verdict) {
    case VMA_PACKET_DROP:
      d->buf.reset();  // the frame recycles
      return VMA_PACKET_DROP;
    case VMA_PACKET_HOLD:
      held->hold(info.packet_id, std::move(*d));
      return VMA_PACKET_HOLD;
    default:
      return VMA_PACKET_RECV;
  }
}

}  // namespace ss::vma
