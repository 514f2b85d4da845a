#include "core/net/tcp/listener.h"

#include <algorithm>

namespace ss::net::tcp {

bool reset_reply(const Header& h, uint32_t data_len, Header* rst) {
  if (h.flags & kRst) return false;
  *rst = Header{};
  rst->src_port = h.dst_port;
  rst->dst_port = h.src_port;
  if (h.flags & kAck) {
    rst->seq = h.ack;
    rst->flags = kRst;
  } else {
    rst->ack = h.seq + data_len + ((h.flags & kSyn) ? 1 : 0) + ((h.flags & kFin) ? 1 : 0);
    rst->flags = kRst | kAck;
  }
  return true;
}

Listener::Entry* Listener::pending(const FourTuple& t) {
  for (Entry& e : syn_queue_) {
    if (e.t == t) return &e;
  }
  return nullptr;
}

void Listener::input(const FourTuple& t, const Header& h, const Options& o, mem::Buffer data,
                     uint64_t now) {
  for (Entry& e : accept_queue_) {  // established, not yet accepted
    if (e.t == t) {
      e.conn->input(h, o, std::move(data), now);
      return;
    }
  }
  if (Entry* e = pending(t)) {
    // The handshake's last ACK needs room on the accept queue: without it
    // the segment is dropped and the peer sends it again.
    if ((h.flags & kAck) && !(h.flags & (kSyn | kRst)) && accept_queue_.size() >= cfg_.backlog) {
      ctr_.accept_queue_overflows++;
      return;
    }
    e->conn->input(h, o, std::move(data), now);
    settle();
    return;
  }
  if ((h.flags & (kSyn | kAck | kRst)) != kSyn) {
    if ((h.flags & (kAck | kRst | kSyn)) == kAck && cfg_.syncookies &&
        cookie_ack(t, h, o, data, now)) {
      return;
    }
    if (host_->to_kernel_instead(t, h)) return;
    Header rst;
    if (reset_reply(h, static_cast<uint32_t>(data.chain_size()), &rst) && (h.flags & kAck)) {
      ctr_.resets_sent++;
      host_->send_stateless(t, rst, Options{});
    }
    return;  // a RST, or neither SYN nor ACK: dropped (§3.10.7.2)
  }
  ctr_.syns++;
  if (cfg_.max_syn_rate) {  // a bound on SYNs a second: the rest dropped (the peer sends again)
    if (now / 1'000'000 != rate_second_) {
      rate_second_ = now / 1'000'000;
      rate_syns_ = 0;
    }
    if (rate_syns_ >= cfg_.max_syn_rate) {
      ctr_.syn_rate_drops++;
      return;
    }
    rate_syns_++;
  }
  if (accept_queue_.size() >= cfg_.backlog) {
    ctr_.accept_queue_overflows++;
    return;
  }
  if (cfg_.syncookies == 2 || syn_queue_.size() >= cfg_.syn_backlog) {
    ctr_.syn_queue_overflows += syn_queue_.size() >= cfg_.syn_backlog;
    if (cfg_.syncookies) send_cookie(t, h, o, now);
    return;
  }
  std::unique_ptr<Connection> c = host_->make_connection(t, cfg_.conn);
  if (!c) return;
  c->accept_syn(h, o, isn_->isn(t, now), now);
  syn_queue_.push_back(Entry{t, std::move(c)});
}

void Listener::send_cookie(const FourTuple& t, const Header& syn, const Options& o, uint64_t now) {
  const Config& c = cfg_.conn;
  // What the connection will use, as the cookie must carry it: without
  // timestamps nothing but the MSS survives, so nothing else is offered.
  const bool ts = c.timestamps && o.has_ts;
  Options used = o;
  used.has_wscale = ts && c.window_scaling && o.has_wscale;
  used.sack_permitted = ts && c.sack && o.sack_permitted;
  Options synack;
  synack.has_mss = true;
  synack.mss = c.mss;
  synack.has_wscale = used.has_wscale;
  synack.wscale = window_scale_for(c);
  synack.sack_permitted = used.sack_permitted;
  synack.has_ts = ts;
  synack.ts_ecr = o.ts_val;
  const uint32_t ts_clock = static_cast<uint32_t>(now / 1000) + c.ts_offset;
  Header h;
  h.src_port = syn.dst_port;
  h.dst_port = syn.src_port;
  h.seq = cookies_.make(t, syn.seq, used, now, ts_clock, ts ? &synack.ts_val : nullptr);
  h.ack = syn.seq + 1;
  h.flags = kSyn | kAck;
  h.window = static_cast<uint16_t>(std::min<uint32_t>(c.rcv_buf, 0xffff));
  ctr_.cookies_sent++;
  host_->send_stateless(t, h, synack);
}

bool Listener::cookie_ack(const FourTuple& t, const Header& h, const Options& o, mem::Buffer& data,
                          uint64_t now) {
  CookieState st;
  if (!cookies_.check(t, h.seq, h.ack, o, now, &st)) {
    ctr_.cookies_bad++;
    return false;
  }
  ctr_.cookies_ok++;
  if (accept_queue_.size() >= cfg_.backlog) {
    ctr_.accept_queue_overflows++;
    return true;  // dropped: the peer sends its data again, the cookie still good
  }
  std::unique_ptr<Connection> c = host_->make_connection(t, cfg_.conn);
  if (!c) return true;
  c->accept_cookie(h, o, std::move(data), h.ack - 1, st, now);
  ctr_.handshakes++;
  accept_queue_.push_back(Entry{t, std::move(c)});
  return true;
}

void Listener::abort_all(uint64_t now) {
  for (Entry& e : syn_queue_) {
    e.conn->abort(now);
    host_->forget(e.t);
  }
  for (Entry& e : accept_queue_) {
    e.conn->abort(now);
    host_->forget(e.t);
  }
  syn_queue_.clear();
  accept_queue_.clear();
}

void Listener::settle() {
  for (size_t i = 0; i < syn_queue_.size();) {
    Entry& e = syn_queue_[i];
    const State s = e.conn->state();
    if (s == State::kSynReceived) {
      i++;
      continue;
    }
    if (s == State::kClosed) {
      ctr_.failed_handshakes++;
      host_->forget(e.t);
    } else {
      ctr_.handshakes++;
      accept_queue_.push_back(std::move(e));
    }
    syn_queue_.erase(syn_queue_.begin() + static_cast<ptrdiff_t>(i));
  }
}

std::unique_ptr<Connection> Listener::accept(FourTuple* t) {
  if (accept_queue_.empty()) return nullptr;
  Entry e = std::move(accept_queue_.front());
  accept_queue_.pop_front();
  if (t) *t = e.t;
  return std::move(e.conn);
}

}  // namespace ss::net::tcp
