// One unreliable-datagram queue pair bound to one local IP address, as
// upstream's datagram rsockets keep one per local address: rdma_cm finds
// the device that owns the address (RDMA_PS_UDP, so the QP takes the
// well-known Q_Key 0x01234567), receive slots of GRH + 2048 bytes stay
// posted, and address handles to peers are resolved through rdma_cm's
// route, with a GRH from the right source GID on RoCE (upstream builds
// them from the port LID, which RoCE refuses). It knows nothing of the
// headers inside the datagrams (librsocket's dgram_ds_wire.h).
#pragma once
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/base/api.h"

namespace ss::prov::verbs {

class UdQp {
 public:
  static constexpr size_t kSlot = 2048;  // payload room per datagram, headers included
  static constexpr size_t kGrh = 40;     // every UD receive starts with one
  static constexpr uint32_t kQkey = 0x01234567;

  // A QP on the device of local address `addr` (its port is ignored), with
  // `slots` receive and send slots each. -ENODEV when no RDMA device owns
  // the address, -EOPNOTSUPP on an iWARP device (no unreliable datagrams)
  // or in a fork child of the process that opened the devices
  // (res::usable_here), else -errno.
  SS_API static int create(const sockaddr* addr, uint32_t slots, std::unique_ptr<UdQp>* out);
  SS_API ~UdQp();
  UdQp(const UdQp&) = delete;
  UdQp& operator=(const UdQp&) = delete;

  uint32_t qpn() const { return id_->qp->qp_num; }
  // The largest datagram, headers included: the slot, or the port's
  // active MTU when smaller (a UD message is one packet: Soft-RoCE on a
  // 1500-byte netdev carries 1024).
  size_t max_msg() const { return max_msg_; }
  // The completion channel's descriptor: readable after arm() when a
  // completion came.
  int event_fd() const { return comp_->fd; }

  // The address handle to whatever QP listens at IP address `dst`
  // (resolved once, then kept; at most ~4 s for address and route). -errno.
  SS_API int ah_for(const sockaddr* dst, ibv_ah** out);
  // One UD SEND of `head` then `iov` (at most max_msg() bytes together: else
  // -EMSGSIZE) to QP `qpn` behind `ah`. -EAGAIN when every send slot is
  // still in flight.
  SS_API int send(ibv_ah* ah, uint32_t qpn, const void* head, size_t head_len, const iovec* iov,
                  size_t iovcnt);
  // The oldest received datagram, past its GRH: valid until pop(). -EAGAIN
  // when none; receives that failed are re-posted and skipped.
  SS_API int front(const uint8_t** data, size_t* len);
  // Gives the front slot back to the device.
  SS_API void pop();
  // Asks for an event on the next completion (after acknowledging those
  // read from event_fd()); 0 or -errno.
  SS_API int arm();

 private:
  UdQp() = default;
  int setup(const sockaddr* addr, uint32_t slots);
  int post_recv(uint32_t slot);
  // Moves completions off the CQ: sends free their slot, receives queue up.
  void poll_locked();

  rdma_cm_id* id_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* comp_ = nullptr;
  ibv_cq* cq_ = nullptr;
  ibv_mr* mr_ = nullptr;
  bool holds_async_ = false;
  uint8_t* buf_ = nullptr;  // slots_ receive slots (GRH + kSlot), then slots_ send slots
  size_t buf_len_ = 0;
  uint32_t slots_ = 0;
  uint32_t max_inline_ = 0;
  size_t max_msg_ = kSlot;

  std::mutex mu_;
  std::vector<uint32_t> free_send_;  // send slots not in flight
  struct Received {
    uint32_t slot;
    uint32_t len;  // bytes after the GRH
  };
  std::vector<Received> ready_;  // in arrival order; ready_head_ is the front
  size_t ready_head_ = 0;
  struct Dest {
    sockaddr_storage addr;
    ibv_ah* ah;
  };
  std::vector<Dest> ahs_;
};

}  // namespace ss::prov::verbs
