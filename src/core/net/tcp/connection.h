// One TCP connection (RFC 9293's TCB and its state machine), pure of any
// ring, address or lock: segments come in through input() as parsed
// headers and data views, go out through a SegmentSink, time is the
// caller's (microseconds, passed to every call), and its timers sit in the
// stack's TimerQueue. So the same code runs on the rings and against a
// scripted peer on a fake wire with a virtual clock.
//
// Split by concern: connection.cc the program's calls (open, send, recv,
// shutdown, close), input.cc segment arrival, output.cc what is sent and
// the windows, timers.cc what the timers do. Listening (SYN queue,
// cookies) is the stack's: it hands a connection the SYN it accepted.
//
// Not thread-safe: the stack's lock guards each call.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/base/api.h"
#include "core/mem/buffer.h"
#include "core/net/tcp/congestion.h"
#include "core/net/tcp/header.h"
#include "core/net/tcp/options.h"
#include "core/net/tcp/rcv_buf_tuner.h"
#include "core/net/tcp/receive_queue.h"
#include "core/net/tcp/rtt.h"
#include "core/net/tcp/send_buffer.h"
#include "core/net/tcp/sent_log.h"
#include "core/net/tcp/seq_ranges.h"
#include "core/net/tcp/timer_queue.h"

namespace ss::net::tcp {

// RFC 9293 §3.3.2 (LISTEN is the stack's listener, not a connection).
enum class State : uint8_t {
  kClosed,
  kSynSent,
  kSynReceived,
  kEstablished,
  kFinWait1,
  kFinWait2,
  kCloseWait,
  kClosing,
  kLastAck,
  kTimeWait,
};
// "ESTABLISHED", "SYN-SENT", ... as RFC 9293 writes them.
const char* state_name(State s);
struct CookieState;
struct Handover;
struct Config;
// The window scale we offer: the smallest shift that lets the window
// cover the largest the receive buffer may grow to.
uint8_t window_scale_for(const Config& c);

// A connection's settings, fixed when it opens.
struct Config {
  uint16_t mss = 1460;  // ours to announce: the route's MTU less IP and TCP headers
  // The largest segment sent, where more than mss (a packet socket takes
  // the path's MTU, the rings' frames less): 0 for mss.
  uint16_t tx_mss = 0;
  uint16_t default_peer_mss = 536;  // when the peer announces none (IPv6: 1220)
  uint32_t rcv_buf = 131072;        // SO_RCVBUF: what the receive window can cover
  uint32_t snd_buf = 131072;        // SO_SNDBUF
  // Above snd_buf: the send buffer grows to twice the congestion window,
  // up to this (Linux's tcp_wmem[2], when the program set no SO_SNDBUF).
  uint32_t snd_buf_max = 0;
  // Above rcv_buf: the receive buffer grows with what the program reads
  // (rcv_buf_tuner.h), up to this (tcp_rmem[2] when no SO_RCVBUF was set).
  uint32_t rcv_buf_max = 0;
  bool window_scaling = true, timestamps = true, sack = true;
  bool nodelay = false;   // TCP_NODELAY: no Nagle
  bool cork = false;      // TCP_CORK: only full segments, a tail at most kCorkCeilingUs later
  bool quickack = false;  // every in-order segment acknowledged at once (VMA_TCP_QUICKACK)
  CcAlgo cc = CcAlgo::kNewReno;
  uint64_t min_rto_us = 200'000, max_rto_us = 120'000'000;  // Linux's bounds
  uint64_t delack_us = 40'000;                              // the longest an ACK is delayed
  uint64_t msl_us = 30'000'000;                             // TIME-WAIT lasts 2 MSL (Linux: 60 s)
  uint64_t fin_timeout_us = 60'000'000;    // FIN-WAIT-2 of a closed socket (tcp_fin_timeout)
  uint64_t oow_ack_interval_us = 500'000;  // challenge/out-of-window ACKs at most this often
  int syn_retries = 6, synack_retries = 5, retries = 15;  // Linux's tcp_*retries*
  // SO_KEEPALIVE with TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT (Linux's
  // defaults); TCP_USER_TIMEOUT (0: off): how long sent data may stay
  // unacknowledged before the connection fails with ETIMEDOUT.
  bool keepalive = false;
  uint64_t keep_idle_us = 7200'000'000, keep_intvl_us = 75'000'000;
  int keep_cnt = 9;
  uint64_t user_timeout_us = 0;
  uint32_t ts_offset = 0;  // added to the timestamp clock (RFC 7323 §5.4)
};

// What setsockopt may change on an open connection, and its value.
enum class Option : uint8_t {
  kNodelay,      // TCP_NODELAY: 0 or 1
  kCork,         // TCP_CORK: 0 or 1
  kQuickack,     // TCP_QUICKACK: non-zero acknowledges at once for a while
  kKeepalive,    // SO_KEEPALIVE: 0 or 1
  kKeepIdle,     // TCP_KEEPIDLE, microseconds
  kKeepIntvl,    // TCP_KEEPINTVL, microseconds
  kKeepCnt,      // TCP_KEEPCNT
  kUserTimeout,  // TCP_USER_TIMEOUT, microseconds (0: off)
  kRcvBuf,       // SO_RCVBUF, bytes as the kernel keeps it (twice what was asked)
  kSndBuf,       // SO_SNDBUF, the same; set by the program: no autotuning
};
// Sets o's field of c (a connection's settings) to value. TCP_QUICKACK
// is a connection's passing state, no setting: left alone.
SS_API void set_option(Config* c, Option o, int64_t value);
// Linux's ceiling on how long TCP_CORK holds a partial segment.
constexpr uint64_t kCorkCeilingUs = 200'000;

// What TCP_INFO reports of a connection (the face fills Linux's struct
// tcp_info from it).
struct Info {
  State state = State::kClosed;
  bool timestamps = false, sack = false, window_scaling = false;
  uint8_t snd_wscale = 0, rcv_wscale = 0;
  bool in_recovery = false;
  uint32_t rto_us = 0, srtt_us = 0, rttvar_us = 0;
  uint32_t snd_mss = 0, rcv_mss = 0, advmss = 0;
  uint32_t unacked = 0, sacked = 0, lost = 0;  // segments sent and not yet acknowledged; of them
  uint32_t snd_cwnd = 0, snd_ssthresh = 0;     // in segments
  uint32_t snd_wnd = 0, rcv_wnd = 0;           // bytes
  uint32_t backoffs = 0;
  uint32_t min_rtt_us = UINT32_MAX;  // the least RTT sample; UINT32_MAX: none yet
  uint32_t snd_buf = 0;              // the send buffer's size now (it may have grown)
  uint32_t rcv_buf = 0;              // the receive buffer's, the same
};

struct Counters {
  uint64_t segs_in = 0, segs_out = 0;
  uint64_t data_segs_in = 0, data_segs_out = 0;  // those carrying data
  // Data: delivered in order (rcv_nxt's moves), sent first (first
  // transmissions only), sent again, and acknowledged (snd_una's moves).
  uint64_t bytes_in = 0, bytes_out = 0, bytes_retrans = 0, bytes_acked = 0;
  uint64_t retrans_segs = 0, rto_expiries = 0;
  uint64_t ooo_segs = 0, dup_segs = 0, ooo_refused = 0;
  uint64_t paws_drops = 0, out_of_window = 0, challenge_acks = 0, ack_beyond_sent = 0;
  uint64_t rst_in = 0, rst_out = 0;
  uint64_t zero_window_probes = 0, keepalive_probes = 0;
  uint64_t no_buffer = 0;  // a segment not sent for want of a frame
  // Loss recovery: episodes entered by SACK/RACK or by duplicate ACKs
  // (no SACK), segments judged lost each way, tail loss probes, D-SACKs
  // and SACK blocks refused (outside what was sent).
  uint64_t sack_recoveries = 0, dupack_recoveries = 0;
  uint64_t rack_lost = 0, dupack_lost = 0, tlp_probes = 0, dsacks_in = 0, bad_sacks = 0;
  uint64_t tlp_repairs = 0;  // losses a probe's retransmission repaired: the window cut
};

// A segment's data: len bytes of the send queue from offset, copied out
// once to where the sink puts them, or gathered from where they are.
struct SegmentData {
  const SendBuffer* queue = nullptr;
  size_t offset = 0, len = 0;
  void copy_to(uint8_t* out) const {
    if (len) queue->copy_out(offset, len, out);
  }
  size_t spans(iovec out[2]) const { return len ? queue->spans(offset, len, out) : 0; }
};

// Where segments go: the stack puts each behind its IP header, in a frame
// or in a packet that carries several (gso_batch.h), and fills the
// checksum (it knows the addresses).
class SegmentSink {
 public:
  virtual ~SegmentSink() = default;
  // Room for a segment's TCP header and options (header_len bytes) to be
  // followed by data_len bytes of data, or an empty span when no frame is
  // free now (the connection sends it later).
  virtual std::span<uint8_t> header_room(size_t header_len, size_t data_len) = 0;
  // Sends the segment whose header was written into the room, with data.
  virtual void send_segment(const SegmentData& data) = 0;
  // The send queue is about to move or free bytes handed to send_segment:
  // a sink that still refers to them sends them first.
  virtual void release_data() {}
};

class Connection;
enum class TimerKind : uint8_t {
  kRetransmit,
  kDelayedAck,
  kPersist,
  kWait,
  kReorder,
  kProbe,
  kKeepalive,
  kCork,
};
// A connection's timer as the TimerQueue hands it back.
struct ConnectionTimer : Timer {
  Connection* conn = nullptr;
  TimerKind kind = TimerKind::kRetransmit;
};

class Connection {
 public:
  Connection(const Config& cfg, uint16_t local_port, uint16_t remote_port, SegmentSink* sink,
             TimerQueue* timers);
  virtual ~Connection();  // cancels its timers; the stack derives its own
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Active open: sends the SYN (iss: RFC 6528's, the stack's choice).
  void connect(uint32_t iss, uint64_t now_us);
  // Passive open from the SYN a listener accepted: sends the SYN-ACK.
  void accept_syn(const Header& syn, const Options& opts, uint32_t iss, uint64_t now_us);
  // Passive open from the ACK that completes a SYN-cookie handshake (iss:
  // the cookie; st: what it carried): ESTABLISHED at once, and the ACK's
  // data and FIN taken.
  void accept_cookie(const Header& ack, const Options& opts, mem::Buffer data, uint32_t iss,
                     const CookieState& st, uint64_t now_us);
  // A segment of this connection, its checksum checked: header, options
  // as parse_options gave them, and its data (a view in its frame, kept
  // without a copy when queued).
  void input(const Header& h, const Options& opts, mem::Buffer data, uint64_t now_us);
  // One of this connection's timers fired (TimerQueue::pop_due gave it).
  void on_timer(ConnectionTimer* t, uint64_t now_us);
  // Sends what the windows allow now (after a frame was missing).
  void output(uint64_t now_us) { transmit(now_us); }

  // The program's calls: a byte count, or -errno as the socket call gives
  // it (-EAGAIN: would block; the face waits on readable()/writable()). A
  // pending error is reported and cleared, or left pending with keep_error
  // (a call that already moved bytes returns their count; the error is
  // the next call's, as Linux's).
  ssize_t send(std::span<const uint8_t> data, uint64_t now_us, bool keep_error = false);
  ssize_t recv(std::span<uint8_t> out, bool peek, uint64_t now_us, bool keep_error = false);
  // recv without a copy: up to `most` in-order views of the frames the data
  // came in, moved to *out; their bytes stay out of the receive window
  // until returned() gives them back (a program that holds them closes
  // the peer's window). The same answers as recv otherwise.
  ssize_t lend(size_t most, std::vector<mem::Buffer>* out, uint64_t now_us, bool keep_error);
  void returned(size_t bytes, uint64_t now_us);
  // A receive callback's look (ReceiveQueue::next_offer, settle): a view
  // dropped leaves the window at once, one taken is lent (returned()).
  mem::Buffer next_offer();
  void settle_offer(ReceiveQueue::Offer o, size_t len, uint64_t now_us);
  void stop_offering();
  bool offered_all() const { return rxq_.offered_all(); }
  int shutdown_write(uint64_t now_us);
  // close(): FIN after what is queued (RST instead when received data was
  // left unread, RFC 9293 §3.10.4 and Linux); abort(): RST now (SO_LINGER 0).
  void close(uint64_t now_us);
  void abort(uint64_t now_us);
  // The wait for a closed connection's peer ended (the process leaves):
  // abort(), with a RST in LAST-ACK and CLOSING too, where the peer
  // still awaits our data or FIN (Linux resets an orphan it gives up).
  void give_up(uint64_t now_us);
  // setsockopt on the open connection (Option's values), in effect at once:
  // TCP_NODELAY and clearing TCP_CORK push what they held back, a new
  // keepalive time re-arms the probe.
  void set_option(Option o, int64_t value, uint64_t now_us);
  void set_nodelay(bool on, uint64_t now_us) { set_option(Option::kNodelay, on, now_us); }
  void quickack() { set_option(Option::kQuickack, 1, 0); }
  // While the stack reads one batch of segments from the rings, the ACKs
  // in-order data owes wait for the batch's end: one per connection per
  // batch (a stretch ACK, as Linux's receiver sends for a GRO packet), so
  // the sender's ACK processing does not run once per two segments.
  // Duplicate ACKs, window updates and ACKs of a FIN or a hole filled go
  // at once. release_ack sends the held one (with data, if any goes).
  void hold_acks(bool hold) { hold_acks_ = hold; }
  bool ack_held() const { return ack_held_; }
  void release_ack(uint64_t now);
  // The state of a connection from ESTABLISHED to TIME-WAIT (or closed
  // after both FINs) for another TCP to carry it on (handover.h): 0, or
  // -EOPNOTSUPP in another state or with an error pending. The
  // connection is left as it was.
  int handover(Handover* out, uint64_t now_us);
  // Carries on, in this unopened connection, one another TCP handed over
  // (handover.h): its numbers, windows and options; its sent and unsent
  // bytes to send (the sent ones again); `unread` (frames holding
  // h.unread's bytes, the caller's copies) readable first; the peer's FIN,
  // ours and its ACK taken as the handover says. Timestamps go on from
  // h.ts_val. The RTT and congestion state start afresh. 0; -EINVAL when h
  // does not hold together or this connection was used; -ENOMEM when the
  // send queue cannot hold its bytes.
  int restore(const Handover& h, std::vector<mem::Buffer> unread, uint64_t now_us);

  State state() const { return state_; }
  bool readable() const;  // data, end of stream or an error to report
  bool writable() const;
  // SO_ERROR: the pending error (0: none), cleared.
  int take_error();
  int error() const { return error_; }  // the same, left pending (POLLERR)
  bool write_shut() const { return write_shut_; }
  // A new SYN to this TIME-WAIT connection may open a new one in its place
  // (its sequence number or timestamp is newer: RFC 6191, as Linux).
  bool syn_may_reuse(const Header& syn, const Options& opts) const;
  // Closed and closed by the program: the owner may delete it.
  bool done() const { return state_ == State::kClosed && closed_by_program_; }

  const Counters& counters() const { return ctr_; }
  Info info() const;
  const RttEstimator& rtt() const { return rtt_; }
  // What this end sends at most, options included (Config::tx_mss).
  uint32_t send_mss_cap() const { return std::max(cfg_.mss, cfg_.tx_mss); }
  uint32_t mss() const { return mss_; }
  uint32_t cwnd() const { return cc_->cwnd(); }
  uint32_t snd_wnd() const { return snd_wnd_; }
  uint32_t snd_una() const { return snd_una_; }
  uint32_t rcv_wnd() const { return rcv_adv_ - rcv_nxt_; }
  uint32_t peer_mss() const { return peer_mss_; }

 private:
  // recv's answer when no byte is queued: the error, 0 at the end, -EAGAIN.
  ssize_t nothing_to_read(bool keep_error);
  // input.cc
  void input_syn_sent(const Header& h, const Options& o, uint64_t now);
  void input_synchronized(const Header& h, const Options& o, mem::Buffer data, uint64_t now);
  bool acceptable(const Header& h, uint32_t seg_len) const;
  void reset_by_peer();
  void grow_send_buffer();
  bool process_ack(const Header& h, const Options& o, uint32_t seg_len, uint64_t now);
  void acked(uint32_t ack, const Options& o, uint64_t now, SentSegment* delivered);
  void process_data(const Header& h, mem::Buffer data, uint64_t now);
  void fin_received(uint64_t now);
  void ack_out_of_order(uint64_t now);
  void data_arrived_in_order(uint32_t len, uint64_t now);
  // connection.cc
  void negotiate(const Options& peer, bool peer_syn_has_ack);
  void set_peer_mss(uint32_t announced);  // and what a segment carries from it
  void establish(uint64_t now);
  void queue_fin(uint64_t now);
  void enter_time_wait(uint64_t now);
  void fail(int err);  // to CLOSED with the error
  void set_closed();
  // output.cc
  bool sends_data() const;  // a state in which our data or FIN may go out
  void transmit(uint64_t now);
  bool send_segment(uint32_t seq, uint32_t len, uint8_t flags, uint64_t now);
  void send_syn(uint64_t now);
  void send_ack(uint64_t now) { send_segment(snd_nxt_, 0, kAck, now); }
  void send_reset(uint32_t seq, bool with_ack, uint64_t now);
  void limited_ack(uint64_t now);  // challenge or out-of-window ACK, rate-limited
  uint16_t advertise_window(bool syn);
  uint32_t syn_window() const;  // the unscaled window of our SYN or SYN-ACK
  void maybe_window_update(uint64_t now);
  void tune_rcv_buf(uint64_t now);  // after the program read
  uint32_t ts_now(uint64_t now) const;
  void arm_retransmit(uint64_t now);
  bool retransmit_lost(uint64_t now);
  uint8_t retransmit_flags(uint32_t seq, uint32_t len, bool fin) const;
  // recovery.cc
  void process_sack(uint32_t ack, const Options& o, SentSegment* delivered);
  void update_rack(const SentSegment& delivered, uint64_t now);
  void detect_loss(uint64_t now);
  void enter_recovery(uint64_t now);
  // RFC 6937: an ACK in fast recovery that delivered `delivered` bytes
  // (snd_una's move and the SACKed bytes' signed change) sets what may be
  // in flight until the next one.
  void prr_on_ack(int64_t delivered);
  // The window sends are held to: PRR's in fast recovery, else cwnd.
  uint32_t send_window() const;
  void prr_sent(uint32_t len);  // a send in fast recovery (prr_out)
  // RFC 8985 §7.4.2: an ACK at or past a probe's episode end says whether
  // the probe's retransmission repaired a loss (then the window is cut as
  // for one found otherwise, from the flight before the ACK: una_before).
  // `dsack`: the ACK reported a duplicate.
  void tlp_on_ack(uint32_t ack, uint32_t una_before, bool sacked_more, bool dsack, uint64_t now);
  void arm_probe(uint64_t now);
  void on_probe(uint64_t now);
  uint32_t pipe() const;
  // timers.cc
  void on_retransmit(uint64_t now);
  void on_persist(uint64_t now);
  void arm(ConnectionTimer* t, uint64_t due);
  void arm_keepalive(uint64_t now);
  void on_keepalive(uint64_t now);
  uint64_t persist_interval() const;

  Config cfg_;
  uint16_t local_port_, remote_port_;
  SegmentSink* sink_;
  TimerQueue* timers_;
  State state_ = State::kClosed;
  bool closed_by_program_ = false, write_shut_ = false;
  int error_ = 0;

  // Send side (RFC 9293 §3.3.1); the buffer holds bytes from snd_una.
  uint32_t iss_ = 0, snd_una_ = 0, snd_nxt_ = 0, snd_max_ = 0;
  uint32_t snd_wnd_ = 0, max_snd_wnd_ = 0, snd_wl1_ = 0, snd_wl2_ = 0;
  uint8_t snd_wscale_ = 0;
  uint32_t peer_mss_ = 0, mss_ = 0;  // mss_: data per segment, options left out
  bool fin_queued_ = false;
  bool syn_after_reset_ = false;  // input_syn_sent's one early SYN
  uint32_t fin_seq_ = 0;          // valid while fin_queued_
  SendBuffer sndq_;
  bool sndq_full_ = false;  // a send found no room since the buffer last grew
  SentLog log_;
  uint32_t snd_sml_ = 0;  // the end of the last small segment sent (Nagle)
  uint32_t dupacks_ = 0;
  int retries_ = 0;  // retransmissions (or probes) without progress

  // Receive side.
  uint32_t irs_ = 0, rcv_nxt_ = 0, rcv_adv_ = 0;
  uint8_t rcv_wscale_ = 0, wscale_offer_ = 0;
  ReceiveQueue rxq_;
  size_t lent_ = 0;        // bytes lend() gave the program, not returned yet
  bool fin_in_ = false;    // the peer's FIN is in order and taken
  bool fin_held_ = false;  // a FIN beyond a hole
  uint32_t fin_held_seq_ = 0;
  uint32_t rcv_mss_ = 536;  // the largest segment seen: ACK every second
  uint32_t quickacks_ = 0;
  bool delack_started_ = false;
  bool ack_now_ = false;
  bool hold_acks_ = false;  // hold_acks(): in-order data's ACKs wait for release_ack
  bool ack_held_ = false;   // one is owed at release_ack
  uint32_t dsack_left_ = 0, dsack_right_ = 0;  // a duplicate to report (D-SACK)
  // SACK compression (ack_out_of_order): the rcv_nxt duplicate ACKs were
  // counted at, how many went at once, and how many segments the next
  // ACK answers.
  uint32_t dup_acks_at_ = 0, dup_acks_sent_ = 0, compressed_acks_ = 0;
  SackReport sack_report_;
  RcvBufTuner rcv_tuner_;

  // Options in use (both ends offered them).
  bool ts_ok_ = false, sack_ok_ = false, ws_ok_ = false;
  uint32_t ts_recent_ = 0;
  uint64_t ts_recent_us_ = 0;
  uint32_t last_ack_sent_ = 0;
  uint64_t last_oow_ack_us_ = 0;
  bool oow_acked_ = false;

  RttEstimator rtt_;
  std::unique_ptr<CongestionControl> cc_;
  // Loss recovery (recovery.cc): fast recovery or the recovery after an
  // RTO, until snd_una passes recovery_point_; RACK's newest delivered
  // segment and its RTT (RFC 8985 §6.2); one tail loss probe per episode.
  bool in_recovery_ = false, recovery_rto_ = false, reordering_seen_ = false, tlp_out_ = false;
  bool rack_valid_ = false, fast_retransmit_ = false;
  uint32_t reo_wnd_mult_ = 1;  // widened by each D-SACK
  // PRR (RFC 6937): what fast recovery delivered and sent since it began,
  // the flight at its start, and the window the last ACK set.
  uint64_t prr_delivered_ = 0, prr_out_ = 0;
  uint32_t prr_recover_fs_ = 0, prr_cwnd_ = 0;
  // A probe's episode (RFC 8985 §7.4): snd_nxt when it went, and whether
  // it sent data again (a new-data probe shows nothing).
  bool tlp_episode_ = false, tlp_retrans_ = false;
  uint32_t tlp_end_ = 0;
  uint32_t recovery_point_ = 0, rack_end_ = 0, rack_fack_ = 0;
  uint64_t rack_xmit_us_ = 0, rack_rtt_us_ = 0, min_rtt_us_ = UINT64_MAX;
  ConnectionTimer retransmit_timer_, delack_timer_, persist_timer_, wait_timer_;
  ConnectionTimer reorder_timer_, probe_timer_, keepalive_timer_, cork_timer_;
  bool cork_expired_ = false;  // the cork's ceiling passed: the held tail goes
  uint64_t last_rcv_us_ = 0;   // the last segment from the peer (keepalive)
  uint64_t progress_us_ = 0;   // sent data last acknowledged or first outstanding
  int keep_probes_ = 0;
  int probes_out_ = 0;  // zero-window probes no ACK answered
  uint64_t persist_backoff_ = 0;
  Counters ctr_;
};

}  // namespace ss::net::tcp
