#include "core/net/udp_stack.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/base/log.h"
#include "core/net/frame_parse.h"
#include "core/net/steered_flow.h"

namespace ss::net {

using mem::Buffer;

namespace {

bool any_ip(const IpAddr& a) {
  for (size_t i = 0; i < a.size(); i++)
    if (a.bytes[i]) return false;
  return true;
}

IpAddr any_of(sa_family_t family) {
  IpAddr a;
  a.family = family;
  return a;
}

sa_family_t family_of(uint8_t ip_version) { return ip_version == 4 ? AF_INET : AF_INET6; }

}  // namespace

UdpEndpoint::UdpEndpoint(UdpStack* stack, const UdpAddr& local, bool dual, bool shared)
    : stack_(stack), local_(local), dual_(dual), shared_(shared) {}

UdpEndpoint::~UdpEndpoint() { stack_->unbind(this); }

void UdpEndpoint::connect(const UdpAddr& peer) {
  std::lock_guard lock(stack_->mu_);
  peer_ = peer;
}

void UdpEndpoint::set_tx_options(const UdpTxOptions& o) {
  std::lock_guard lock(stack_->mu_);
  tx_ = o;
}

bool UdpEndpoint::steered(sa_family_t family) const {
  std::lock_guard lock(stack_->mu_);  // lend_to_kernel changes it
  return family == AF_INET ? steered_v4_ : family == AF_INET6 && steered_v6_;
}

int UdpEndpoint::join(const IpAddr& group, const McastFilter& filter) {
  if (!is_multicast(group)) return -EINVAL;
  if (group.family != local_.ip.family && !(dual_ && group.family == AF_INET)) return -EINVAL;
  if (!any_ip(local_.ip) && !(local_.ip == group)) return -EINVAL;
  return stack_->join(this, group, filter);
}

int UdpEndpoint::leave(const IpAddr& group) { return stack_->leave(this, group); }

int UdpEndpoint::lend_to_kernel(bool lend) { return stack_->lend(this, lend); }

size_t UdpEndpoint::queued() const {
  std::lock_guard lock(stack_->mu_);
  return queue_.size();
}

int UdpEndpoint::join_waiters() {
  std::lock_guard lock(stack_->mu_);
  const int err = waiters_.join();
  return err < 0 ? err : waiters_.fd();
}

void UdpEndpoint::leave_waiters(bool woken) {
  std::lock_guard lock(stack_->mu_);
  waiters_.leave(woken);
}

void UdpEndpoint::watch(bool on) {
  std::lock_guard lock(stack_->mu_);
  watched_ = on;
}

uint64_t UdpEndpoint::arrivals() const {
  std::lock_guard lock(stack_->mu_);
  return arrivals_;
}

int UdpEndpoint::recv_zcopy(Datagram* out, bool poll_rings) {
  UdpStack::Spill spill(stack_->cfg_);  // after the lock
  std::lock_guard lock(stack_->mu_);
  if (queue_.empty() && poll_rings) {
    const int n = stack_->poll_locked(64, &spill);
    if (n < 0) return n;
  }
  if (queue_.empty()) return 0;
  *out = std::move(queue_.front());
  queue_.pop_front();
  return 1;
}

ssize_t UdpEndpoint::recv(void* buf, size_t len, UdpAddr* src, size_t* full_len) {
  Datagram d;
  const int n = recv_zcopy(&d);
  if (n <= 0) return n ? n : -EAGAIN;
  const size_t copy = d.buf.size() < len ? d.buf.size() : len;
  if (copy) memcpy(buf, d.buf.data(), copy);
  if (src) *src = d.src;
  if (full_len) *full_len = d.buf.size();
  return static_cast<ssize_t>(copy);
}  // d.buf released here: the frame recycles

UdpStack::Key UdpStack::key(sa_family_t family, const uint8_t* ip, uint16_t port) {
  Key k{};
  k.family = family;
  memcpy(k.ip, ip, family == AF_INET ? 4 : 16);
  k.port = port;
  return k;
}

int UdpStack::create(const Config& cfg, std::unique_ptr<UdpStack>* out) {
  if (!out || cfg.rings.empty() || !cfg.steering) return -EINVAL;
  for (const UdpRing& r : cfg.rings)
    if (!r.queue || !r.pool) return -EINVAL;
  std::unique_ptr<UdpStack> s(new UdpStack(cfg));
  for (const UdpRing& r : cfg.rings) {
    std::vector<Buffer> frames;
    for (uint32_t i = 0; i < cfg.initial_fill; i++) {
      Buffer b = r.pool->get();
      if (!b) break;
      frames.push_back(std::move(b));
    }
    if (frames.empty()) continue;  // providers take no empty array (-EINVAL)
    const int n = r.queue->fill(frames.data(), static_cast<int>(frames.size()));
    if (n < 0) return n;
  }  // frames the ring refused go back to the pool here
  *out = std::move(s);
  return 0;
}

UdpStack::~UdpStack() = default;

bool UdpStack::can_bind_locked(const Key& k, bool shared) const {
  auto it = demux_.find(k);
  if (it == demux_.end()) return true;
  if (!shared) return false;
  for (const UdpEndpoint* e : it->second)
    if (!e->shared_) return false;
  return true;
}

int UdpStack::steer_ref_locked(const IpAddr& ip, uint16_t port) {
  const Key k = key(ip.family, ip.bytes, port);
  if (int& refs = steer_refs_[k]; refs++ > 0) return 0;
  // The steering is asked under the lock: binds, joins and their undoing
  // never interleave their flow changes.
  const int err = cfg_.steering->add(steered_flow(kIpProtoUdp, ip, port));
  if (err) steer_refs_.erase(k);
  return err;
}

void UdpStack::steer_unref_locked(const IpAddr& ip, uint16_t port) {
  auto it = steer_refs_.find(key(ip.family, ip.bytes, port));
  if (it == steer_refs_.end() || --it->second > 0) return;
  steer_refs_.erase(it);
  cfg_.steering->remove(steered_flow(kIpProtoUdp, ip, port));
}

int UdpStack::steer_holders_locked(const IpAddr& ip, uint16_t port) const {
  const auto it = steer_refs_.find(key(ip.family, ip.bytes, port));
  return it == steer_refs_.end() ? 0 : it->second;
}

int UdpStack::bind(const UdpAddr& local, bool dual, std::unique_ptr<UdpEndpoint>* out,
                   bool shared) {
  const sa_family_t fam = local.ip.family;
  if (!out || (fam != AF_INET && fam != AF_INET6) ||
      (dual && (fam != AF_INET6 || !any_ip(local.ip))))
    return -EINVAL;
  std::unique_ptr<UdpEndpoint> ep(new UdpEndpoint(this, local, dual, shared));
  std::lock_guard lock(mu_);
  const Key k = key(fam, local.ip.bytes, local.port);
  const Key k4 = key(AF_INET, any_of(AF_INET).bytes, local.port);
  if (!can_bind_locked(k, shared) || (dual && !can_bind_locked(k4, shared))) return -EADDRINUSE;
  // A group's frames are steered by its joins.
  const bool group = is_multicast(local.ip);
  int err = group ? 0 : steer_ref_locked(local.ip, local.port);
  if (err && err != -EAFNOSUPPORT) return err;
  (fam == AF_INET ? ep->steered_v4_ : ep->steered_v6_) = !err;
  if (dual) {
    const int e4 = steer_ref_locked(any_of(AF_INET), local.port);
    if (e4 && e4 != -EAFNOSUPPORT) {
      if (ep->steered_v6_) steer_unref_locked(local.ip, local.port);
      return e4;
    }
    ep->steered_v4_ = !e4;
  }
  if (!ep->steered_v4_ && !ep->steered_v6_) return -EAFNOSUPPORT;
  // Even an unsteered family's entry stays: frames of it never reach the
  // rings, and the key keeps the port taken here.
  demux_[k].push_back(ep.get());
  if (dual) demux_[k4].push_back(ep.get());
  ep->bound_ = true;
  *out = std::move(ep);
  return 0;
}

void UdpStack::unbind(UdpEndpoint* ep) {
  std::deque<Datagram> queued;  // released after the lock
  std::lock_guard lock(mu_);
  if (!ep->bound_) return;  // a failed bind undid its own steering
  for (auto g = groups_.begin(); g != groups_.end();) {
    std::erase_if(g->second.members, [ep](const Member& x) { return x.ep == ep; });
    steer_group_locked(g->first, g->second);
    g = g->second.members.empty() ? groups_.erase(g) : std::next(g);
  }
  const UdpAddr& l = ep->local_;
  if (!is_multicast(l.ip) && (l.ip.family == AF_INET ? ep->steered_v4_ : ep->steered_v6_))
    steer_unref_locked(l.ip, l.port);
  if (ep->dual_ && ep->steered_v4_) steer_unref_locked(any_of(AF_INET), l.port);
  // Only its own entries: the address may be other endpoints' too.
  for (const Key& k :
       {key(l.ip.family, l.ip.bytes, l.port), key(AF_INET, any_of(AF_INET).bytes, l.port)}) {
    auto it = demux_.find(k);
    if (it == demux_.end()) continue;
    std::erase(it->second, ep);
    if (it->second.empty()) demux_.erase(it);
  }
  queued.swap(ep->queue_);
}

// The bind's flows, as bind() took them: local's, and any-IPv4's for a
// dual endpoint. unbind() gives back only what is steered, so a lent flow
// is never given back twice.
int UdpStack::lend(UdpEndpoint* ep, bool lend) {
  std::lock_guard lock(mu_);
  if (!ep->bound_) return 0;
  int err = 0, moved = 0;
  ep->lending_ = lend;
  for (auto& [k, g] : groups_) {
    const int r = steer_group_locked(k, g);
    if (r < 0 && !err) err = r;
    if (r > 0) moved++;
  }
  // An endpoint bound to a group address: steered by its joins alone.
  if (is_multicast(ep->local_.ip)) return err ? err : moved;
  const UdpAddr& l = ep->local_;
  bool& own = l.ip.family == AF_INET ? ep->steered_v4_ : ep->steered_v6_;
  bool& own_lent = l.ip.family == AF_INET ? ep->lent_v4_ : ep->lent_v6_;
  bool* four = ep->dual_ ? &ep->steered_v4_ : nullptr;
  bool* four_lent = ep->dual_ ? &ep->lent_v4_ : nullptr;
  auto move = [&](bool& steered, bool& lent, const IpAddr& ip) {
    if (lend && steered) {
      // Another holder (a shared bind) keeps the flow: nothing moves.
      if (steer_holders_locked(ip, l.port) == 1) moved++;
      steer_unref_locked(ip, l.port);
      steered = false;
      lent = true;
    } else if (!lend && lent) {
      const int e = steer_ref_locked(ip, l.port);
      if (e && !err) err = e;
      // Held by another endpoint meanwhile: steered already, nothing moves.
      if (!e && steer_holders_locked(ip, l.port) == 1) moved++;
      steered = !e;
      lent = false;
    }
  };
  move(own, own_lent, l.ip);
  if (four) move(*four, *four_lent, any_of(AF_INET));
  return err ? err : moved;
}

int UdpStack::steer_group_locked(const Key& k, Group& g) {
  const bool want = std::any_of(g.members.begin(), g.members.end(),
                                [](const Member& m) { return !m.ep->lending_; });
  if (want == g.steered) return 0;
  const IpAddr ip = IpAddr::raw(k.family, k.ip, k.family == AF_INET ? 4 : 16);
  if (want) {
    if (const int err = steer_ref_locked(ip, k.port)) return err;
  } else {
    steer_unref_locked(ip, k.port);
  }
  g.steered = want;
  return 1;
}

int UdpStack::join(UdpEndpoint* ep, const IpAddr& group, const McastFilter& filter) {
  std::lock_guard lock(mu_);
  const Key k = key(group.family, group.bytes, ep->local_.port);
  auto it = groups_.find(k);
  if (it != groups_.end()) {
    for (Member& m : it->second.members)
      if (m.ep == ep) {
        m.filter = filter;
        return 0;
      }
  }
  Group& g = it != groups_.end() ? it->second : groups_[k];
  g.members.push_back(Member{ep, filter});
  if (const int err = steer_group_locked(k, g); err < 0) {
    // Refused: the kernel socket serves this membership.
    g.members.pop_back();
    if (g.members.empty()) groups_.erase(k);
    return err;
  }
  return 0;
}

int UdpStack::leave(UdpEndpoint* ep, const IpAddr& group) {
  std::lock_guard lock(mu_);
  if (group.family != AF_INET && group.family != AF_INET6) return -ENOENT;
  auto it = groups_.find(key(group.family, group.bytes, ep->local_.port));
  if (it == groups_.end()) return -ENOENT;
  if (!std::erase_if(it->second.members, [ep](const Member& m) { return m.ep == ep; }))
    return -ENOENT;
  steer_group_locked(it->first, it->second);
  if (it->second.members.empty()) groups_.erase(it);
  return 0;
}

UdpEndpoint* UdpStack::find_locked(const FrameFields& f) const {
  const sa_family_t fam = family_of(f.ip_version);
  auto it = demux_.find(key(fam, f.dst_ip, f.dst_port));
  if (it == demux_.end()) it = demux_.find(key(fam, any_of(fam).bytes, f.dst_port));
  return it == demux_.end() ? nullptr : it->second.back();  // the newest bound
}

void UdpStack::deliver_locked(Buffer&& frame, Spill* out) {
  std::vector<Buffer>* drop = &out->drop;
  // A packet over linked frames (a multi-buffer ring's jumbo frame): TCP
  // takes it; a UDP datagram must fit a frame (the steering program
  // gives longer ones to the kernel).
  const size_t linked = frame.chain_size() - frame.size();
  if (linked && !cfg_.tcp) {
    rx_.chained++;
    drop->push_back(std::move(frame));
    return;
  }
  ParsedFrame p;
  const auto* data = static_cast<const uint8_t*>(frame.data());
  const FrameReason why = parse_frame({data, frame.size()}, &p, cfg_.tcp != nullptr, linked);
  if (linked && why == FrameReason::kAccepted && p.protocol != kIpProtoTcp) {
    rx_.chained++;
    drop->push_back(std::move(frame));
    return;
  }
  rx_.frames.count(why);
  if (why != FrameReason::kAccepted) {
    if (frame_verdict(why) == FrameVerdict::kToKernel) rx_.to_kernel_lost++;
    drop->push_back(std::move(frame));
    return;
  }
  if (p.protocol == kIpProtoTcp) {
    const size_t at = frame.offset() + static_cast<size_t>(p.payload.data() - data);
    if (frame.set_view(at, p.payload.size()) != 0) {
      drop->push_back(std::move(frame));
      return;
    }
    rx_.tcp++;
    if (linked) rx_.tcp_linked++;
    cfg_.tcp->enqueue(RxSegment{p.fields, std::move(frame)});
    out->tcp = true;
    return;
  }
  const sa_family_t fam = family_of(p.fields.ip_version);
  const size_t ipl = fam == AF_INET ? 4 : 16;
  UdpAddr src{IpAddr::raw(fam, p.fields.src_ip, ipl), p.fields.src_port};
  const size_t at = frame.offset() + static_cast<size_t>(p.payload.data() - data);
  if (is_multicast(IpAddr::raw(fam, p.fields.dst_ip, ipl))) {
    deliver_group_locked(std::move(frame), at, p.payload.size(),
                         key(fam, p.fields.dst_ip, p.fields.dst_port), src, out);
    return;
  }
  UdpEndpoint* ep = find_locked(p.fields);
  if (!ep) {
    rx_.no_endpoint++;
    drop->push_back(std::move(frame));
    return;
  }
  queue_locked(ep, std::move(frame), at, p.payload.size(), src, out);
}

void UdpStack::deliver_group_locked(Buffer&& frame, size_t at, size_t len, const Key& group,
                                    const UdpAddr& src, Spill* out) {
  auto it = groups_.find(group);
  if (it == groups_.end()) {
    rx_.no_endpoint++;
  } else {
    uint64_t admitted = 0;
    for (const Member& m : it->second.members) {
      if (!m.filter.admits(src.ip)) continue;
      admitted++;
      queue_locked(m.ep, frame.share(), at, len, src, out);  // one frame, a handle each
    }
    if (admitted)
      rx_.group_copies += admitted - 1;
    else
      rx_.source_filtered++;
  }
  out->drop.push_back(std::move(frame));
}

void UdpStack::queue_locked(UdpEndpoint* ep, Buffer&& frame, size_t at, size_t len,
                            const UdpAddr& src, Spill* out) {
  if (!ep->peer_.ip.empty() && !(ep->peer_ == src)) {
    rx_.not_from_peer++;
  } else if (ep->queue_.size() >= cfg_.queue_limit) {
    rx_.queue_full++;
  } else {
    frame.set_view(at, len);  // inside the frame: parse_frame read only there
    ep->queue_.push_back(Datagram{std::move(frame), src});
    ep->arrivals_++;
    ep->waiters_.wake();
    out->watched = out->watched || ep->watched_;
    rx_.delivered++;
    rx_.delivered_bytes += len;
    return;
  }
  out->drop.push_back(std::move(frame));
}

int UdpStack::poll_locked(int budget, Spill* out) {
  int total = 0;
  for (const UdpRing& r : cfg_.rings) {
    Buffer frames[32];
    const int want = budget < 32 ? budget : 32;
    const int n = r.queue->rx(frames, want);
    if (n < 0) return n;
    for (int i = 0; i < n; i++) deliver_locked(std::move(frames[i]), out);
    total += n;
    if (r.queue->fill_level() < cfg_.initial_fill / 4) top_up_locked(r, &out->drop);
  }
  return total;
}

// Frames a program holds (zero-copy receives, held packets, full endpoint
// queues) are out of the fill ring until freed; with all of them held the
// netdev's every socket would starve. The pool's spare frames stand in
// meanwhile, up to half the initial fill, leaving an eighth of it in the
// pool for sends and copies. A freed frame goes back to the fill ring, or
// to the pool when the ring is full, so the spares return by themselves.
void UdpStack::top_up_locked(const UdpRing& r, std::vector<Buffer>* drop) {
  const uint32_t level = r.queue->fill_level();
  const size_t reserve = cfg_.initial_fill / 8, free = r.pool->free_count();
  const size_t spare = free > reserve ? free - reserve : 0;
  const size_t want =
      std::min<size_t>({cfg_.initial_fill / 2 - std::min(level, cfg_.initial_fill / 2), spare, 64});
  Buffer frames[64];
  int n = 0;
  for (; static_cast<size_t>(n) < want; n++) {
    frames[n] = r.pool->get();
    if (!frames[n]) break;
  }
  const int took = n ? r.queue->fill(frames, n) : 0;
  if (took > 0) rx_.fill_topped_up += static_cast<uint64_t>(took);
  for (int i = took > 0 ? took : 0; i < n; i++)
    if (frames[i]) drop->push_back(std::move(frames[i]));
  if (level || took > 0) return;
  rx_.fill_dry++;
  if (!warned_dry_) {
    warned_dry_ = true;
    SS_WARN(
        "UDP offload (ifindex %d): a receive ring has no free frame: the program holds "
        "them (zero-copy receives or held packets not freed, or unread datagrams); "
        "arriving datagrams are dropped until it frees some",
        cfg_.ifindex);
  }
}

int UdpStack::poll_rx(int budget) {
  Spill spill(cfg_);
  std::lock_guard lock(mu_);
  return poll_locked(budget, &spill);
}

UdpStack::Spill::~Spill() {
  try {  // a destructor: nothing may leave it
    if (cfg.tcp && tcp) cfg.tcp->drain();
  } catch (...) {
    SS_WARN(
        "TCP offload: out of memory draining received segments; some were dropped (their senders "
        "send them again)");
  }
  if (watched && cfg.on_watched_arrival) cfg.on_watched_arrival();
}

void UdpStack::loop_back(std::span<const uint8_t> bytes) {
  Spill spill(cfg_);  // after the lock
  Buffer b = cfg_.rings.front().pool->get();
  std::lock_guard lock(mu_);
  if (!b || b.set_size(bytes.size()) != 0) {
    rx_.queue_full++;  // no frame to copy into: lost as on a full queue
    spill.drop.push_back(std::move(b));
    return;
  }
  memcpy(b.data(), bytes.data(), bytes.size());
  rx_.looped++;
  deliver_locked(std::move(b), &spill);
}

UdpRxCounters UdpStack::rx_counters() const {
  std::lock_guard lock(mu_);
  return rx_;
}

}  // namespace ss::net
