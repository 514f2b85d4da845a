// Where a stack's frames go: the flows it steers, held by count; a
// stopped listener's port keeping only what is open; a connection handed
// to another TCP (hand_over) and the frames that still come for it.
#include <algorithm>
#include <cstring>

#include "core/base/log.h"
#include "core/net/steered_flow.h"
#include "core/net/tcp/stack_parts.h"

namespace ss::net::tcp {

int Stack::steer_locked(const prov::SteeredFlow& f) {
  if (int& refs = flow_refs_[f]; refs++ > 0) return 0;
  const int err = cfg_.steering->add(f);
  if (err) flow_refs_.erase(f);
  return err;
}

void Stack::unsteer_locked(const prov::SteeredFlow& f) {
  auto it = flow_refs_.find(f);
  if (it == flow_refs_.end() || --it->second > 0) return;
  flow_refs_.erase(it);
  std::erase(kept_only_, f);
  cfg_.steering->remove(f);
}

void Stack::keep_only_open_locked(const prov::SteeredFlow& f) {
  if (std::ranges::count(kept_only_, f)) return;
  int err = cfg_.steering->steers_connections() ? 0 : -EOPNOTSUPP;
  std::vector<Open*> kept;
  // A walk over the connections, once per stopped listener.
  for (auto it = opens_.begin(); err == 0 && it != opens_.end(); ++it) {
    Open& o = it->second;
    if (o.flow != f || o.kept) continue;
    if ((err = cfg_.steering->keep(flow_connection(o.t), true)) == 0) {
      o.kept = true;
      kept.push_back(&o);
    }
  }
  if (err == 0) err = cfg_.steering->add_kept_only(f);
  if (err == 0) {
    kept_only_.push_back(f);
    return;
  }
  for (Open* o : kept) {
    cfg_.steering->keep(flow_connection(o->t), false);
    o->kept = false;
  }
  ctr_.keep_failed++;
  SS_WARN(
      "tcp: port %u: its listener left, but the steering keeps all its frames (%s): new "
      "connections to it are reset until the ones it accepted end",
      f.port, strerror(-err));
}

bool Stack::kept_only_locked(const FourTuple& t) const {
  if (kept_only_.empty()) return false;
  // The steering program's order: the address's own flow, else the port's.
  prov::SteeredFlow f = steered_flow(kIpProtoTcp, t.local, t.local_port);
  if (!flow_refs_.count(f)) memset(f.ip, 0, sizeof f.ip);
  return std::ranges::count(kept_only_, f) > 0;
}

bool Stack::left_lately_locked(const FourTuple& t, uint64_t now) {
  if (left_.empty()) return false;
  drop_ended(&left_, now);
  prov::SteeredFlow port = steered_flow(kIpProtoTcp, t.local, t.local_port);
  const prov::SteeredFlow address = port;
  memset(port.ip, 0, sizeof port.ip);
  return std::ranges::any_of(left_,
                             [&](const auto& l) { return l.first == address || l.first == port; });
}

int Stack::own_open() {
  std::lock_guard lock(mu_);
  for (const auto& [conn, o] : opens_)
    if (const int err = cfg_.steering->own(flow_connection(o.t), true); err < 0) return err;
  return 0;
}

void Stack::unsteer_open_locked(Open& o) {
  if (o.kept) cfg_.steering->keep(flow_connection(o.t), false);
  o.kept = false;
  unsteer_locked(o.flow);
}

int Stack::hand_over(Socket* s, const std::function<int(const Handover&)>& install,
                     bool to_kernel) {
  const Sending lock(this);
  drain_inbox_locked();  // what reached the rings is in the state handed over
  auto it = s->conn ? opens_.find(s->conn) : opens_.end();
  if (it == opens_.end()) return -ENOTCONN;
  const uint64_t now = clock_();
  const FourTuple& t = it->second.t;
  // Unsteering a flow only this connection holds (an active open's) gives
  // its frames to the kernel; a listener's flow (an accepted connection
  // holds it too) stays, and the steering must pass the connection alone.
  const auto refs = flow_refs_.find(it->second.flow);
  const bool own_flow = refs != flow_refs_.end() && refs->second == 1;
  // TIME-WAIT, or its end, stays here (the other TCP's socket closes, as
  // Linux's does once its connection is in TIME-WAIT): the flow keeps its
  // steering until the connection is freed.
  const bool stays = s->conn->state() == State::kTimeWait || s->conn->state() == State::kClosed;
  if (!own_flow && !stays && !cfg_.steering->steers_connections()) return -EOPNOTSUPP;
  // Another stack steers the port only once it adopted: a flow this one
  // gives up would meet the kernel meanwhile.
  if (!to_kernel && (own_flow || stays)) return -EOPNOTSUPP;
  Handover h;
  if (const int r = s->conn->handover(&h, now); r < 0) return r;
  if (!to_kernel) {
    out_->send_batch();
    if (const int r = install(h); r < 0) return r;
    // Until the adopter owns the tuple its frames still come here: dropped.
    moved_.emplace_back(t, now + kMovedQuietUs);
    table_.remove(t);
    unsteer_open_locked(it->second);
    opens_.erase(it);
  } else if (stays) {
    if (const int r = install(h); r < 0) return r;
    it->second.handle = nullptr;  // the program's no more, as after a close
    s->conn->close(now);
    maybe_done_.push_back(s->conn);
  } else {
    const prov::FlowConnection pc = flow_connection(t);
    // The steering's entry first (where it can fail), passing once the
    // kernel has the connection: a frame passed earlier would meet the
    // kernel's listener, which resets it.
    if (!own_flow)
      if (const int r = cfg_.steering->pass(pc, false); r < 0) return r;
    out_->send_batch();  // what the drain answered leaves before the kernel's segments
    if (const int r = install(h); r < 0) return r;
    if (!own_flow && cfg_.steering->pass(pc, true) < 0) ctr_.pass_failed++;
    moved_.emplace_back(t, now + kMovedQuietUs);
    table_.remove(t);
    unsteer_open_locked(it->second);
    opens_.erase(it);  // quietly: its timers cancelled, nothing sent
  }
  s->conn = nullptr;
  s->moved = true;
  s->changes++;
  s->waiters.wake();
  ctr_.handed_over++;
  wake_touched_locked();
  return 0;
}

// A connection the rings passed to the kernel (hand_over) keeps its
// steering entry only while newer ones leave room: once lost, its frames
// come here again. So, on a device that passed any, an ACK of no
// connection goes to the kernel and is dropped: the peer's retransmission
// reaches the kernel's connection, or the kernel's RST if it has none.
bool Stack::to_kernel_instead_locked(const FourTuple& t, const Header& h) {
  if ((h.flags & (kAck | kRst | kSyn)) != kAck || !cfg_.steering->passed_any() ||
      cfg_.steering->pass(flow_connection(t), true) < 0)
    return false;
  ctr_.stray_to_kernel++;
  return true;
}

bool Stack::moved_locked(const FourTuple& t, uint64_t now) {
  drop_ended(&moved_, now);
  for (const auto& m : moved_)
    if (m.first == t) return true;
  return false;
}

}  // namespace ss::net::tcp
