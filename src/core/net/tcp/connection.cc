// The program's side of a connection: opening, the send and receive
// calls, shutdown and close, and the moves between states they cause.
#include "core/net/tcp/connection.h"

#include <algorithm>
#include <cerrno>

#include "core/net/tcp/seq.h"
#include "core/net/tcp/syn_cookie.h"

namespace ss::net::tcp {

namespace {

constexpr uint32_t kMinPeerMss = 48;     // Linux's tcp_min_snd_mss: a tiny MSS costs a frame a byte
constexpr uint32_t kTimestampsLen = 12;  // the option as sent, with its two NOPs

}  // namespace

uint8_t window_scale_for(const Config& c) {
  const uint32_t most = std::max(c.rcv_buf, c.rcv_buf_max);
  uint8_t s = 0;
  while (s < kMaxWscale && (uint64_t{0xffff} << s) < most) s++;
  return s;
}

const char* state_name(State s) {
  switch (s) {
    case State::kClosed:
      return "CLOSED";
    case State::kSynSent:
      return "SYN-SENT";
    case State::kSynReceived:
      return "SYN-RECEIVED";
    case State::kEstablished:
      return "ESTABLISHED";
    case State::kFinWait1:
      return "FIN-WAIT-1";
    case State::kFinWait2:
      return "FIN-WAIT-2";
    case State::kCloseWait:
      return "CLOSE-WAIT";
    case State::kClosing:
      return "CLOSING";
    case State::kLastAck:
      return "LAST-ACK";
    case State::kTimeWait:
      return "TIME-WAIT";
  }
  return "?";
}

Connection::Connection(const Config& cfg, uint16_t local_port, uint16_t remote_port,
                       SegmentSink* sink, TimerQueue* timers)
    : cfg_(cfg),
      local_port_(local_port),
      remote_port_(remote_port),
      sink_(sink),
      timers_(timers),
      sndq_(cfg.snd_buf),
      rtt_(cfg.min_rto_us, cfg.max_rto_us),
      cc_(make_congestion_control(cfg.cc, cfg.mss)) {
  wscale_offer_ = cfg_.window_scaling ? window_scale_for(cfg_) : 0;
  mss_ = std::min<uint32_t>(cfg_.mss, cfg_.default_peer_mss);
  for (auto [t, k] : {std::pair{&retransmit_timer_, TimerKind::kRetransmit},
                      {&delack_timer_, TimerKind::kDelayedAck},
                      {&persist_timer_, TimerKind::kPersist},
                      {&wait_timer_, TimerKind::kWait},
                      {&reorder_timer_, TimerKind::kReorder},
                      {&probe_timer_, TimerKind::kProbe},
                      {&keepalive_timer_, TimerKind::kKeepalive},
                      {&cork_timer_, TimerKind::kCork}}) {
    t->conn = this;
    t->kind = k;
  }
}

Connection::~Connection() { set_closed(); }

void Connection::connect(uint32_t iss, uint64_t now) {
  if (state_ != State::kClosed) return;
  iss_ = snd_una_ = snd_nxt_ = snd_max_ = snd_sml_ = iss;
  state_ = State::kSynSent;
  send_syn(now);
}

void Connection::accept_syn(const Header& syn, const Options& opts, uint32_t iss, uint64_t now) {
  if (state_ != State::kClosed) return;
  iss_ = snd_una_ = snd_nxt_ = snd_max_ = snd_sml_ = iss;
  irs_ = syn.seq;
  rcv_nxt_ = rcv_adv_ = syn.seq + 1;
  negotiate(opts, false);
  if (ts_ok_) ts_recent_us_ = now;
  snd_wnd_ = max_snd_wnd_ = syn.window;  // a SYN's window is never scaled
  snd_wl1_ = syn.seq;
  snd_wl2_ = iss;
  state_ = State::kSynReceived;
  send_syn(now);
}

void Connection::accept_cookie(const Header& ack, const Options& opts, mem::Buffer data,
                               uint32_t iss, const CookieState& st, uint64_t now) {
  if (state_ != State::kClosed) return;
  iss_ = iss;
  snd_una_ = snd_nxt_ = snd_max_ = snd_sml_ = iss + 1;
  irs_ = ack.seq - 1;
  rcv_nxt_ = ack.seq;
  rcv_adv_ = rcv_nxt_ + syn_window();  // what the cookie's SYN-ACK offered
  Options peer;                        // the SYN's options, as far as the cookie kept them
  peer.has_mss = true;
  peer.mss = st.mss;
  peer.has_wscale = st.has_wscale;
  peer.wscale = st.wscale;
  peer.sack_permitted = st.sack;
  peer.has_ts = st.ts;
  peer.ts_val = opts.ts_val;
  negotiate(peer, true);
  if (ts_ok_) ts_recent_us_ = now;
  snd_wnd_ = max_snd_wnd_ = uint32_t{ack.window} << snd_wscale_;
  snd_wl1_ = ack.seq;
  snd_wl2_ = ack.ack;
  establish(now);
  if (data.chain_size() || (ack.flags & kFin)) input(ack, opts, std::move(data), now);
}

void Connection::negotiate(const Options& peer, bool) {
  ws_ok_ = cfg_.window_scaling && peer.has_wscale;
  snd_wscale_ = ws_ok_ ? peer.wscale : 0;
  rcv_wscale_ = ws_ok_ ? wscale_offer_ : 0;
  ts_ok_ = cfg_.timestamps && peer.has_ts;
  if (ts_ok_) ts_recent_ = peer.ts_val;
  sack_ok_ = cfg_.sack && peer.sack_permitted;
  set_peer_mss(peer.has_mss ? uint32_t{peer.mss} : cfg_.default_peer_mss);
}

void Connection::set_peer_mss(uint32_t announced) {
  peer_mss_ = std::max(kMinPeerMss, announced);
  mss_ = std::min(peer_mss_, send_mss_cap()) - (ts_ok_ ? kTimestampsLen : 0);
  rcv_mss_ = std::min<uint32_t>(cfg_.mss, 536);
}

void Connection::establish(uint64_t now) {
  // A FIN queued in SYN-RECEIVED goes now.
  state_ = fin_queued_ ? State::kFinWait1 : State::kEstablished;
  rack_fack_ = snd_una_;
  last_rcv_us_ = now;
  arm_keepalive(now);
  cc_ = make_congestion_control(cfg_.cc, mss_);
  rcv_tuner_.start(rcv_nxt_, cfg_.mss, now);
}

ssize_t Connection::send(std::span<const uint8_t> data, uint64_t now, bool keep_error) {
  if (error_) return keep_error ? -error_ : -take_error();
  switch (state_) {
    case State::kSynSent:
    case State::kSynReceived:
      return -EAGAIN;  // connecting: the face waits for writable()
    case State::kEstablished:
    case State::kCloseWait:
      break;
    default:
      return -EPIPE;
  }
  if (write_shut_) return -EPIPE;
  if (data.empty()) return 0;
  const size_t n = sndq_.append(data);
  sndq_full_ = sndq_full_ || n < data.size();
  if (n == 0) return -EAGAIN;
  transmit(now);
  return static_cast<ssize_t>(n);
}

ssize_t Connection::recv(std::span<uint8_t> out, bool peek, uint64_t now, bool keep_error) {
  const size_t n = rxq_.copy_out(out, peek);
  if (n > 0) {
    if (!peek) maybe_window_update(now);
    return static_cast<ssize_t>(n);
  }
  if (out.empty()) return 0;
  return nothing_to_read(keep_error);
}

ssize_t Connection::nothing_to_read(bool keep_error) {
  if (error_) return keep_error ? -error_ : -take_error();
  if (!rxq_.offered_all()) return -EAGAIN;  // the callback has yet to see it
  if (fin_in_ || state_ == State::kClosed) return 0;
  return -EAGAIN;
}

mem::Buffer Connection::next_offer() { return rxq_.next_offer(); }

void Connection::settle_offer(ReceiveQueue::Offer o, size_t len, uint64_t now) {
  const size_t before = rxq_.readable();
  rxq_.settle(o, len);
  const size_t gone = before - rxq_.readable();
  if (o == ReceiveQueue::Offer::kTake) lent_ += gone;
  if (o == ReceiveQueue::Offer::kDrop && gone) maybe_window_update(now);
}

void Connection::stop_offering() { rxq_.stop_offering(); }

ssize_t Connection::lend(size_t most, std::vector<mem::Buffer>* out, uint64_t, bool keep_error) {
  const size_t n = rxq_.take(most, out);
  if (n > 0) {
    lent_ += n;
    return static_cast<ssize_t>(n);
  }
  return most ? nothing_to_read(keep_error) : 0;
}

void Connection::returned(size_t bytes, uint64_t now) {
  lent_ -= std::min(bytes, lent_);
  maybe_window_update(now);
}

int Connection::shutdown_write(uint64_t now) {
  switch (state_) {
    case State::kClosed:
      return -ENOTCONN;
    case State::kSynSent:
      set_closed();
      return 0;
    case State::kSynReceived:
    case State::kEstablished:
    case State::kCloseWait:
      queue_fin(now);
      return 0;
    default:
      return 0;  // our FIN is out already
  }
}

void Connection::queue_fin(uint64_t now) {
  if (fin_queued_) return;
  write_shut_ = fin_queued_ = true;
  fin_seq_ = seq_max(snd_una_, iss_ + 1) + static_cast<uint32_t>(sndq_.size());
  if (state_ == State::kEstablished) {  // SYN-RECEIVED moves on when established
    state_ = State::kFinWait1;
  } else if (state_ == State::kCloseWait) {
    state_ = State::kLastAck;
  }
  transmit(now);
}

void Connection::close(uint64_t now) {
  closed_by_program_ = true;
  if (rxq_.readable() > 0 && state_ != State::kClosed && state_ != State::kTimeWait) {
    abort(now);  // the peer must learn its data was not read
    return;
  }
  switch (state_) {
    case State::kSynSent:
      set_closed();
      break;
    case State::kSynReceived:
    case State::kEstablished:
    case State::kCloseWait:
      queue_fin(now);
      break;
    case State::kFinWait2:
      arm(&wait_timer_, now + cfg_.fin_timeout_us);
      break;
    default:
      break;
  }
}

void Connection::abort(uint64_t now) {
  closed_by_program_ = true;
  switch (state_) {
    case State::kSynReceived:
    case State::kEstablished:
    case State::kFinWait1:
    case State::kFinWait2:
    case State::kCloseWait:
      send_reset(snd_nxt_, true, now);
      break;
    default:
      break;
  }
  rxq_.clear();
  set_closed();
}

void Connection::give_up(uint64_t now) {
  if (state_ == State::kLastAck || state_ == State::kClosing) {
    closed_by_program_ = true;
    send_reset(snd_nxt_, true, now);
    rxq_.clear();
    set_closed();
    return;
  }
  abort(now);
}

void set_option(Config* c, Option o, int64_t v) {
  const uint64_t us = v > 0 ? static_cast<uint64_t>(v) : 0;
  switch (o) {
    case Option::kNodelay:
      c->nodelay = v != 0;
      return;
    case Option::kCork:
      c->cork = v != 0;
      return;
    case Option::kQuickack:
      return;
    case Option::kKeepalive:
      c->keepalive = v != 0;
      return;
    case Option::kKeepIdle:
      c->keep_idle_us = us;
      return;
    case Option::kKeepIntvl:
      c->keep_intvl_us = us;
      return;
    case Option::kKeepCnt:
      c->keep_cnt = static_cast<int>(v);
      return;
    case Option::kUserTimeout:
      c->user_timeout_us = us;
      return;  // bounds the next RTO armed
    case Option::kRcvBuf:
      c->rcv_buf = static_cast<uint32_t>(std::clamp<int64_t>(v, 1, INT32_MAX));
      c->rcv_buf_max = 0;
      return;
    case Option::kSndBuf:
      c->snd_buf = static_cast<uint32_t>(std::clamp<int64_t>(v, 1, INT32_MAX));
      c->snd_buf_max = 0;
      return;
  }
}

void Connection::set_option(Option o, int64_t v, uint64_t now) {
  const bool keepalive = cfg_.keepalive;
  tcp::set_option(&cfg_, o, v);
  switch (o) {
    case Option::kNodelay:
      if (cfg_.nodelay) {  // Linux pushes what Nagle or the cork held back, once
        cork_expired_ = cfg_.cork;
        transmit(now);
      }
      return;
    case Option::kCork:
      if (!cfg_.cork) {
        timers_->cancel(&cork_timer_);
        transmit(now);  // the held tail goes
      }
      return;
    case Option::kQuickack:  // 0 leaves the quick-ACK mode (Linux's pingpong)
      quickacks_ = v ? std::max<uint32_t>(quickacks_, 16) : 0;
      return;
    case Option::kKeepalive:
      if (cfg_.keepalive == keepalive) return;
      keep_probes_ = 0;
      if (cfg_.keepalive && state_ != State::kClosed && state_ != State::kTimeWait)
        arm(&keepalive_timer_, now + cfg_.keep_idle_us);  // the idle time counts from now (Linux)
      else
        timers_->cancel(&keepalive_timer_);
      return;
    case Option::kKeepIdle:
    case Option::kKeepIntvl:
      if (cfg_.keepalive) arm_keepalive(now);  // from the last segment, with the new time
      return;
    case Option::kKeepCnt:
    case Option::kUserTimeout:
      return;
    case Option::kRcvBuf:  // the window follows (never shrinking: advertise_window)
      maybe_window_update(now);
      return;
    case Option::kSndBuf:
      sink_->release_data();
      sndq_.resize(cfg_.snd_buf);  // out of memory: the buffer stays as it was
      return;
  }
}

bool Connection::readable() const {
  if (rxq_.readable_now() > 0 || error_ != 0) return true;
  return rxq_.offered_all() && (fin_in_ || state_ == State::kClosed);
}

bool Connection::writable() const {
  switch (state_) {
    case State::kEstablished:
    case State::kCloseWait:
      // As Linux: room for at least half of what is queued.
      return !write_shut_ && sndq_.space() > 0 && sndq_.space() >= sndq_.size() / 2;
    case State::kSynSent:
    case State::kSynReceived:
      return error_ != 0;
    default:
      return true;  // a send fails at once
  }
}

int Connection::take_error() {
  const int e = error_;
  error_ = 0;
  return e;
}

bool Connection::syn_may_reuse(const Header& syn, const Options& opts) const {
  if (state_ != State::kTimeWait) return false;
  if (ts_ok_ && opts.has_ts) return seq_gt(opts.ts_val, ts_recent_);
  return seq_gt(syn.seq, rcv_nxt_);
}

void Connection::enter_time_wait(uint64_t now) {
  state_ = State::kTimeWait;
  for (ConnectionTimer* t : {&retransmit_timer_, &delack_timer_, &persist_timer_, &reorder_timer_,
                             &probe_timer_, &keepalive_timer_}) {
    timers_->cancel(t);
  }
  arm(&wait_timer_, now + 2 * cfg_.msl_us);
  // Everything we sent is acknowledged: the send side's memory goes (a
  // busy server holds tens of thousands of connections here).
  if (sndq_.size() == 0) {
    sink_->release_data();
    sndq_.release();
    log_ = SentLog();
  }
}

void Connection::fail(int err) {
  error_ = err;
  set_closed();
}

void Connection::set_closed() {
  state_ = State::kClosed;
  for (ConnectionTimer* t : {&retransmit_timer_, &delack_timer_, &persist_timer_, &wait_timer_,
                             &reorder_timer_, &probe_timer_, &keepalive_timer_, &cork_timer_}) {
    timers_->cancel(t);
  }
  log_.clear();
}

Info Connection::info() const {
  Info i;
  i.state = state_;
  i.timestamps = ts_ok_;
  i.sack = sack_ok_;
  i.window_scaling = ws_ok_;
  i.snd_wscale = snd_wscale_;
  i.rcv_wscale = rcv_wscale_;
  i.in_recovery = in_recovery_;
  i.snd_buf = static_cast<uint32_t>(sndq_.capacity());
  i.rcv_buf = cfg_.rcv_buf;
  i.rto_us = static_cast<uint32_t>(std::min<uint64_t>(rtt_.rto_us(), UINT32_MAX));
  i.srtt_us = static_cast<uint32_t>(std::min<uint64_t>(rtt_.srtt_us(), UINT32_MAX));
  i.rttvar_us = static_cast<uint32_t>(std::min<uint64_t>(rtt_.rttvar_us(), UINT32_MAX));
  i.snd_mss = mss_;
  i.rcv_mss = rcv_mss_;
  i.advmss = cfg_.mss;
  i.unacked = static_cast<uint32_t>(log_.size());
  i.sacked = log_.sacked_count();
  const uint32_t seg = mss_ ? mss_ : 1;
  i.lost = log_.lost_bytes() / seg;
  i.snd_cwnd = cc_->cwnd() / seg;
  i.snd_ssthresh = cc_->ssthresh() / seg;
  i.snd_wnd = snd_wnd_;
  i.rcv_wnd = rcv_adv_ - rcv_nxt_;
  i.backoffs = static_cast<uint32_t>(rtt_.backoffs());
  i.min_rtt_us = static_cast<uint32_t>(std::min<uint64_t>(min_rtt_us_, UINT32_MAX));
  return i;
}

}  // namespace ss::net::tcp
