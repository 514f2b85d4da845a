// What a connection's timers do: retransmission (RFC 6298, with the
// SYN's and SYN-ACK's retries), delayed ACK, zero-window probes (persist),
// RACK's reordering timeout, the tail loss probe, keepalive, and the end
// of TIME-WAIT or of an abandoned FIN-WAIT-2.
#include <algorithm>
#include <cerrno>

#include "core/net/tcp/connection.h"
#include "core/net/tcp/seq.h"

namespace ss::net::tcp {

void Connection::arm(ConnectionTimer* t, uint64_t due) { timers_->arm(t, due); }

void Connection::on_timer(ConnectionTimer* t, uint64_t now) {
  switch (t->kind) {
    case TimerKind::kRetransmit:
      on_retransmit(now);
      break;
    case TimerKind::kDelayedAck:
      ack_now_ = true;
      transmit(now);
      break;
    case TimerKind::kPersist:
      on_persist(now);
      break;
    case TimerKind::kWait:
      set_closed();
      break;
    case TimerKind::kReorder:
      detect_loss(now);
      transmit(now);
      break;
    case TimerKind::kProbe:
      on_probe(now);
      break;
    case TimerKind::kKeepalive:
      on_keepalive(now);
      break;
    case TimerKind::kCork:
      cork_expired_ = true;
      transmit(now);
      break;
  }
}

void Connection::on_retransmit(uint64_t now) {
  switch (state_) {
    case State::kSynSent:
    case State::kSynReceived:
      if (++retries_ > (state_ == State::kSynSent ? cfg_.syn_retries : cfg_.synack_retries)) {
        fail(ETIMEDOUT);
        return;
      }
      ctr_.rto_expiries++;
      rtt_.back_off();
      send_syn(now);
      return;
    case State::kClosed:
    case State::kTimeWait:
      return;
    default:
      break;
  }
  if (snd_una_ == snd_max_) return;
  if (snd_wnd_ == 0) {
    // The peer shrank its window over data in flight: our retransmissions
    // are window probes, and a peer that answers them is not timed out;
    // one silent for the longest RTO is (as Linux).
    if (now - last_rcv_us_ > cfg_.max_rto_us) {
      fail(ETIMEDOUT);
      return;
    }
    ctr_.zero_window_probes++;
    rtt_.back_off();
    send_segment(snd_una_ - 1, 0, kAck, now);
    arm_retransmit(now);
    return;
  }
  if (cfg_.user_timeout_us ? now - progress_us_ >= cfg_.user_timeout_us
                           : ++retries_ > cfg_.retries) {
    fail(ETIMEDOUT);
    return;
  }
  ctr_.rto_expiries++;
  // ssthresh from the flight once: not again while a recovery (fast or
  // after an earlier RTO) is on, where the flight is already cut (RFC
  // 5681 §3.1, as Linux).
  if (in_recovery_) {
    cc_->restart_from_loss_window();
  } else {
    cc_->on_rto(snd_max_ - snd_una_, now);
  }
  rtt_.back_off();
  // Everything not SACKed is lost (RFC 6675 §5.1, RFC 8985 §6.3), sent
  // again oldest first as the window reopens from one segment. From the
  // second expiry on, SACKed data too: the peer may have reneged on it
  // (RFC 2018 §8).
  log_.mark_all_lost(retries_ >= 2);
  in_recovery_ = recovery_rto_ = true;
  recovery_point_ = snd_max_;
  dupacks_ = 0;
  tlp_episode_ = false;  // the RTO answered the loss: no second cut for it
  timers_->cancel(&probe_timer_);
  transmit(now);
  arm_retransmit(now);
}

// Data waits with nothing in flight. The peer's window is zero: an ACK
// below snd_una makes it answer with its window (RFC 9293 §3.8.6.1). Or
// the window is open but the data found no way out (no frame, the route
// gone): it is tried again, backing off.
void Connection::on_persist(uint64_t now) {
  if (state_ == State::kClosed || state_ == State::kTimeWait) return;
  if (snd_wnd_ != 0 && snd_max_ != snd_una_) return;  // in flight: the retransmission timer's
  // Probes no ACK answered: `retries` of them (or the user timeout) and
  // the peer is gone (Linux's tcp_probe_timer).
  if (cfg_.user_timeout_us ? now - last_rcv_us_ >= cfg_.user_timeout_us
                           : probes_out_ >= cfg_.retries) {
    fail(ETIMEDOUT);
    return;
  }
  probes_out_++;
  if (snd_wnd_ != 0) {
    persist_backoff_++;
    transmit(now);  // re-arms this timer if the data still cannot leave
    return;
  }
  ctr_.zero_window_probes++;
  send_segment(snd_una_ - 1, 0, kAck, now);
  persist_backoff_++;
  arm(&persist_timer_, now + persist_interval());
}

void Connection::arm_keepalive(uint64_t now) {
  if (!cfg_.keepalive || state_ == State::kClosed || state_ == State::kTimeWait) return;
  const uint64_t due = keep_probes_ ? now + cfg_.keep_intvl_us : last_rcv_us_ + cfg_.keep_idle_us;
  arm(&keepalive_timer_, std::max(due, now));
}

// SO_KEEPALIVE (RFC 9293 §3.8.4): after keep_idle of silence with nothing
// outstanding, probes an old sequence number every keep_intvl; keep_cnt
// unanswered probes (or the user timeout) end the connection with a RST
// and ETIMEDOUT, as Linux.
void Connection::on_keepalive(uint64_t now) {
  if (!cfg_.keepalive || !sends_data()) return;
  if (snd_una_ != snd_max_ || sndq_.size() > 0 || now - last_rcv_us_ < cfg_.keep_idle_us) {
    arm_keepalive(now);  // busy, or heard from lately: the data timers watch
    return;
  }
  const bool expired = cfg_.user_timeout_us ? now - last_rcv_us_ >= cfg_.user_timeout_us
                                            : keep_probes_ >= cfg_.keep_cnt;
  if (keep_probes_ > 0 && expired) {
    send_reset(snd_nxt_, true, now);
    fail(ETIMEDOUT);
    return;
  }
  ctr_.keepalive_probes++;
  keep_probes_++;
  send_segment(snd_una_ - 1, 0, kAck, now);
  arm_keepalive(now);
}

uint64_t Connection::persist_interval() const {
  uint64_t t = rtt_.rto_us();
  for (uint64_t i = 0; i < persist_backoff_ && t < cfg_.max_rto_us; i++) t *= 2;
  return std::min(t, cfg_.max_rto_us);
}

}  // namespace ss::net::tcp
