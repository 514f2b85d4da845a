// Segment arrival (RFC 9293 §3.10.7) with RFC 5961's defences (challenge
// ACKs for in-window RSTs and SYNs, ACKs bounded by what was sent),
// RFC 7323's PAWS and timestamp echo, and the receive side's data, FIN
// and ACK policy. What goes out as a result leaves through transmit().
#include <algorithm>
#include <cerrno>

#include "core/net/tcp/connection.h"
#include "core/net/tcp/seq.h"

namespace ss::net::tcp {

namespace {

// RFC 7323 §5.5: a ts_recent idle this long cannot be compared any more.
constexpr uint64_t kPawsIdleUs = 24ull * 24 * 3600 * 1'000'000;
constexpr uint32_t kMaxQuickAcks = 16;  // as Linux at the start of a connection
// SACK compression's bounds, Linux's defaults (tcp_comp_sack_nr,
// tcp_comp_sack_delay_ns), and the duplicate ACKs sent before it.
constexpr uint32_t kCompressedAcks = 44;
constexpr uint64_t kCompressUs = 1000;
constexpr uint32_t kDupAcksAtOnce = 3;

}  // namespace

void Connection::input(const Header& h, const Options& o, mem::Buffer data, uint64_t now) {
  ctr_.segs_in++;
  if (data.chain_size()) ctr_.data_segs_in++;  // as Linux counts them: before any check
  switch (state_) {
    case State::kClosed:
      return;  // the stack answers segments of no connection
    case State::kSynSent:
      input_syn_sent(h, o, now);
      break;
    default:
      input_synchronized(h, o, std::move(data), now);
      break;
  }
  if (state_ != State::kClosed) transmit(now);
}

// §3.10.7.3.
void Connection::input_syn_sent(const Header& h, const Options& o, uint64_t now) {
  const bool has_ack = h.flags & kAck;
  if (has_ack && (seq_le(h.ack, iss_) || seq_gt(h.ack, snd_max_))) {
    if (h.flags & kRst) return;
    send_reset(h.ack, false, now);
    // The peer holds an older connection of this 4-tuple (TIME-WAIT, or
    // one it thinks open) and our ISN fell below it (ISNs of another
    // process, another key): the RST ends it, so the SYN goes again now
    // rather than at the RTO, a second later. Once: a peer that keeps its
    // TIME-WAIT through a RST (RFC 1337) waits for the timer.
    if (!syn_after_reset_) {
      syn_after_reset_ = true;
      send_syn(now);
    }
    return;
  }
  if (h.flags & kRst) {
    ctr_.rst_in++;
    if (has_ack) fail(ECONNREFUSED);
    return;
  }
  if (!(h.flags & kSyn)) return;
  irs_ = h.seq;
  rcv_nxt_ = h.seq + 1;
  rcv_adv_ = rcv_nxt_ + syn_window();  // what our SYN offered
  negotiate(o, has_ack);
  if (ts_ok_) ts_recent_us_ = now;
  snd_wnd_ = max_snd_wnd_ = h.window;  // a SYN's window is never scaled
  snd_wl1_ = h.seq;
  snd_wl2_ = h.ack;
  if (has_ack) {
    SentSegment syn{};
    acked(h.ack, o, now, &syn);
    establish(now);
    ack_now_ = true;
  } else {  // simultaneous open: SYN-ACK from the same ISS
    state_ = State::kSynReceived;
    snd_nxt_ = iss_;
    send_syn(now);
  }
}

bool Connection::acceptable(const Header& h, uint32_t seg_len) const {
  const uint32_t wnd = rcv_adv_ - rcv_nxt_;
  if (seg_len == 0) return wnd == 0 ? h.seq == rcv_nxt_ : seq_in(h.seq, rcv_nxt_, wnd);
  if (wnd == 0) return false;
  return seq_in(h.seq, rcv_nxt_, wnd) || seq_in(h.seq + seg_len - 1, rcv_nxt_, wnd);
}

// §3.10.7.4, in its order.
void Connection::input_synchronized(const Header& h, const Options& o, mem::Buffer data,
                                    uint64_t now) {
  const bool rst = h.flags & kRst, syn = h.flags & kSyn, fin = h.flags & kFin;
  const uint32_t seg_len = static_cast<uint32_t>(data.chain_size()) + syn + fin;

  // PAWS (RFC 7323 §5.3): an older timestamp than the last in-order one
  // is a segment from an earlier wrap of the sequence space.
  if (ts_ok_ && o.has_ts && !rst && seq_lt(o.ts_val, ts_recent_) &&
      now - ts_recent_us_ < kPawsIdleUs) {
    ctr_.paws_drops++;
    if (seg_len) {
      ack_now_ = true;
    } else {
      limited_ack(now);
    }
    return;
  }
  if (state_ == State::kSynReceived && syn && h.seq == irs_) {
    if (!(h.flags & kAck)) {  // the peer's SYN again: our SYN-ACK was lost
      snd_nxt_ = iss_;
      send_syn(now);
    } else if (h.ack == iss_ + 1) {  // simultaneous open: the peer's SYN-ACK
      snd_wnd_ = max_snd_wnd_ = h.window;
      snd_wl1_ = h.seq;
      snd_wl2_ = h.ack;
      SentSegment syn{};
      acked(h.ack, o, now, &syn);
      establish(now);
    } else {
      send_reset(h.ack, false, now);
    }
    return;
  }
  if (!acceptable(h, seg_len)) {
    ctr_.out_of_window++;
    if (rst) return;
    if (syn) {
      limited_ack(now);  // RFC 5961 §4
      return;
    }
    if (h.seq == rcv_nxt_ && rcv_adv_ == rcv_nxt_) {
      // A probe of our zero window: its ACK counts, its data waits for
      // room; the prober needs our window back.
      data.reset();
      ack_now_ = true;
      process_ack(h, o, seg_len, now);
      return;
    }
    if (state_ == State::kTimeWait && fin && h.seq + seg_len == rcv_nxt_) {
      enter_time_wait(now);  // the peer's FIN again: our last ACK was lost
      ack_now_ = true;
    } else if (seg_len && seq_le(h.seq + seg_len, rcv_nxt_)) {  // all seen: D-SACK it
      ctr_.dup_segs++;
      dsack_left_ = h.seq;
      dsack_right_ = h.seq + static_cast<uint32_t>(data.chain_size());
      ack_now_ = true;
    } else if (seg_len) {
      ack_now_ = true;
    } else {
      limited_ack(now);
    }
    return;
  }
  last_rcv_us_ = now;  // an acceptable segment: the peer is alive
  keep_probes_ = 0;
  if (rst) {  // RFC 5961 §3.2: only the exact sequence number resets
    ctr_.rst_in++;
    if (h.seq == rcv_nxt_) {
      reset_by_peer();
    } else {
      limited_ack(now);
    }
    return;
  }
  if (syn) {
    limited_ack(now);  // RFC 5961 §4: a SYN in the window
    return;
  }
  if (!(h.flags & kAck)) return;
  if (!process_ack(h, o, seg_len, now)) return;
  process_data(h, std::move(data), now);
}

void Connection::reset_by_peer() {
  switch (state_) {
    case State::kSynReceived:
      fail(ECONNREFUSED);
      break;
    case State::kEstablished:
    case State::kFinWait1:
    case State::kFinWait2:
      fail(ECONNRESET);
      break;
    case State::kCloseWait:
      fail(EPIPE);
      break;
    default:
      set_closed();
      break;
  }
}

// The ACK field (§3.10.7.4 fifth, RFC 5961 §5.2). False: drop the rest.
bool Connection::process_ack(const Header& h, const Options& o, uint32_t seg_len, uint64_t now) {
  if (state_ == State::kSynReceived) {
    if (seq_le(h.ack, snd_una_) || seq_gt(h.ack, snd_max_)) {
      send_reset(h.ack, false, now);
      return false;
    }
    snd_wnd_ = uint32_t{h.window} << snd_wscale_;
    snd_wl1_ = h.seq;
    snd_wl2_ = h.ack;
    SentSegment syn{};
    acked(h.ack, o, now, &syn);
    establish(now);
  }
  if (seq_gt(h.ack, snd_max_)) {  // acknowledges what was never sent
    ctr_.ack_beyond_sent++;
    limited_ack(now);
    return false;
  }
  if (seq_lt(h.ack, snd_una_ - max_snd_wnd_)) {
    limited_ack(now);
    return false;
  }
  // RFC 7323 §4.3, only now that RST, SYN and ACK are checked (else a
  // blind in-window segment could move TS.Recent ahead and have PAWS drop
  // the peer's real ones), and never backwards (as Linux).
  if (ts_ok_ && o.has_ts && seq_le(h.seq, last_ack_sent_) && seq_ge(o.ts_val, ts_recent_)) {
    ts_recent_ = o.ts_val;
    ts_recent_us_ = now;
  }
  probes_out_ = 0;  // the peer answers: zero-window probing goes on
  const uint32_t wnd = uint32_t{h.window} << snd_wscale_;
  SentSegment delivered{};  // the newest segment this ACK delivers, for RACK
  const uint32_t una_before = snd_una_, dupacks_before = dupacks_;
  const int64_t sacked_before = log_.sacked_bytes();
  const uint64_t dsacks_before = ctr_.dsacks_in;
  if (sack_ok_ && o.sack_count) process_sack(h.ack, o, &delivered);
  if (seq_gt(h.ack, snd_una_)) {
    dupacks_ = 0;
    acked(h.ack, o, now, &delivered);
    // RFC 6582 §3.2: without SACK a partial ACK in recovery means the
    // next segment was lost too.
    if (in_recovery_ && !recovery_rto_ && !sack_ok_ && !log_.empty()) {
      log_.mark_lost(log_.entries().front());
      ctr_.dupack_lost++;
      fast_retransmit_ = true;  // at once, whatever pipe says
    }
  } else if (h.ack == snd_una_ && seg_len == 0 && wnd == snd_wnd_ && snd_max_ != snd_una_) {
    dupacks_++;  // RFC 5681 §2's duplicate ACK
  }
  if (delivered.any()) update_rack(delivered, now);
  if (seq_ge(h.ack, snd_una_) &&
      (seq_lt(snd_wl1_, h.seq) || (snd_wl1_ == h.seq && seq_le(snd_wl2_, h.ack)))) {
    const bool opened = snd_wnd_ == 0 && wnd > 0;
    snd_wnd_ = wnd;
    max_snd_wnd_ = std::max(max_snd_wnd_, wnd);
    snd_wl1_ = h.seq;
    snd_wl2_ = h.ack;
    if (opened) {
      timers_->cancel(&persist_timer_);
      persist_backoff_ = 0;
    }
  }
  tlp_on_ack(h.ack, una_before, log_.sacked_bytes() != sacked_before,
             ctr_.dsacks_in != dsacks_before, now);
  detect_loss(now);
  // RFC 6937: every ACK that starts or continues fast recovery, not the
  // one that ends it. Without SACK a duplicate ACK stands for a segment.
  if (in_recovery_ && !recovery_rto_) {
    int64_t got = int64_t{snd_una_ - una_before} + log_.sacked_bytes() - sacked_before;
    if (!sack_ok_ && dupacks_ > dupacks_before) got = mss_;
    prr_on_ack(got);
  }
  const bool fin_acked = fin_queued_ && seq_gt(snd_una_, fin_seq_);
  switch (state_) {
    case State::kFinWait1:
      if (fin_acked) {
        state_ = State::kFinWait2;
        if (closed_by_program_) arm(&wait_timer_, now + cfg_.fin_timeout_us);
      }
      break;
    case State::kClosing:
      if (fin_acked) enter_time_wait(now);
      return false;
    case State::kLastAck:
      if (fin_acked) set_closed();
      return false;
    case State::kTimeWait:
      return false;
    default:
      break;
  }
  return true;
}

// As Linux's tcp_new_space: once a program's send found the buffer full
// while the congestion window was not (the buffer, not the network, held
// it back), room for two windows of data, up to snd_buf_max.
void Connection::grow_send_buffer() {
  if (!sndq_full_ || cfg_.snd_buf_max <= sndq_.capacity()) return;
  const uint64_t cwnd = cc_->cwnd();
  if (snd_max_ - snd_una_ >= cwnd) return;
  sndq_full_ = false;
  const uint64_t want = std::max<uint64_t>(2 * cwnd, 2 * uint64_t{sndq_.capacity()});
  sink_->release_data();
  sndq_.grow(static_cast<size_t>(std::min<uint64_t>(want, cfg_.snd_buf_max)));
}

// snd_una moves to ack: the buffer lets the acknowledged bytes go, the
// RTT is sampled, the window grows (not in fast recovery), recovery ends
// at its recovery point, and the retransmission timer restarts.
void Connection::acked(uint32_t ack, const Options& o, uint64_t now, SentSegment* delivered) {
  const uint32_t data_end = fin_queued_ && seq_gt(ack, fin_seq_) ? fin_seq_ : ack;
  const uint32_t data_from = seq_max(snd_una_, iss_ + 1);
  const uint32_t data_acked = seq_gt(data_end, data_from) ? data_end - data_from : 0;
  sndq_.consume(data_acked);
  ctr_.bytes_acked += data_acked;

  log_.ack(ack, delivered);
  uint64_t sample = 0;
  if (delivered->any() && !delivered->retransmitted) {
    sample = now - delivered->sent_us;
  } else if (ts_ok_ && o.has_ts && o.ts_ecr != 0) {  // which copy was acked: the echo tells
    const uint32_t ms = ts_now(now) - o.ts_ecr;
    if (ms < 0x7fffffff) sample = uint64_t{ms} * 1000;
  }
  if (sample) {
    rtt_.sample(sample);
    min_rtt_us_ = std::min(min_rtt_us_, sample);
  }

  snd_una_ = ack;
  rack_fack_ = seq_max(rack_fack_, ack);
  retries_ = 0;
  progress_us_ = now;
  tlp_out_ = false;
  timers_->cancel(&probe_timer_);
  if (state_ != State::kSynSent && state_ != State::kSynReceived &&
      (!in_recovery_ || recovery_rto_)) {
    cc_->on_ack(data_acked, now, rtt_.srtt_us());
    grow_send_buffer();
  }
  if (in_recovery_ && seq_ge(snd_una_, recovery_point_)) {
    if (!recovery_rto_) cc_->on_recovery_end();
    in_recovery_ = recovery_rto_ = false;
  }
  if (snd_una_ == snd_max_) {
    timers_->cancel(&retransmit_timer_);
  } else {
    arm(&retransmit_timer_, now + rtt_.rto_us());
  }
}

// §3.10.7.4 seventh and eighth: the data and the FIN, trimmed to the window.
// The data may span linked frames (a jumbo frame off a multi-buffer ring):
// trimmed as one.
void Connection::process_data(const Header& h, mem::Buffer data, uint64_t now) {
  switch (state_) {
    case State::kEstablished:
    case State::kFinWait1:
    case State::kFinWait2:
      break;
    default:
      return;  // after the peer's FIN: nothing more from it counts
  }
  uint32_t seq = h.seq;
  bool fin = h.flags & kFin;
  const uint32_t fin_seq = h.seq + static_cast<uint32_t>(data.chain_size());
  if (seq_lt(seq, rcv_nxt_)) {  // the front was seen already
    const uint32_t skip = rcv_nxt_ - seq;
    if (skip >= data.chain_size()) {
      if (data.chain_size()) {
        ctr_.dup_segs++;
        dsack_left_ = seq;
        dsack_right_ = fin_seq;
        ack_now_ = true;
      }
      data.reset();
    } else if (data.chain_pull_head(skip) != 0) {
      return;  // a frame of it held elsewhere: cannot happen off a ring
    }
    seq = rcv_nxt_;
  }
  const uint32_t room = rcv_adv_ - seq;  // seq is in the window here
  if (data.chain_size() > room || (data.chain_size() == room && room > 0)) {
    if (data.chain_truncate(room) != 0) return;
    fin = false;  // beyond the window: the peer sends it again
  }
  if (data.chain_size() && closed_by_program_) {
    abort(now);  // nobody will read it: tell the peer (Linux's TCPAbortOnData)
    return;
  }
  if (data.chain_size()) {
    const uint32_t len = static_cast<uint32_t>(data.chain_size());
    rcv_mss_ = std::max(rcv_mss_, len);
    if (seq == rcv_nxt_) {
      rxq_.push(std::move(data));
      const uint32_t after = rcv_nxt_ + len;
      rcv_nxt_ = rxq_.promote(after);
      ctr_.bytes_in += rcv_nxt_ - seq;         // with what it made in order from the held
      if (rcv_nxt_ != after) ack_now_ = true;  // a hole filled: tell at once
      data_arrived_in_order(len, now);
    } else {
      bool refused = false;
      if (sack_ok_) sack_report_.arrived(seq);
      // Out of order, as many segments as the receive buffer holds full
      // ones (a loss in a large window is followed by a window of them).
      const size_t max_held = std::max<size_t>(ReceiveQueue::kMinHeldSegments,
                                               cfg_.rcv_buf / std::max<uint32_t>(rcv_mss_, 536));
      if (rxq_.hold(seq, std::move(data), max_held, &refused) == 0 && !refused) {
        ctr_.dup_segs++;
        dsack_left_ = seq;
        dsack_right_ = seq + len;
      }
      if (refused) ctr_.ooo_refused++;
      ctr_.ooo_segs++;
      ack_out_of_order(now);
    }
  }
  if (fin) {
    if (fin_seq == rcv_nxt_) {
      fin_received(now);
    } else if (seq_gt(fin_seq, rcv_nxt_)) {
      fin_held_ = true;
      fin_held_seq_ = fin_seq;
      ack_now_ = true;  // beyond a hole: a duplicate ACK
    }
  }
  if (fin_held_ && fin_held_seq_ == rcv_nxt_ && !fin_in_) fin_received(now);
}

// A segment beyond a hole: a duplicate ACK with SACK blocks tells the
// sender (RFC 5681 §4.2). As Linux's SACK compression: the first three at
// an rcv_nxt go at once (they start the sender's fast retransmit), a
// duplicate's D-SACK too; after them one ACK for kCompressedAcks such
// segments or within 5% of the RTT (at most kCompressUs), with the blocks
// of all that came. Under loss in a large window that halves the frames
// a receiver sends.
void Connection::ack_out_of_order(uint64_t now) {
  if (dup_acks_at_ != rcv_nxt_) {
    dup_acks_at_ = rcv_nxt_;
    dup_acks_sent_ = 0;
  }
  uint64_t rtt = rcv_tuner_.rtt_us();
  if (rtt_.has_sample() && (rtt == 0 || rtt_.srtt_us() < rtt)) rtt = rtt_.srtt_us();
  const uint64_t delay = std::min(kCompressUs, rtt / 20);
  if (!sack_ok_ || dsack_right_ != dsack_left_ || dup_acks_sent_ < kDupAcksAtOnce ||
      ++compressed_acks_ >= kCompressedAcks || delay == 0) {
    dup_acks_sent_++;
    ack_now_ = true;
    return;
  }
  if (!delack_timer_.armed() || delack_timer_.due_us > now + delay)
    arm(&delack_timer_, now + delay);
}

// Delayed ACKs (RFC 9293 §3.8.6.3, RFC 5681 §4.2): every second full
// segment at once, else within delack_us; the first segments of a
// connection (and after TCP_QUICKACK) at once, as Linux. "At once" is the
// end of the batch being read while the stack holds ACKs (hold_acks).
void Connection::data_arrived_in_order(uint32_t, uint64_t now) {
  rcv_tuner_.arrived(rcv_nxt_, rcv_adv_ - last_ack_sent_, now);  // the window last offered
  if (!delack_started_) {
    delack_started_ = true;
    const uint32_t quick = std::min(kMaxQuickAcks, cfg_.rcv_buf / (2 * rcv_mss_));
    quickacks_ = std::max(quickacks_, quick ? quick : 2);
  }
  if (ack_now_) return;
  const bool quick = cfg_.quickack || quickacks_ > 0;
  if (!quick && rcv_nxt_ - last_ack_sent_ < 2 * rcv_mss_) {
    if (!delack_timer_.armed() && !ack_held_) arm(&delack_timer_, now + cfg_.delack_us);
    return;
  }
  // A quick ACK counts once per ACK sent, not per segment of a held batch.
  if (!cfg_.quickack && quickacks_ > 0 && !ack_held_) quickacks_--;
  if (hold_acks_)
    ack_held_ = true;
  else
    ack_now_ = true;
}

void Connection::release_ack(uint64_t now) {
  if (!ack_held_) return;
  ack_held_ = false;
  if (state_ == State::kClosed || last_ack_sent_ == rcv_nxt_) return;
  ack_now_ = true;
  transmit(now);
}

void Connection::fin_received(uint64_t now) {
  rcv_nxt_++;
  rcv_adv_ = seq_max(rcv_adv_, rcv_nxt_);  // a bare FIN into a zero window
  fin_in_ = true;
  fin_held_ = false;
  ack_now_ = true;
  switch (state_) {
    case State::kSynReceived:
    case State::kEstablished:
      state_ = State::kCloseWait;
      break;
    case State::kFinWait1:
      state_ = State::kClosing;  // our FIN is not acknowledged yet
      break;
    case State::kFinWait2:
      enter_time_wait(now);
      break;
    default:
      break;
  }
}

}  // namespace ss::net::tcp
