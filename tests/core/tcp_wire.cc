#include "tests/core/tcp_wire.h"

#include <algorithm>
#include <cstring>

#include "core/net/tcp/handover_codec.h"
#include "tests/core/tcp_room_sink.h"

namespace ss::net::tcp::wire {

struct Wire::End : RoomSink {
  Wire* wire = nullptr;
  int side = 0;
  uint64_t sent_count = 0, delivered = 0;
  bool listening = false;  // the first SYN opens it passively
  std::unique_ptr<Connection> conn;
  void sent(std::span<const uint8_t> seg) override {
    wire->sent(side, std::vector<uint8_t>(seg.begin(), seg.end()));
  }
};

Wire::Wire(const Config& a, const Config& b, const Faults& f) : faults_(f), rng_(f.seed) {
  mem::PoolOptions po;
  po.frame_size = 2048;
  po.frames_per_chunk = 256;
  po.max_chunks = 64;
  po.backing = mem::Backing::kPrivate;
  mem::Pool::create(po, &pool_);
  const Config* cfg[2] = {&a, &b};
  for (int i = 0; i < 2; i++) {
    ends_[i] = std::make_unique<End>();
    ends_[i]->wire = this;
    ends_[i]->side = i;
    ends_[i]->listening = i == 1;
    ends_[i]->conn = std::make_unique<Connection>(*cfg[i], i ? 80 : 40000, i ? 40000 : 80,
                                                  ends_[i].get(), &timers_);
  }
}

Connection& Wire::end(int side) { return *ends_[side]->conn; }

int Wire::hand_over(int side, const Config& c) {
  End& e = *ends_[side];
  Handover h;
  if (const int r = e.conn->handover(&h, now_); r < 0) return r;
  FourTuple t;
  t.local = IpAddr::parse(side ? "10.0.0.2" : "10.0.0.1");
  t.remote = IpAddr::parse(side ? "10.0.0.1" : "10.0.0.2");
  t.local_port = side ? 80 : 40000;
  t.remote_port = side ? 40000 : 80;
  FourTuple back;
  Handover carried;
  if (const int r = decode_handover(encode_handover(t, h), &back, &carried); r < 0) return r;
  if (!(back == t)) return -EINVAL;
  std::vector<mem::Buffer> unread;
  for (size_t off = 0; off < carried.unread.size();) {
    mem::Buffer b = pool_->get();
    const size_t n = std::min(b.capacity(), carried.unread.size() - off);
    if (!b || b.set_size(n) != 0) return -ENOBUFS;
    std::memcpy(b.data(), carried.unread.data() + off, n);
    unread.push_back(std::move(b));
    off += n;
  }
  e.conn.reset();  // its timers cancelled, nothing sent
  e.conn = std::make_unique<Connection>(c, t.local_port, t.remote_port, &e, &timers_);
  return e.conn->restore(carried, std::move(unread), now_);
}

Wire::~Wire() {
  for (auto& e : ends_) e->conn.reset();
}

void Wire::sent(int from, std::vector<uint8_t> bytes) {
  End& e = *ends_[from];
  const uint64_t n = e.sent_count++;
  std::uniform_real_distribution<double> u(0, 1);
  if ((faults_.drop_rule && faults_.drop_rule(from, n)) || u(rng_) < faults_.drop) {
    dropped_++;
    return;
  }
  uint64_t at = now_ + faults_.latency_us;
  if (u(rng_) < faults_.reorder) at += faults_.reorder_delay_us;
  if (u(rng_) < faults_.duplicate) flight_.push(InFlight{at + 1, order_++, 1 - from, bytes});
  flight_.push(InFlight{at, order_++, 1 - from, std::move(bytes)});
}

void Wire::deliver(const InFlight& s) {
  mem::Buffer frame = pool_->get();
  if (!frame || frame.set_size(s.bytes.size()) != 0) return;  // counted as a drop by the peer
  std::memcpy(frame.data(), s.bytes.data(), s.bytes.size());
  Header h;
  std::span<const uint8_t> data;
  if (parse_header({static_cast<const uint8_t*>(frame.data()), frame.size()}, &h, &data) !=
      HeaderVerdict::kOk) {
    return;
  }
  Options o;
  parse_options(h.options, h.flags & kSyn, &o);
  frame.pull_head(frame.size() - data.size());
  End& e = *ends_[s.to];
  e.delivered++;
  if (e.listening) {
    if ((h.flags & (kSyn | kAck | kRst)) != kSyn) return;
    e.listening = false;
    e.conn->accept_syn(h, o, 5000, now_);
    return;
  }
  e.conn->input(h, o, std::move(frame), now_);
}

void Wire::run(uint64_t until, const std::function<bool()>& app) {
  if (!app()) return;
  for (;;) {
    const uint64_t next_seg = flight_.empty() ? UINT64_MAX : flight_.top().at;
    const uint64_t next = std::min(next_seg, timers_.next_due());
    if (next > until) {
      now_ = until;
      return;
    }
    now_ = std::max(now_, next);
    if (next_seg <= timers_.next_due()) {
      const InFlight s = flight_.top();
      flight_.pop();
      deliver(s);
    } else if (auto* t = static_cast<ConnectionTimer*>(timers_.pop_due(now_))) {
      t->conn->on_timer(t, now_);
    }
    if (!app()) return;
  }
}

}  // namespace ss::net::tcp::wire
