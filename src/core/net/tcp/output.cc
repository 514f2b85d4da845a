// What a connection sends: data within the peer's and the congestion
// window (Nagle, sender SWS avoidance), SYNs and FINs, ACKs carrying
// timestamps and SACK blocks, resets; and the receive window each
// segment advertises (scaled, never shrunk, receiver SWS avoidance).
#include <algorithm>
#include <cstring>

#include "core/net/tcp/connection.h"
#include "core/net/tcp/seq.h"

namespace ss::net::tcp {

bool Connection::sends_data() const {
  switch (state_) {
    case State::kEstablished:
    case State::kCloseWait:
    case State::kFinWait1:
    case State::kClosing:
    case State::kLastAck:
      return true;
    default:
      return false;
  }
}

void Connection::transmit(uint64_t now) {
  if (!sends_data()) {  // nothing of ours to send but an ACK
    if (ack_now_ && state_ != State::kClosed) send_ack(now);
    return;
  }
  const uint32_t data_end = snd_una_ + static_cast<uint32_t>(sndq_.size());
  bool sent = retransmit_lost(now);
  bool blocked = false;  // new data found no way out (no frame, no route now)
  for (;;) {
    // The peer's window bounds what is outstanding, the congestion window
    // pipe: each duplicate ACK or SACKed segment takes one off pipe and
    // lets one new segment go (RFC 3042's limited transmit, RFC 6675).
    const uint32_t outstanding = snd_nxt_ - snd_una_;
    const uint32_t rwnd_room = snd_wnd_ > outstanding ? snd_wnd_ - outstanding : 0;
    const uint32_t cwnd = send_window();
    const uint32_t in_network = pipe();
    const uint32_t usable = std::min(rwnd_room, cwnd > in_network ? cwnd - in_network : 0);
    const uint32_t unsent = seq_lt(snd_nxt_, data_end) ? data_end - snd_nxt_ : 0;
    const uint32_t len = std::min({unsent, mss_, usable});
    const bool fin = fin_queued_ && snd_nxt_ + len == fin_seq_;  // a FIN needs no window
    if (len == 0 && !fin) break;
    if (len < mss_ && !fin) {
      // TCP_CORK holds the tail for at most its ceiling (as Linux).
      if (len == unsent && cfg_.cork && !cork_expired_) {
        if (!cork_timer_.armed()) arm(&cork_timer_, now + kCorkCeilingUs);
        break;
      }
      // Nagle (RFC 9293 §3.7.4) in Minshall's form, as Linux: the tail
      // waits while a small segment is unacknowledged; sender SWS
      // avoidance: no sliver of a window while an ACK is still to come.
      if (len == unsent ? !cfg_.nodelay && !cfg_.cork && seq_gt(snd_sml_, snd_una_)
                        : outstanding > 0 && len < max_snd_wnd_ / 2) {
        break;
      }
    }
    const uint8_t flags = kAck | (fin ? kFin : 0) | (len && snd_nxt_ + len == data_end ? kPsh : 0);
    if (snd_una_ == snd_max_) progress_us_ = now;  // the user timeout counts from here
    if (!send_segment(snd_nxt_, len, flags, now)) {
      blocked = true;
      break;
    }
    persist_backoff_ = 0;
    prr_sent(len);
    if (len < mss_) {
      snd_sml_ = snd_nxt_ + len;
      cork_expired_ = false;  // the tail went: a new one is held again
      timers_->cancel(&cork_timer_);
    }
    snd_nxt_ += len + fin;
    snd_max_ = seq_max(snd_max_, snd_nxt_);
    sent = true;
  }
  if (!sent && ack_now_) send_ack(now);
  if (snd_max_ != snd_una_ && !retransmit_timer_.armed() && !probe_timer_.armed()) {
    arm_retransmit(now);
  }
  // Data waits and nothing is in flight to bring an ACK: a zero window, or
  // a segment that could not leave. The persist timer tries again (Linux's
  // probe timer), or nothing would until the program's next call.
  const bool waiting = seq_lt(snd_nxt_, data_end) || (fin_queued_ && snd_nxt_ == fin_seq_);
  if ((snd_wnd_ == 0 || blocked) && snd_max_ == snd_una_ && waiting && !persist_timer_.armed()) {
    arm(&persist_timer_, now + persist_interval());
  }
  arm_probe(now);
}

// A retransmission's flags: PSH again on the tail of what is queued.
uint8_t Connection::retransmit_flags(uint32_t seq, uint32_t len, bool fin) const {
  const uint32_t data_end = snd_una_ + static_cast<uint32_t>(sndq_.size());
  return kAck | (fin ? kFin : 0) | (len && seq + len == data_end ? kPsh : 0);
}

// The segments judged lost, oldest first, while pipe is below the
// congestion window (RFC 6675 §5 NextSeg rule 1). True if any went.
bool Connection::retransmit_lost(uint64_t now) {
  if (log_.lost_bytes() == 0) return false;
  bool sent = false;
  for (SentSegment& s : log_.entries()) {
    if (!s.lost) continue;
    // The first retransmission of an episode goes regardless of pipe
    // (RFC 6675 §5 step 4.3: the fast retransmit).
    if (!fast_retransmit_ && pipe() >= send_window()) break;
    fast_retransmit_ = false;
    const bool fin = fin_queued_ && s.end == fin_seq_ + 1;
    const uint32_t len = s.end - s.seq - (fin ? 1 : 0);
    if (!send_segment(s.seq, len, retransmit_flags(s.seq, len, fin), now)) break;
    prr_sent(len);
    sent = true;
  }
  return sent;
}

void Connection::send_syn(uint64_t now) {
  send_segment(iss_, 0, state_ == State::kSynReceived ? kSyn | kAck : kSyn, now);
  snd_nxt_ = iss_ + 1;
  snd_max_ = seq_max(snd_max_, snd_nxt_);
  if (!retransmit_timer_.armed()) arm_retransmit(now);
}

void Connection::send_reset(uint32_t seq, bool with_ack, uint64_t now) {
  send_segment(seq, 0, with_ack ? kRst | kAck : kRst, now);
}

void Connection::limited_ack(uint64_t now) {
  if (oow_acked_ && now - last_oow_ack_us_ < cfg_.oow_ack_interval_us) return;
  oow_acked_ = true;
  last_oow_ack_us_ = now;
  ctr_.challenge_acks++;
  send_ack(now);
}

bool Connection::send_segment(uint32_t seq, uint32_t len, uint8_t flags, uint64_t now) {
  const bool syn = flags & kSyn, rst = flags & kRst;
  Options o;
  if (syn) {
    o.has_mss = true;
    o.mss = cfg_.mss;
    const bool offer = !(flags & kAck);  // our SYN offers all; a SYN-ACK answers the peer's
    o.has_wscale = offer ? cfg_.window_scaling : ws_ok_;
    o.wscale = wscale_offer_;
    o.sack_permitted = offer ? cfg_.sack : sack_ok_;
    o.has_ts = offer ? cfg_.timestamps : ts_ok_;
  } else {
    o.has_ts = ts_ok_;
  }
  if (o.has_ts) {
    o.ts_val = ts_now(now);
    o.ts_ecr = (flags & kAck) ? ts_recent_ : 0;
  }
  if (!syn && !rst && sack_ok_)
    sack_report_.fill(rxq_.held_ranges(), dsack_left_, dsack_right_, &o);
  uint8_t opts[kMaxOptionsLen];
  size_t opts_len = write_options(o, opts);
  // A full segment leaves room for timestamps only (mss_): SACK blocks
  // beside its data would pass the MSS, and so the path's MTU. The oldest
  // blocks give way, as Linux's tcp_current_mss takes them off the data.
  const size_t limit = kHeaderLen + std::min(peer_mss_, send_mss_cap());
  while (len && !syn && kHeaderLen + opts_len + len > limit && o.sack_count) {
    o.sack_count--;
    opts_len = write_options(o, opts);
  }
  const size_t header_len = kHeaderLen + opts_len;
  const std::span<uint8_t> room = sink_->header_room(header_len, len);
  if (room.size() < header_len) {
    ctr_.no_buffer++;
    return false;
  }
  Header h;
  h.src_port = local_port_;
  h.dst_port = remote_port_;
  h.seq = seq;
  h.ack = (flags & kAck) ? rcv_nxt_ : 0;
  h.flags = flags;
  h.window = rst ? 0 : advertise_window(syn);
  write_header(room.data(), h, opts_len);
  std::memcpy(room.data() + kHeaderLen, opts, opts_len);
  sink_->send_segment({&sndq_, seq - snd_una_, len});
  ctr_.segs_out++;
  if (rst) {
    ctr_.rst_out++;
    return true;
  }
  if (flags & kAck) {
    last_ack_sent_ = rcv_nxt_;
    ack_now_ = false;
    ack_held_ = false;
    compressed_acks_ = 0;
    dsack_left_ = dsack_right_ = 0;
    timers_->cancel(&delack_timer_);
  }
  const uint32_t space = len + syn + ((flags & kFin) ? 1 : 0);
  if (len) ctr_.data_segs_out++;
  if (space) {
    if (seq_lt(seq, snd_max_)) {
      ctr_.retrans_segs++;
      ctr_.bytes_retrans += len;
    } else {
      ctr_.bytes_out += len;
    }
    log_.sent(seq, seq + space, now, snd_max_);
  }
  return true;
}

uint32_t Connection::syn_window() const { return std::min<uint32_t>(cfg_.rcv_buf, 0xffff); }

uint16_t Connection::advertise_window(bool syn) {
  if (syn) {
    rcv_adv_ = rcv_nxt_ + syn_window();
    return static_cast<uint16_t>(syn_window());
  }
  const size_t held = rxq_.readable() + rxq_.held_bytes() + lent_;
  const uint32_t space = cfg_.rcv_buf > held ? static_cast<uint32_t>(cfg_.rcv_buf - held) : 0;
  const uint32_t ws = rcv_wscale_;
  uint32_t right = rcv_nxt_ + space;
  // Never shrink (RFC 9293 §3.8.6.2.2); open only by a useful amount.
  const bool keep =
      seq_le(right, rcv_adv_) || right - rcv_adv_ < std::min(cfg_.rcv_buf / 2, rcv_mss_);
  if (keep) right = rcv_adv_;
  const uint32_t wnd = right - rcv_nxt_;
  uint32_t field = keep ? (wnd + (1u << ws) - 1) >> ws : wnd >> ws;
  field = std::min<uint32_t>(field, 0xffff);
  rcv_adv_ = seq_max(rcv_adv_, rcv_nxt_ + (field << ws));
  return static_cast<uint16_t>(field);
}

// After the program read: a window update when the window it can
// offer now is at least double the one the peer knows (as Linux).
void Connection::maybe_window_update(uint64_t now) {
  if (state_ != State::kEstablished && state_ != State::kFinWait1 && state_ != State::kFinWait2) {
    return;
  }
  tune_rcv_buf(now);
  const size_t held = rxq_.readable() + rxq_.held_bytes() + lent_;
  const uint32_t space = cfg_.rcv_buf > held ? static_cast<uint32_t>(cfg_.rcv_buf - held) : 0;
  const uint32_t offered = rcv_adv_ - rcv_nxt_;
  if (space >= 2 * offered && space - offered >= rcv_mss_) {
    ack_now_ = true;
    transmit(now);
  }
}

void Connection::tune_rcv_buf(uint64_t now) {
  const uint32_t copied_seq = rcv_nxt_ - static_cast<uint32_t>(rxq_.readable());
  cfg_.rcv_buf = rcv_tuner_.read(copied_seq, cfg_.rcv_buf, cfg_.rcv_buf_max, rcv_mss_, now);
}

uint32_t Connection::ts_now(uint64_t now) const {
  return static_cast<uint32_t>(now / 1000) + cfg_.ts_offset;  // a millisecond clock
}

// No later than the user timeout, which the expiry then enforces.
void Connection::arm_retransmit(uint64_t now) {
  uint64_t due = now + rtt_.rto_us();
  if (cfg_.user_timeout_us && sends_data())
    due = std::min(due, progress_us_ + cfg_.user_timeout_us);
  arm(&retransmit_timer_, std::max(due, now));
}

}  // namespace ss::net::tcp
