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
#include "librsocket/handover_state.h"

namespace ss::rs {

namespace {
// Room for the state: the engine's part, the messages of a receive queue
// of up to 4096 entries, tcp's 64 KiB of receive staging.
constexpr size_t kHandoverRoom = 96 * 1024;

}  // namespace

// The engine's fields and the options a holder may have changed, the
// same list for both directions (the message queue apart).
void Socket::engine_fields(EngineState* st, bool save) {
  // The phase and what the connection's peer or calls made of it; the
  // other conditions are this process's own (its close, linger, fallback).
  constexpr uint32_t kCarried = kPhaseMask | kShutWr | kPeerDropped;
  if (save)
    st->state = state_ & kCarried;
  else
    state_ = (state_ & ~kCarried) | (st->state & kCarried);
  field(save, err_, st->err);
  field(save, swap_sgl_, st->swap_sgl);
  field(save, opt_.nodelay, st->nodelay);
  field(save, opt_.keepalive, st->keepalive);
  field(save, opt_.oobinline, st->oobinline);
  field(save, sseq_no_, st->sseq_no);
  field(save, sseq_comp_, st->sseq_comp);
  field(save, peer_credits_, st->peer_credits);
  field(save, rseq_no_, st->rseq_no);
  field(save, rseq_comp_, st->rseq_comp);
  field(save, sqe_avail_, st->sqe_avail);
  field(save, ctrl_avail_, st->ctrl_avail);
  field(save, sbuf_bytes_avail_, st->sbuf_bytes_avail);
  field(save, sbuf_head_, st->sbuf_head);
  field(save, target_sge_, st->target_sge);
  field(save, sgl_slot_, st->sgl_slot);
  field(save, remote_sge_, st->remote_sge);
  field(save, remote_iomap_size_, st->remote_iomap_size);
  field(save, max_inline_, st->max_inline);
  for (uint32_t i = 0; i < kSglSize; i++) field(save, target_[i], st->target[i]);
  field(save, remote_sgl_, st->remote_sgl);
  field(save, remote_iomap_, st->remote_iomap);
  field(save, rbuf_bytes_avail_, st->rbuf_bytes_avail);
  field(save, rbuf_free_offset_, st->rbuf_free_offset);
  field(save, rbuf_offset_, st->rbuf_offset);
  field(save, rbuf_in_pos_, st->rbuf_in_pos);
  field(save, rbuf_queued_, st->rbuf_queued);
  field(save, rmsg_head_consumed_, st->rmsg_head_consumed);
  field(save, opt_.keepidle, st->keepidle);
  field(save, opt_.tos, st->tos);
  field(save, opt_.rcvlowat, st->rcvlowat);
  field(save, opt_.rcvtimeo_us, st->rcvtimeo_us);
  field(save, opt_.sndtimeo_us, st->sndtimeo_us);
}

void Socket::want_handover() { share_.want_handover(kHandoverRoom); }

bool Socket::quiet_locked() const {
  // Not while a call of this process still uses it (its close waits for
  // that call: defer_close), nor with work under way.
  return ep_ && (state_ & kConnected) && !lingering() &&
         !has(kInLinger | kReplyPending | kFellBack) && !sending_.busy && !receiving_.busy &&
         iomaps_.empty() && peer_iomaps_.empty() && sends_drained();
}

void Socket::put_engine(std::vector<uint8_t>* out) {
  EngineState st{};
  engine_fields(&st, true);
  st.rmsgs = static_cast<uint32_t>(rmsg_.size());
  put_pod(out, st);
  for (size_t i = 0; i < rmsg_.size(); i++) put_pod(out, rmsg_[i].len);
}

bool Socket::get_engine(PodReader* r, EngineState* st, std::vector<uint32_t>* lens) {
  size_t left = 0;
  r->rest(&left);
  if (!r->get(st) || st->rmsgs > left / sizeof(uint32_t)) return false;
  lens->resize(st->rmsgs);
  for (uint32_t& len : *lens)
    if (!r->get(&len)) return false;
  return true;
}

void Socket::apply_engine(EngineState* st, const std::vector<uint32_t>& lens) {
  engine_fields(st, false);
  rmsg_.clear();
  for (uint32_t len : lens) rmsg_.push_back(Rmsg{len});
}

bool Socket::hand_over_locked() {
  if (!quiet_locked()) return false;
  std::vector<uint8_t> out;
  put_engine(&out);
  if (!ep_->save_handover(&out)) return false;
  return share_.hand_over(out);
}

bool Socket::take_over_locked() {
  std::vector<uint8_t> in;
  uint32_t version = 0;
  if (!ep_ || !share_.left_for_us(&in, &version)) return false;
  PodReader r(in.data(), in.size());
  EngineState st{};
  std::vector<uint32_t> lens;
  if (!get_engine(&r, &st, &lens)) return false;
  size_t ep_len = 0;
  const uint8_t* ep_state = r.rest(&ep_len);
  if (!ep_->load_handover(ep_state, ep_len)) return false;
  apply_engine(&st, lens);
  share_.adopt(version);
  SS_DEBUG("rsocket: fd %d: carries on from the state another process left", fd_);
  kick_waiters();
  return true;
}

}  // namespace ss::rs
