#include "core/net/udp_tx.h"

#include <cerrno>
#include <cstring>

#include "core/net/frame_build.h"
#include "core/net/multicast.h"

namespace ss::net {

using mem::Buffer;

const char* to_kernel_name(ToKernel why) {
  switch (why) {
    case ToKernel::kLocal:
      return "local";
    case ToKernel::kNotUnicast:
      return "not_unicast";
    case ToKernel::kOtherDevice:
      return "other_device";
    case ToKernel::kNeighbourPending:
      return "neighbour_pending";
    case ToKernel::kNeighbourFailed:
      return "neighbour_failed";
    case ToKernel::kOverMtu:
      return "over_mtu";
    case ToKernel::kOverFrame:
      return "over_frame";
    case ToKernel::kCount:
      break;
  }
  return "?";
}

UdpTx::~UdpTx() = default;

UdpTxCounters UdpTx::counters() const {
  std::lock_guard lock(mu_);
  return c_;
}

SendResult UdpTx::fail(int err) {
  c_.errors += err != EAGAIN && err != ENOBUFS;
  return SendResult{SendStatus::kError, err, ToKernel::kCount};
}

SendResult UdpTx::to_kernel(ToKernel why) {
  c_.to_kernel[static_cast<size_t>(why)]++;
  return SendResult{SendStatus::kUseKernel, 0, why};
}

SendResult UdpTx::send(UdpEndpoint& ep, const UdpAddr& to, std::span<const uint8_t> payload,
                       bool dummy) {
  std::lock_guard lock(mu_);
  UdpAddr dst = to;
  UdpTxOptions opt;
  {
    std::lock_guard slock(stack_->mu_);
    if (dst.ip.empty()) dst = ep.peer_;
    opt = ep.tx_;
  }
  if (dst.ip.empty()) return fail(EDESTADDRREQ);
  const IpAddr& local = ep.local().ip;
  const bool family_ok = dst.ip.family == local.family || (dst.ip.family == AF_INET && ep.dual_);
  if (!family_ok) return fail(EAFNOSUPPORT);

  // A group: out of IP_MULTICAST_IF's interface (else the route's), from
  // its address when it was named by one.
  const bool group = is_multicast(dst.ip);
  Flow flow;
  flow.dst = dst.ip;
  if (local.family == dst.ip.family) {
    bool any = true;
    for (size_t i = 0; i < local.size(); i++) any = any && !local.bytes[i];
    if (!any && !is_multicast(local)) flow.src = local;
  }
  if (group) {
    flow.oif = opt.mc_ifindex;
    if (flow.src.empty() && opt.mc_src.family == dst.ip.family) flow.src = opt.mc_src;
  }
  flow.sport = ep.local().port;
  flow.dport = dst.port;
  TxPath path;
  ToKernel why = ToKernel::kCount;
  const int r = resolver_->resolve(flow, &path, &why);
  if (r < 0) return fail(-r);
  if (r > 0) return to_kernel(why);

  FrameFields f;
  memcpy(f.src_mac, path.src_mac, 6);
  memcpy(f.dst_mac, path.dst_mac, 6);
  f.ip_version = dst.ip.family == AF_INET ? 4 : 6;
  memcpy(f.src_ip, path.src.bytes, path.src.size());
  memcpy(f.dst_ip, dst.ip.bytes, dst.ip.size());
  f.src_port = ep.local().port;
  f.dst_port = dst.port;
  f.ttl = group ? opt.mc_ttl : opt.ttl;
  f.tos = opt.tos;
  if (f.ip_version == 4) f.ip_id = ep.ip_id.next();

  Buffer frame = frames_->take();
  if (!frame) {
    c_.no_buffer++;
    return fail(ENOBUFS);
  }
  const size_t head = frame_header_len(f.ip_version);
  if (head + payload.size() > frame.capacity()) return to_kernel(ToKernel::kOverFrame);
  auto* p = static_cast<uint8_t*>(frame.data());
  if (!payload.empty()) memcpy(p + head, payload.data(), payload.size());
  const ssize_t len = build_frame({p, frame.capacity()}, f, payload.size(), path.mtu);
  if (len == -EMSGSIZE) return to_kernel(ToKernel::kOverMtu);
  if (len < 0) return fail(static_cast<int>(-len));
  frame.set_size(static_cast<size_t>(len));
  if (dummy) {  // warm, not sent: the frame serves the next send
    frames_->keep(std::move(frame));
    c_.dummy++;
    return SendResult{SendStatus::kSent, 0, ToKernel::kCount};
  }
  // The local members' copy first (as Linux loops a group's datagram back
  // before the device sends it): once on the ring, the frame is the ring's.
  if (group && opt.mc_loop) stack_->loop_back({p, static_cast<size_t>(len)});
  if (const int err = frames_->send(std::move(frame)); err < 0) {
    if (err == -EAGAIN) c_.ring_full++;
    return fail(-err);
  }
  c_.sent++;
  c_.sent_bytes += payload.size();
  return SendResult{SendStatus::kSent, 0, ToKernel::kCount};
}

}  // namespace ss::net
