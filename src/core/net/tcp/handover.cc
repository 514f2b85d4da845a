// Connection::handover: the state another TCP carries the connection on
// with (handover.h).
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

std::vector<uint8_t> peer_close_packet(const FourTuple& t, const Handover& h, PeerClose what) {
  const bool fin = what == PeerClose::kFin;
  if (fin ? !h.fin : !h.fin_acked) return {};
  FrameFields f;
  f.ip_version = t.remote.family == AF_INET6 ? 6 : 4;
  memcpy(f.src_ip, t.remote.bytes, t.remote.size());
  memcpy(f.dst_ip, t.local.bytes, t.local.size());
  Options o;
  o.has_ts = h.timestamps;
  o.ts_val = h.ts_recent;
  uint8_t opts[kMaxOptionsLen];
  const size_t olen = write_options(o, opts);
  Header th;
  th.src_port = t.remote_port;
  th.dst_port = t.local_port;
  th.seq = h.rcv_nxt + (!fin && h.fin ? 1 : 0);
  th.ack = h.snd_una + (fin ? 0 : 1);
  th.flags = fin ? kFin | kAck : kAck;
  th.window = static_cast<uint16_t>(
      std::min<uint32_t>(h.snd_wnd >> (h.window_scaling ? h.snd_wscale : 0), 0xffff));
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
