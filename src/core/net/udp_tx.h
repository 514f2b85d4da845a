// The send path of the UDP endpoint layer (udp_stack.h): destination ->
// route -> next hop's MAC -> source address -> MTU -> build_frame into a
// frame of the first ring's pool -> tx ring and kick. Whatever the rings
// should not carry is answered kUseKernel with the reason, and the caller
// sends that datagram through its kernel socket: same-host destinations
// (they never pass XDP), other interfaces, broadcast and multicast routes,
// a next hop not resolved yet (nothing waits: the kernel resolves it while
// the kernel socket carries the datagram), datagrams over the MTU (we
// never fragment) or over a frame.
//
// Frames come from the netdev's FrameTx (frame_tx.h), shared with TCP.
//
// A dummy send (VMA_SND_FLAGS_DUMMY) walks the same path, route, next hop
// (a pending one gets its resolution started) and the frame built into a
// ring frame, then keeps the frame for the next send instead of putting it
// on the tx ring: the path is warm and nothing reaches the wire.
#pragma once
#include "core/base/api.h"
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "core/mem/buffer.h"
#include "core/net/frame_tx.h"
#include "core/net/route_query.h"
#include "core/net/udp_stack.h"

namespace ss::net {

// Why a datagram goes through the kernel socket.
enum class ToKernel : uint8_t {
  kLocal,             // this host's address: same-host traffic never passes XDP
  kNotUnicast,        // a broadcast, multicast or other route
  kOtherDevice,       // routed out of another interface (or one without a MAC)
  kNeighbourPending,  // next hop being resolved by the kernel
  kNeighbourFailed,   // next hop unreachable: the kernel reports it
  kOverMtu,           // needs fragmenting: refused here
  kOverFrame,         // does not fit one ring frame
  kCount
};
constexpr size_t kToKernelCount = static_cast<size_t>(ToKernel::kCount);
SS_API const char* to_kernel_name(ToKernel why);

// What a frame to a destination needs.
struct TxPath {
  IpAddr src;  // the source address to put in the frame
  uint8_t src_mac[6] = {}, dst_mac[6] = {};
  uint32_t mtu = 0;  // the largest IP datagram
};

// Answers the path for a flow: 0 and *out, 1 and *why (use the kernel),
// or -errno (the kernel's routing error: ENETUNREACH...).
class TxResolver {
 public:
  virtual ~TxResolver() = default;
  virtual int resolve(const Flow& f, TxPath* out, ToKernel* why) = 0;
  // Moves when an answer may have changed (a route came or went): a path
  // kept since is asked again. Constant for a resolver whose answers do not.
  virtual uint64_t generation() const { return 0; }
};

enum class SendStatus : uint8_t { kSent, kUseKernel, kError };
struct SendResult {
  SendStatus status = SendStatus::kError;
  int err = 0;                      // kError: the errno
  ToKernel why = ToKernel::kCount;  // kUseKernel: the reason
};

struct UdpTxCounters {
  uint64_t sent = 0;
  uint64_t sent_bytes = 0;  // their payloads
  uint64_t to_kernel[kToKernelCount] = {};
  uint64_t dummy = 0;      // dummy sends: frames built, never sent
  uint64_t ring_full = 0;  // tx ring full: EAGAIN
  uint64_t no_buffer = 0;  // no free frame: ENOBUFS
  uint64_t errors = 0;     // routing errors and failed kicks
};

class UdpTx {
 public:
  // frames: the netdev's send path (outlives this sender).
  UdpTx(UdpStack* stack, TxResolver* resolver, FrameTx* frames)
      : stack_(stack), resolver_(resolver), frames_(frames) {}
  SS_API ~UdpTx();
  // Sends `payload` from ep to dst (dst.ip empty: ep's connected peer).
  // kError with EDESTADDRREQ (no destination), EAFNOSUPPORT (family not
  // ep's), EAGAIN (tx ring full), ENOBUFS (no frame), or the route's errno.
  // dummy: kSent once the frame is built, and the frame never goes out.
  SS_API SendResult send(UdpEndpoint& ep, const UdpAddr& dst, std::span<const uint8_t> payload,
                         bool dummy = false);
  SS_API UdpTxCounters counters() const;
  // Takes sent frames back from the completion ring now (a send does it
  // too): what an idle sender's owner calls so the frames recycle.
  void reap() { frames_->reap(); }

 private:
  SendResult fail(int err);
  SendResult to_kernel(ToKernel why);

  UdpStack* stack_;
  TxResolver* resolver_;
  FrameTx* frames_;
  mutable std::mutex mu_;  // c_, and one send at a time
  UdpTxCounters c_;
};

}  // namespace ss::net
