// A connection shared by fork, handed from the process that moved it last
// to the others (ProcessShare's turn and hand-over, process_share.h): when
// that process exits or closes its copy, its state goes into memory the
// holders share, and a holder whose copy is out of date takes it up at its
// next call, so a connection carries on across processes that take turns
// (OpenSSH's monitor, its sandboxed child, then its session process).
//
// The buffers are memfd mappings made before the fork, the same in every
// holder; the state is the engine's counters, the queue of messages not
// yet read and the endpoint's own (connection.h, save_handover). Only a
// quiet connection is handed over (connected, every send done, no
// mapping of riomap's); otherwise the others' copies stay out of date and
// fail as before.
#include <vector>

#include "core/base/log.h"
#include "core/base/pod_bytes.h"
#include "librsocket/socket.h"

namespace ss::rs {

namespace {
// Room for the state: the engine's part, the messages of a receive queue
// of up to 4096 entries, tcp's 64 KiB of receive staging.
constexpr size_t kHandoverRoom = 96 * 1024;

struct EngineState {
  uint32_t state;
  int err;
  bool shut_wr, peer_dropped, swap_sgl, nodelay, keepalive, oobinline;
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
}  // namespace

void Socket::want_handover() { share_.want_handover(kHandoverRoom); }

bool Socket::hand_over_locked() {
  // Not while a call of this process still uses it (its close waits for
  // that call: defer_close), nor with work under way.
  if (!ep_ || !(state_ & kConnected) || lingering() || in_linger_ || reply_pending_ || fell_back_ ||
      sending_ || receiving_ || !iomaps_.empty() || !peer_iomaps_.empty() || !sends_drained())
    return false;
  EngineState st{};
  st.state = state_;
  st.err = err_;
  st.shut_wr = shut_wr_;
  st.peer_dropped = peer_dropped_;
  st.swap_sgl = swap_sgl_;
  st.nodelay = opt_.nodelay;
  st.keepalive = opt_.keepalive;
  st.oobinline = opt_.oobinline;
  st.sseq_no = sseq_no_;
  st.sseq_comp = sseq_comp_;
  st.peer_credits = peer_credits_;
  st.rseq_no = rseq_no_;
  st.rseq_comp = rseq_comp_;
  st.sqe_avail = sqe_avail_;
  st.ctrl_avail = ctrl_avail_;
  st.sbuf_bytes_avail = sbuf_bytes_avail_;
  st.sbuf_head = sbuf_head_;
  st.target_sge = target_sge_;
  st.sgl_slot = sgl_slot_;
  st.remote_sge = remote_sge_;
  st.remote_iomap_size = remote_iomap_size_;
  st.max_inline = max_inline_;
  for (uint32_t i = 0; i < kSglSize; i++) st.target[i] = target_[i];
  st.remote_sgl = remote_sgl_;
  st.remote_iomap = remote_iomap_;
  st.rbuf_bytes_avail = rbuf_bytes_avail_;
  st.rbuf_free_offset = rbuf_free_offset_;
  st.rbuf_offset = rbuf_offset_;
  st.rbuf_in_pos = rbuf_in_pos_;
  st.rbuf_queued = rbuf_queued_;
  st.rmsg_head_consumed = rmsg_head_consumed_;
  st.rmsgs = static_cast<uint32_t>(rmsg_.size());
  st.keepidle = opt_.keepidle;
  st.tos = opt_.tos;
  st.rcvlowat = opt_.rcvlowat;
  st.rcvtimeo_us = opt_.rcvtimeo_us;
  st.sndtimeo_us = opt_.sndtimeo_us;
  std::vector<uint8_t> out;
  put_pod(&out, st);
  for (size_t i = 0; i < rmsg_.size(); i++) put_pod(&out, rmsg_[i].len);
  if (!ep_->save_handover(&out)) return false;
  return share_.hand_over(out);
}

bool Socket::take_over_locked() {
  std::vector<uint8_t> in;
  uint32_t version = 0;
  if (!ep_ || !share_.left_for_us(&in, &version)) return false;
  PodReader r(in.data(), in.size());
  EngineState st{};
  if (!r.get(&st)) return false;
  std::vector<uint32_t> lens(st.rmsgs);
  for (uint32_t& len : lens)
    if (!r.get(&len)) return false;
  size_t ep_len = 0;
  const uint8_t* ep_state = r.rest(&ep_len);
  if (!ep_->load_handover(ep_state, ep_len)) return false;
  state_ = st.state;
  err_ = st.err;
  shut_wr_ = st.shut_wr;
  peer_dropped_ = st.peer_dropped;
  swap_sgl_ = st.swap_sgl;
  opt_.nodelay = st.nodelay;
  opt_.keepalive = st.keepalive;
  opt_.oobinline = st.oobinline;
  sseq_no_ = st.sseq_no;
  sseq_comp_ = st.sseq_comp;
  peer_credits_ = st.peer_credits;
  rseq_no_ = st.rseq_no;
  rseq_comp_ = st.rseq_comp;
  sqe_avail_ = st.sqe_avail;
  ctrl_avail_ = st.ctrl_avail;
  sbuf_bytes_avail_ = st.sbuf_bytes_avail;
  sbuf_head_ = st.sbuf_head;
  target_sge_ = st.target_sge;
  sgl_slot_ = st.sgl_slot;
  remote_sge_ = st.remote_sge;
  remote_iomap_size_ = st.remote_iomap_size;
  max_inline_ = st.max_inline;
  for (uint32_t i = 0; i < kSglSize; i++) target_[i] = st.target[i];
  remote_sgl_ = st.remote_sgl;
  remote_iomap_ = st.remote_iomap;
  rbuf_bytes_avail_ = st.rbuf_bytes_avail;
  rbuf_free_offset_ = st.rbuf_free_offset;
  rbuf_offset_ = st.rbuf_offset;
  rbuf_in_pos_ = st.rbuf_in_pos;
  rbuf_queued_ = st.rbuf_queued;
  rmsg_head_consumed_ = st.rmsg_head_consumed;
  rmsg_.clear();
  for (uint32_t len : lens) rmsg_.push_back(Rmsg{len});
  opt_.keepidle = st.keepidle;
  opt_.tos = st.tos;
  opt_.rcvlowat = st.rcvlowat;
  opt_.rcvtimeo_us = st.rcvtimeo_us;
  opt_.sndtimeo_us = st.sndtimeo_us;
  share_.adopt(version);
  SS_DEBUG("rsocket: fd %d: carries on from the state another process left", fd_);
  kick_waiters();
  return true;
}

}  // namespace ss::rs
