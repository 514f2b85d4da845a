// What the stack does of itself: segments from the rings, each to its
// connection or listener (or a reset), and the timers that came due.
#include "core/net/tcp/stack_parts.h"

namespace ss::net::tcp {

using mem::Buffer;

void Stack::enqueue(RxSegment&& seg) {
  std::lock_guard lock(inbox_mu_);
  inbox_.push_back(std::move(seg));
}

void Stack::drain() {
  const Sending lock(this);
  drain_inbox_locked();
  sweep_locked();
  wake_touched_locked();
}

void Stack::drain_inbox_locked() {
  std::vector<RxSegment> segs;
  for (;;) {
    {
      std::lock_guard in(inbox_mu_);
      segs.swap(inbox_);
    }
    if (segs.empty()) break;
    const uint64_t now = clock_();
    for (RxSegment& seg : segs) segment_locked(seg, now);
    // The batch's held ACKs (Connection::hold_acks), of connections still open.
    for (Connection* c : held_)
      if (opens_.count(c)) c->release_ack(now);
    held_.clear();
    segs.clear();  // the frames not kept go back now
  }
}

void Stack::input_held_locked(Connection* c, const Header& h, const Options& o, Buffer payload,
                              uint64_t now) {
  const bool held = c->ack_held();
  c->hold_acks(true);
  c->input(h, o, std::move(payload), now);
  c->hold_acks(false);
  if (!held && c->ack_held()) held_.push_back(c);
  touch_locked(c);
}

void Stack::segment_locked(RxSegment& seg, uint64_t now) {
  ctr_.segments_in++;
  const auto* p = static_cast<const uint8_t*>(seg.frame.data());
  const std::span<const uint8_t> segment{p, seg.frame.size()};
  Header h;
  std::span<const uint8_t> data;
  if (parse_header(segment, &h, &data) != HeaderVerdict::kOk) {
    ctr_.bad_header++;
    return;
  }
  if (!checksum_ok(seg.ip.ip_version, seg.ip.src_ip, seg.ip.dst_ip, seg.frame)) {
    ctr_.bad_checksum++;
    return;
  }
  Options o;
  parse_options(h.options, h.flags & kSyn, &o);
  const sa_family_t fam = seg.ip.ip_version == 4 ? AF_INET : AF_INET6;
  const size_t alen = fam == AF_INET ? 4 : 16;
  FourTuple t;
  t.local = IpAddr::raw(fam, seg.ip.dst_ip, alen);
  t.remote = IpAddr::raw(fam, seg.ip.src_ip, alen);
  t.local_port = h.dst_port;
  t.remote_port = h.src_port;
  // The data stays in its frames: the view moves past the header (which
  // is all in the first).
  Buffer payload = std::move(seg.frame);
  payload.pull_head(segment.size() - data.size());

  if (!moved_.empty() && moved_locked(t, now)) {
    ctr_.moved_drops++;
    return;
  }
  Connection* conn = nullptr;
  Listener* listener = nullptr;
  switch (table_.route(t, h, o, &conn, &listener)) {
    case Table::Route::kConnection:
      input_held_locked(conn, h, o, std::move(payload), now);
      return;
    case Table::Route::kReuse:
      if (Open* op = open_of(conn); op && op->handle) {  // still the program's: not reused
        input_held_locked(conn, h, o, std::move(payload), now);
        return;
      }
      ctr_.time_wait_reused++;
      if (auto it = opens_.find(conn); it != opens_.end()) free_locked(it);
      listener->input(t, h, o, std::move(payload), now);
      return;
    case Table::Route::kListener:
      listener->input(t, h, o, std::move(payload), now);
      return;
    case Table::Route::kNone: {
      // Sent before its port went to the kernel: the client's retry goes
      // there. A reset would refuse a client the kernel's listener serves.
      if ((h.flags & (kSyn | kAck)) == kSyn &&
          (kept_only_locked(t) || left_lately_locked(t, now))) {
        ctr_.stray_syns++;
        return;
      }
      if (to_kernel_instead_locked(t, h)) return;
      ctr_.no_socket++;
      Header rst;
      if (reset_reply(h, static_cast<uint32_t>(data.size()), &rst))
        send_stateless_locked(t, rst, Options{});
      return;
    }
  }
}

void Stack::run_timers() {
  const Sending lock(this);
  const uint64_t now = clock_();
  while (Timer* t = timers_.pop_due(now)) {
    auto* ct = static_cast<ConnectionTimer*>(t);
    ct->conn->on_timer(ct, now);
    touch_locked(ct->conn);
  }
  sweep_locked();
  wake_touched_locked();
}
uint64_t Stack::next_due() const {
  std::lock_guard lock(mu_);
  return timers_.next_due();
}

void Stack::watch_due(uint64_t due) {
  std::lock_guard lock(mu_);
  watched_due_ = due;
}

void Stack::check_due_locked() {
  const uint64_t due = timers_.next_due();
  if (due >= watched_due_) return;
  watched_due_ = due;  // one call per deadline moved earlier
  if (cfg_.on_earlier_due) cfg_.on_earlier_due();
}

}  // namespace ss::net::tcp
