// Loss detection and recovery: SACK blocks onto the sent log (RFC 2018,
// D-SACK per RFC 2883), RACK's time-based loss detection (RFC 8985 §6),
// duplicate-ACK fast retransmit for peers without SACK (RFC 5681 §3.2,
// RFC 6582), recovery episodes that cut the congestion window once, sent
// down to it by Proportional Rate Reduction (RFC 6937: no burst after the
// cut, no stall either), and the tail loss probe (RFC 8985 §7). The retransmissions themselves are
// output.cc's: lost segments go first, within the congestion window
// against pipe (RFC 6675 §4).
#include <algorithm>

#include "core/net/tcp/connection.h"
#include "core/net/tcp/seq.h"

namespace ss::net::tcp {

namespace {

constexpr uint32_t kDupThresh = 3;                // RFC 5681 §3.2
constexpr uint64_t kMinProbeUs = 10'000;          // as Linux's floor for the PTO
constexpr uint64_t kWorstDelayedAckUs = 200'000;  // RFC 8985 §7.2's WCDelAckT
constexpr uint32_t kMaxReoWndMult = 64;           // the window is capped at SRTT anyway

}  // namespace

uint32_t Connection::pipe() const {
  uint32_t out = snd_max_ - snd_una_ - log_.sacked_bytes() - log_.lost_bytes();
  // Without SACK each duplicate ACK stands for a segment that left the
  // network (RFC 6675 §5's estimate without a scoreboard).
  if (!sack_ok_) out -= std::min(out, dupacks_ * mss_);
  return out;
}

void Connection::process_sack(uint32_t ack, const Options& o, SentSegment* delivered) {
  for (size_t i = 0; i < o.sack_count; i++) {
    const SackBlock& b = o.sack[i];
    if (!seq_lt(b.left, b.right)) {
      ctr_.bad_sacks++;
      continue;
    }
    // RFC 2883 §4: a first block below the ACK, or inside the second, is a
    // duplicate the peer received: one of our retransmissions was spurious.
    if (i == 0 && (seq_le(b.right, ack) || (o.sack_count > 1 && seq_ge(b.left, o.sack[1].left) &&
                                            seq_le(b.right, o.sack[1].right)))) {
      ctr_.dsacks_in++;
      reordering_seen_ = true;
      if (reo_wnd_mult_ < kMaxReoWndMult) reo_wnd_mult_++;  // §6.2 step 4: widen per D-SACK
      continue;
    }
    if (seq_lt(b.left, snd_una_) || seq_gt(b.right, snd_max_)) {
      ctr_.bad_sacks++;  // outside what is outstanding: a broken or hostile peer
      continue;
    }
    if (log_.sack(b.left, b.right, delivered) && seq_lt(b.right, rack_fack_)) {
      reordering_seen_ = true;  // delivered below what was SACKed before: reordered
    }
    rack_fack_ = seq_max(rack_fack_, b.right);
  }
}

// RFC 8985 §6.2 steps 1-2: the newest delivered segment and its RTT; a
// retransmission delivered sooner than the minimum RTT was the original.
void Connection::update_rack(const SentSegment& d, uint64_t now) {
  if (d.retransmitted && min_rtt_us_ != UINT64_MAX && now - d.sent_us < min_rtt_us_) return;
  rack_rtt_us_ = now - d.sent_us;
  if (!rack_valid_ || d.sent_us > rack_xmit_us_ ||
      (d.sent_us == rack_xmit_us_ && seq_gt(d.end, rack_end_))) {
    rack_xmit_us_ = d.sent_us;
    rack_end_ = d.end;
    rack_valid_ = true;
  }
}

void Connection::detect_loss(uint64_t now) {
  if (log_.empty()) return;
  bool lost = false;
  if (!sack_ok_ && dupacks_ >= kDupThresh && !in_recovery_) {
    log_.mark_lost(log_.entries().front());
    ctr_.dupack_lost++;
    lost = true;
  }
  if (sack_ok_ && rack_valid_) {
    // §6.2 step 4: no reordering window once recovering or three SACKed,
    // unless the peer has shown reordering.
    uint64_t reo_wnd = 0;
    if (reordering_seen_ || (!in_recovery_ && log_.sacked_count() < kDupThresh)) {
      reo_wnd =
          min_rtt_us_ == UINT64_MAX ? 0 : std::min(min_rtt_us_ / 4 * reo_wnd_mult_, rtt_.srtt_us());
    }
    uint64_t wait = 0;
    for (SentSegment& s : log_.entries()) {
      const bool before =
          s.sent_us < rack_xmit_us_ || (s.sent_us == rack_xmit_us_ && seq_lt(s.end, rack_end_));
      // New data goes out in sequence order and a retransmission later
      // than the first sending: past a segment sent once after the one
      // delivered, every segment went out after it too.
      if (!before && !s.retransmitted) break;
      if (s.sacked || s.lost || !before) continue;
      const uint64_t due = s.sent_us + rack_rtt_us_ + reo_wnd;
      if (due <= now) {
        log_.mark_lost(s);
        ctr_.rack_lost++;
        lost = true;
      } else {
        wait = std::max(wait, due - now);
      }
    }
    if (wait) arm(&reorder_timer_, now + wait);
  }
  if (lost && !in_recovery_) enter_recovery(now);
}

void Connection::enter_recovery(uint64_t now) {
  in_recovery_ = true;
  recovery_rto_ = false;
  recovery_point_ = snd_max_;
  prr_recover_fs_ = snd_max_ - snd_una_;
  prr_delivered_ = prr_out_ = 0;
  cc_->on_recovery_start(snd_max_ - snd_una_, now);
  prr_cwnd_ = pipe();    // nothing more until an ACK delivers (the fast retransmit aside)
  tlp_episode_ = false;  // this recovery answers the loss a probe would show
  (sack_ok_ ? ctr_.sack_recoveries : ctr_.dupack_recoveries)++;
  fast_retransmit_ = true;
  timers_->cancel(&probe_timer_);
}

void Connection::prr_on_ack(int64_t delivered) {
  if (delivered <= 0) return;
  prr_delivered_ += static_cast<uint64_t>(delivered);
  const uint64_t ssthresh = cc_->ssthresh();
  const uint64_t in_flight = pipe();
  int64_t sndcnt;
  if (in_flight > ssthresh) {
    // Proportional: ssthresh/RecoverFS of what was delivered, less what
    // went; in whole segments, as Linux counts it (a sliver would wait for
    // the sender's SWS rule, and the share with it).
    const uint64_t fs = std::max<uint64_t>(prr_recover_fs_, 1);
    const auto share = (static_cast<unsigned __int128>(prr_delivered_) * ssthresh + fs - 1) / fs;
    sndcnt = static_cast<int64_t>(std::min<unsigned __int128>(share, INT64_MAX / 2)) -
             static_cast<int64_t>(prr_out_);
    if (sndcnt > 0) sndcnt = (sndcnt + mss_ - 1) / mss_ * mss_;
  } else {
    // Slow-start reduction bound: back up to ssthresh, at most one segment
    // beyond what was delivered.
    const int64_t limit =
        std::max<int64_t>(static_cast<int64_t>(prr_delivered_ - prr_out_), delivered) + mss_;
    sndcnt = std::min<int64_t>(static_cast<int64_t>(ssthresh - in_flight), limit);
  }
  prr_cwnd_ = static_cast<uint32_t>(std::min<uint64_t>(
      in_flight + static_cast<uint64_t>(std::max<int64_t>(sndcnt, 0)), UINT32_MAX));
}

uint32_t Connection::send_window() const {
  // Without a congestion window (VMA_TCP_CC_ALGO 2) there is nothing to
  // reduce.
  if (!in_recovery_ || recovery_rto_ || cc_->ssthresh() == UINT32_MAX) return cc_->cwnd();
  return prr_cwnd_;
}

void Connection::prr_sent(uint32_t len) {
  if (in_recovery_ && !recovery_rto_) prr_out_ += len;
}

// RFC 8985 §7.2: with SACK, a probe two RTTs after the last send turns a
// lost tail into a SACK-visible loss instead of an RTO.
void Connection::arm_probe(uint64_t now) {
  // One probe episode at a time (RFC 8985 §7.2): a second would overwrite
  // what the first may yet show.
  if (!sack_ok_ || in_recovery_ || tlp_out_ || tlp_episode_ || snd_max_ == snd_una_ ||
      !rtt_.has_sample() || probe_timer_.armed()) {
    return;
  }
  uint64_t pto = std::max(2 * rtt_.srtt_us(), kMinProbeUs);
  if (snd_max_ - snd_una_ <= mss_) pto += kWorstDelayedAckUs;
  // §7.2: the probe takes the retransmission timer's place, no later
  // than it; on_probe arms it again.
  const uint64_t rto_at =
      retransmit_timer_.armed() ? retransmit_timer_.due_us : now + rtt_.rto_us();
  timers_->cancel(&retransmit_timer_);
  arm(&probe_timer_, std::min(now + pto, rto_at));
}

// §7.3: new data when the peer's window takes a segment, else the last
// segment again; then the RTO restarts.
void Connection::on_probe(uint64_t now) {
  if (in_recovery_ || snd_max_ == snd_una_ || log_.empty() || !sends_data()) {
    if (snd_max_ != snd_una_ && state_ != State::kClosed) arm_retransmit(now);
    return;
  }
  ctr_.tlp_probes++;
  tlp_out_ = true;
  const uint32_t data_end = snd_una_ + static_cast<uint32_t>(sndq_.size());
  const uint32_t outstanding = snd_nxt_ - snd_una_;
  const uint32_t room = snd_wnd_ > outstanding ? snd_wnd_ - outstanding : 0;
  const uint32_t unsent = seq_lt(snd_nxt_, data_end) ? data_end - snd_nxt_ : 0;
  const uint32_t len = std::min({unsent, mss_, room});
  if (len > 0) {
    const bool fin = fin_queued_ && snd_nxt_ + len == fin_seq_;
    if (send_segment(snd_nxt_, len, kAck | kPsh | (fin ? kFin : 0), now)) {
      snd_nxt_ += len + fin;
      snd_max_ = snd_nxt_;
    }
    tlp_retrans_ = false;
    tlp_episode_ = true;
  } else {
    SentSegment& last = log_.entries().back();
    if (!last.sacked) {  // a SACKed tail: nothing sent, nothing to learn
      const bool fin = fin_queued_ && last.end == fin_seq_ + 1;
      const uint32_t last_len = last.end - last.seq - fin;
      send_segment(last.seq, last_len, retransmit_flags(last.seq, last_len, fin), now);
      tlp_retrans_ = tlp_episode_ = true;
    }
  }
  tlp_end_ = snd_nxt_;
  arm_retransmit(now);
}

void Connection::tlp_on_ack(uint32_t ack, uint32_t una_before, bool sacked_more, bool dsack,
                            uint64_t now) {
  if (!tlp_episode_ || seq_lt(ack, tlp_end_)) return;
  if (!tlp_retrans_ || dsack) {  // new data, or both copies arrived: no loss
    tlp_episode_ = false;
    return;
  }
  if (seq_gt(ack, tlp_end_)) {  // past the episode with no duplicate reported
    tlp_episode_ = false;
    ctr_.tlp_repairs++;
    cc_->on_recovery_start(snd_max_ - una_before, now);
    cc_->on_recovery_end();
    return;
  }
  // At its end: a duplicate ACK that says nothing new means the probe was
  // one copy too many; one that moves snd_una or SACKs waits for the next.
  if (snd_una_ == una_before && !sacked_more) tlp_episode_ = false;
}

}  // namespace ss::net::tcp
