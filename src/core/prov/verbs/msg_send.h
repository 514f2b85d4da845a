// The iWARP variant of rsockets (upstream's RS_OPT_MSG_SEND): iWARP has no
// RDMA write with immediate, so each message is a WRITE of its data (if
// any) followed by a 4-byte inline SEND carrying the 32-bit message in host
// byte order, and every receive gets a 4-byte buffer for it. The endpoint
// keeps its write-with-immediate path; this holds what differs.
#pragma once
#include <infiniband/verbs.h>

#include <cstdint>

namespace ss::prov::verbs {

class MsgSend {
 public:
  // Bit 62 of a send wr_id marks the write half of a message: its
  // completion is not the message's (the SEND's is).
  static constexpr uint64_t kWriteHalfTag = 1ull << 62;
  // The wr_id of a delivery fence (post_fence); its completion is hidden.
  static constexpr uint64_t kFenceTag = 1ull << 61;
  // The wr_id of a nudge (post_nudge); its completion is hidden.
  static constexpr uint64_t kNudgeTag = 1ull << 60;
  // Work requests beyond the engine's messages: one fence, the nudges.
  static constexpr uint32_t kMaxNudges = 8;
  static constexpr uint32_t kExtraSendWrs = 1 + kMaxNudges;

  MsgSend() = default;
  MsgSend(const MsgSend&) = delete;
  MsgSend& operator=(const MsgSend&) = delete;
  ~MsgSend();

  // Registers `slots` 4-byte receive buffers (and the fence's sink) on
  // `pd`; 0 or -errno. `fence_reads_byte`: see post_fence.
  int init(ibv_pd* pd, uint32_t slots, bool fence_reads_byte);
  // Posts one receive with the next buffer; its wr_id carries the slot
  // in bits 32-62, which recv_wr_id() clears again.
  int post_recv(ibv_qp* qp, uint64_t wr_id);
  // The message of a successful receive completion; false when the peer
  // sent something other than a 4-byte message.
  bool message(const ibv_wc& wc, uint32_t* msg) const;
  // The wr_id given to post_recv, from a receive completion's.
  static uint64_t recv_wr_id(uint64_t raw);
  // Posts `write` (its data, when it has any) then the 4-byte SEND of
  // `msg` with `wr_id`, in one chain; ibv_post_send's result.
  int post(ibv_qp* qp, ibv_send_wr* write, uint64_t wr_id, uint32_t msg);
  // Posts an RDMA READ with kFenceTag: on iWARP a send completes once TCP
  // holds its bytes, but a read completes only after the peer has
  // processed everything posted before it. Needs an ORD of 1 or more.
  // Zero-length, except with `fence_reads_byte` (siw): siw answers a
  // zero-length read that waits behind its own sends with a stale SGE, a
  // protection error that ends the connection, so there it reads the first
  // byte our last write went to (ENOENT before any write).
  int post_fence(ibv_qp* qp) const;
  // Posts a zero-length RDMA WRITE with kNudgeTag: bytes on the wire that
  // the peer places nowhere and completes nothing for, so that a peer's
  // socket holding earlier bytes unread is woken (see
  // VerbsEndpoint::confirm_first_message). It names the target of our
  // last write: a tag the peer exposes, should a device check it.
  int post_nudge(ibv_qp* qp) const;

 private:
  uint32_t* slots_ = nullptr;
  ibv_mr* mr_ = nullptr;
  uint32_t count_ = 0;
  uint32_t next_ = 0;
  bool fence_reads_byte_ = false;
  bool wrote_ = false;  // last_write_* are set
  uint64_t last_write_addr_ = 0;
  uint32_t last_write_rkey_ = 0;
};

}  // namespace ss::prov::verbs
