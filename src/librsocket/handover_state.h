// The state of a connection's engine carried to another process or
// image (handover.cc: a fork sibling; exec_handover.cc: a new image),
// the same fields both ways (Socket::engine_fields).
#pragma once
#include "librsocket/socket.h"

namespace ss::rs {

// One field each way: saving copies it into the state, loading back.
template <class T>
void field(bool save, T& socket, T& state) {
  if (save)
    state = socket;
  else
    socket = state;
}

struct Socket::EngineState {
  uint32_t state;
  int err;
  bool swap_sgl, nodelay, keepalive, oobinline;
  uint16_t sseq_no, sseq_comp, peer_credits, rseq_no, rseq_comp;
  uint32_t sqe_avail, ctrl_avail, sbuf_bytes_avail, sbuf_head;
  int target_sge, sgl_slot, remote_sge;
  uint32_t remote_iomap_size, max_inline;
  RsSge target[kSglSize], remote_sgl, remote_iomap;
  uint32_t rbuf_bytes_avail, rbuf_free_offset, rbuf_offset, rbuf_in_pos, rbuf_queued;
  uint32_t rmsg_head_consumed, rmsgs;
  uint32_t keepidle;
  int tos, rcvlowat;
  int64_t rcvtimeo_us, sndtimeo_us;
};

}  // namespace ss::rs
