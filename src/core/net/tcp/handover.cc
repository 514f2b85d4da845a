// Connection::handover: the state another TCP carries the connection on
// with (handover.h); Connection::restore: carrying one on from it.
#include "core/net/tcp/handover.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/net/ethernet.h"
#include "core/net/frame_build.h"
#include "core/net/tcp/connection.h"
#include "core/net/tcp/header.h"
#include "core/net/tcp/options.h"
#include "core/net/tcp/seq.h"

namespace ss::net::tcp {

int Connection::handover(Handover* h, uint64_t now) {
  // Before ESTABLISHED there is nothing to carry on; after an error or
  // an abort, nothing the program could use. TIME-WAIT goes, and so does
  // its end (its timer, or a RST cut it short) while the program holds
  // the connection: it reads the end of stream from the other TCP as it
  // would here.
  const bool ended =
      state_ == State::kClosed && fin_in_ && fin_queued_ && seq_gt(snd_una_, fin_seq_);
  switch (state_) {
    case State::kEstablished:
    case State::kCloseWait:
    case State::kFinWait1:
    case State::kFinWait2:
    case State::kClosing:
    case State::kLastAck:
    case State::kTimeWait:
      break;
    case State::kClosed:
      if (ended) break;
      [[fallthrough]];
    default:
      return -EOPNOTSUPP;
  }
  if (error_) return -EOPNOTSUPP;
  // The peer's FIN is in rcv_nxt_: the other TCP takes it as a segment.
  h->fin = state_ == State::kCloseWait || state_ == State::kClosing || state_ == State::kLastAck ||
           state_ == State::kTimeWait || ended;
  h->ts_recent = ts_recent_;
  // Ours, sent or acknowledged, is the other TCP's to send (again) after
  // the data: the numbers stop before it. Its ACK, once come, goes to the
  // other TCP as a segment too.
  h->fin_sent = fin_queued_ && seq_gt(snd_max_, fin_seq_);
  h->fin_queued = fin_queued_ && !h->fin_sent;
  h->fin_acked = fin_queued_ && seq_gt(snd_una_, fin_seq_);
  h->ours_first = state_ == State::kClosing && h->fin_sent;
  h->snd_una = h->fin_acked ? fin_seq_ : snd_una_;
  h->rcv_nxt = rcv_nxt_ - (h->fin ? 1 : 0);
  h->snd_wl1 = snd_wl1_;
  h->snd_wnd = snd_wnd_;
  h->max_snd_wnd = std::max(max_snd_wnd_, snd_wnd_);
  h->rcv_wup = h->rcv_nxt;
  h->rcv_wnd = rcv_adv_ - h->rcv_nxt;
  h->peer_mss = peer_mss_;
  h->window_scaling = ws_ok_;
  h->snd_wscale = snd_wscale_;
  h->rcv_wscale = rcv_wscale_;
  h->sack = sack_ok_;
  h->timestamps = ts_ok_;
  // Even: Linux (6.7 on) reads bit 0 of TCP_TIMESTAMP as "a microsecond clock".
  h->ts_val = (ts_now(now) + 2) & ~1u;
  // Sent: everything up to the highest byte that went out (a retransmission
  // under way included); what is held out of order is left for the peer to
  // send again (it may, RFC 2018 §8).
  const uint32_t data_end = fin_queued_ ? fin_seq_ : snd_una_ + static_cast<uint32_t>(sndq_.size());
  const uint32_t sent_end = seq_min(snd_max_, data_end);
  const size_t sent = seq_gt(sent_end, h->snd_una) ? sent_end - h->snd_una : 0;
  h->sent.resize(sent);
  h->unsent.resize(data_end - h->snd_una - sent);
  if (sent) sndq_.copy_out(0, sent, h->sent.data());
  if (!h->unsent.empty()) sndq_.copy_out(sent, h->unsent.size(), h->unsent.data());
  h->unread.resize(rxq_.readable());
  rxq_.copy_out(h->unread, /*peek=*/true, /*past_offer=*/true);
  return 0;
}

namespace {

// The segment of the peer's that a handover leaves to the other TCP
// (PeerClose), without its ports: false where h has none.
bool peer_close_segment(const Handover& h, PeerClose what, Header* th, Options* o) {
  const bool fin = what == PeerClose::kFin;
  if (fin ? !h.fin : !h.fin_acked) return false;
  o->has_ts = h.timestamps;
  o->ts_val = h.ts_recent;  // no echo: no RTT sample from it
  th->seq = h.rcv_nxt + (!fin && h.fin ? 1 : 0);
  th->ack = h.snd_una + (fin ? 0 : 1);
  th->flags = fin ? kFin | kAck : kAck;
  th->window = static_cast<uint16_t>(
      std::min<uint32_t>(h.snd_wnd >> (h.window_scaling ? h.snd_wscale : 0), 0xffff));
  return true;
}

}  // namespace

int Connection::restore(const Handover& h, std::vector<mem::Buffer> unread, uint64_t now) {
  size_t unread_bytes = 0;
  for (const mem::Buffer& b : unread) unread_bytes += b.size();
  const size_t out = h.sent.size() + h.unsent.size();
  // RFC 7323 §2.3: a shift above 14 is none a peer could have agreed to.
  if (state_ != State::kClosed || closed_by_program_ || snd_max_ != 0 || h.snd_wscale > 14 ||
      h.rcv_wscale > 14 || unread_bytes != h.unread.size() || out > (1u << 30) ||
      seq_lt(h.rcv_wup + h.rcv_wnd, h.rcv_nxt) || (h.fin_acked && out != 0))
    return -EINVAL;
  if (out > sndq_.capacity() && !sndq_.grow(out)) return -ENOMEM;
  sndq_.append(h.sent);
  sndq_.append(h.unsent);
  // What went before goes again: the peer drops what it had (a D-SACK).
  iss_ = h.snd_una - 1;
  snd_una_ = snd_nxt_ = snd_max_ = snd_sml_ = h.snd_una;
  snd_wnd_ = h.snd_wnd;
  max_snd_wnd_ = std::max(h.max_snd_wnd, h.snd_wnd);
  snd_wl1_ = h.snd_wl1;
  snd_wl2_ = h.snd_una;
  irs_ = h.rcv_nxt - 1;
  rcv_nxt_ = last_ack_sent_ = h.rcv_nxt;
  rcv_adv_ = h.rcv_wup + h.rcv_wnd;  // the right edge the peer knows: never back
  ws_ok_ = h.window_scaling;
  snd_wscale_ = ws_ok_ ? h.snd_wscale : 0;
  rcv_wscale_ = wscale_offer_ = ws_ok_ ? h.rcv_wscale : 0;
  // The options the connection has, whatever this end would offer.
  ts_ok_ = h.timestamps;
  ts_recent_ = h.ts_recent;
  ts_recent_us_ = now;
  cfg_.ts_offset = h.ts_val - static_cast<uint32_t>(now / 1000);
  sack_ok_ = h.sack;
  set_peer_mss(h.peer_mss);
  for (mem::Buffer& b : unread)
    if (b.size()) rxq_.push(std::move(b));
  establish(now);
  // The peer's FIN first, then ours, then its ACK of ours: CLOSE-WAIT,
  // LAST-ACK, and their ends follow as from those segments.
  Header th;
  Options o;
  if (peer_close_segment(h, PeerClose::kFin, &th, &o)) input(th, o, mem::Buffer(), now);
  if (h.fin_sent || h.fin_queued) queue_fin(now);
  transmit(now);
  th = Header();
  o = Options();
  if (peer_close_segment(h, PeerClose::kAckOfOurs, &th, &o)) input(th, o, mem::Buffer(), now);
  return 0;
}

std::vector<uint8_t> peer_close_packet(const FourTuple& t, const Handover& h, PeerClose what) {
  Options o;
  Header th;
  if (!peer_close_segment(h, what, &th, &o)) return {};
  FrameFields f;
  f.ip_version = t.remote.family == AF_INET6 ? 6 : 4;
  memcpy(f.src_ip, t.remote.bytes, t.remote.size());
  memcpy(f.dst_ip, t.local.bytes, t.local.size());
  uint8_t opts[kMaxOptionsLen];
  const size_t olen = write_options(o, opts);
  th.src_port = t.remote_port;
  th.dst_port = t.local_port;
  const size_t head = ip_frame_header_len(f.ip_version);
  std::vector<uint8_t> frame(head + kHeaderLen + olen);
  const std::span<uint8_t> seg(frame.data() + head, kHeaderLen + olen);
  write_header(seg.data(), th, olen);
  memcpy(seg.data() + kHeaderLen, opts, olen);
  fill_checksum(f.ip_version, f.src_ip, f.dst_ip, seg);
  if (build_ip_headers(frame, f, kIpProtoTcp, seg.size(), frame.size()) < 0) return {};
  return {frame.begin() + kEthHeaderLen, frame.end()};
}

}  // namespace ss::net::tcp
