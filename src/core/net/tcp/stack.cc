#include "core/net/tcp/stack.h"

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <optional>

#include "core/base/kick.h"
#include "core/base/log.h"
#include "core/net/ethernet.h"
#include "core/net/frame_build.h"
#include "core/net/ipv4.h"
#include "core/net/ipv6.h"
#include "core/net/steered_flow.h"
#include "core/net/tcp/gso_batch.h"

namespace ss::net::tcp {

using mem::Buffer;

namespace {

// Long enough for the frames a reader took off the rings before the flow
// was unsteered; the peer retransmits anything dropped meanwhile to the
// new owner.
constexpr uint64_t kMovedQuietUs = 2'000'000;

// The entries of a list of (what, until when) whose time ended by `now`.
template <typename T>
void drop_ended(std::vector<std::pair<T, uint64_t>>* list, uint64_t now) {
  std::erase_if(*list, [now](const auto& e) { return e.second <= now; });
}

uint64_t monotonic_us() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
}

uint8_t version_of(const IpAddr& a) { return a.family == AF_INET ? 4 : 6; }

// The data a segment carries at most on a path of mtu, or in a frame of
// frame bytes (0, or too small to hold the headers: no bound from it).
uint16_t segment_bound(uint8_t version, size_t mtu, size_t frame) {
  const size_t ip_hlen = ip_frame_header_len(version) - kEthHeaderLen;
  const size_t head = kEthHeaderLen + ip_hlen + kHeaderLen;
  size_t n = 0xffff;
  if (mtu > ip_hlen + kHeaderLen) n = std::min(n, mtu - ip_hlen - kHeaderLen);
  if (frame > head) n = std::min(n, frame - head);
  return static_cast<uint16_t>(n);
}

bool all_zero(const IpAddr& a) {
  for (size_t i = 0; i < a.size(); i++)
    if (a.bytes[i]) return false;
  return true;
}

}  // namespace

// The program's handle: a listener, or one of the stack's open connections.
class Socket {
 public:
  std::unique_ptr<Listener> listener;
  prov::SteeredFlow flow;      // a listener's
  Connection* conn = nullptr;  // a connection's (Stack::opens_ owns it)
  FourTuple t;
  Kick waiters;
  uint64_t changes = 0;
  bool touched = false;             // in Stack::touched_
  const void* ready_tag = nullptr;  // watch_ready's
  bool ready = false;               // in Stack::ready_
  bool moved = false;               // handed over (hand_over): conn is null
  bool stopped = false;             // a listener off the table and the steering (stop_listening)
  size_t last_queue = 0;            // a listener's accept queue at the last sweep
  // A stopped listener's completed connections, open already, for accept.
  std::deque<Socket*> completed;
};

// The stack's way out: the netdev's FrameTx, or (packets set) a packet
// socket that takes each burst's segments merged (gso_batch.h), sent at
// the end of the call that made them, when the batch is full, or before
// a send queue it gathers from changes (SegmentSink::release_data).
struct Stack::Outlet {
  FrameTx* frames;
  PacketTx* packets;
  StackCounters* ctr;
  std::optional<GsoBatch> batch;  // with packets
  void send_batch() {
    if (!batch || batch->empty()) return;
    const std::span<mmsghdr> pk = batch->packets();
    const size_t took = packets->send(pk);
    ctr->gso_packets += took;
    ctr->gso_segments += batch->segments();
    ctr->tx_errors += pk.size() - took;  // lost as on the wire: sent again
    batch->clear();
  }
};

// One connection's way out: each segment goes behind its path's Ethernet
// and IP headers, in a frame of the netdev's FrameTx or into the stack's
// GsoBatch. The sink is the connection's base, so it is made first and
// goes last.
class PathSink : public SegmentSink {
 public:
  PathSink(Stack::Outlet* out, const FourTuple& t, const TxPath& path) : out_(out) {
    f_.ip_version = version_of(t.remote);
    memcpy(f_.dst_ip, t.remote.bytes, t.remote.size());
    mtu_ = path.mtu;
    repath(path);
  }
  // A new way out: its addresses. The MTU stays the one the connection's
  // MSS was taken from (a smaller one would refuse its segments).
  void repath(const TxPath& path) {
    memcpy(f_.src_mac, path.src_mac, 6);
    memcpy(f_.dst_mac, path.dst_mac, 6);
    memcpy(f_.src_ip, path.src.bytes, path.src.size());
  }
  std::span<uint8_t> header_room(size_t header_len, size_t data_len) override {
    if (header_len > kMaxHeaderLen) return {};
    header_len_ = header_len;
    if (out_->packets) return {header_, header_len};
    frame_ = out_->frames->take();
    const size_t head = ip_frame_header_len(f_.ip_version);
    if (!frame_ || head + header_len + data_len > frame_.capacity()) {
      out_->ctr->no_frame++;
      frame_ = Buffer();
      return {};
    }
    return {static_cast<uint8_t*>(frame_.data()) + head, header_len};
  }
  void send_segment(const SegmentData& data) override {
    if (f_.ip_version == 4) f_.ip_id = ip_id_.next();
    if (out_->packets) {
      int err = out_->batch->add(this, f_, mtu_, {header_, header_len_}, data);
      if (err == -ENOBUFS) {
        out_->send_batch();
        err = out_->batch->add(this, f_, mtu_, {header_, header_len_}, data);
      }
      if (err < 0) out_->ctr->tx_errors++;
      return;
    }
    auto* p = static_cast<uint8_t*>(frame_.data());
    const size_t head = ip_frame_header_len(f_.ip_version);
    const size_t len = header_len_ + data.len;
    data.copy_to(p + head + header_len_);
    fill_checksum(f_.ip_version, f_.src_ip, f_.dst_ip, {p + head, len});
    const ssize_t n = build_ip_frame({p, frame_.capacity()}, f_, kIpProtoTcp, len, mtu_);
    if (n < 0 || frame_.set_size(static_cast<size_t>(n)) != 0 ||
        out_->frames->queue(std::move(frame_)) < 0) {
      out_->ctr->tx_errors++;  // lost as on the wire: the connection sends it again
    } else {
      out_->ctr->frames_out++;
    }
    frame_ = Buffer();
  }
  // The batch gathers data from the send queues: out before they change.
  void release_data() override { out_->send_batch(); }

 private:
  Stack::Outlet* out_;
  size_t mtu_ = 0;
  FrameFields f_;
  Ipv4IdSequence ip_id_;
  Buffer frame_;  // between header_room and send_segment, on the rings
  uint8_t header_[kMaxHeaderLen];
  size_t header_len_ = 0;
};

class Stack::RingConnection final : private PathSink, public Connection {
 public:
  RingConnection(Stack* st, const FourTuple& t, const TxPath& path, const tcp::Config& cfg)
      : PathSink(st->out_.get(), t, path),
        Connection(cfg, t.local_port, t.remote_port, this, &st->timers_),
        st_(st),
        t_(t),
        path_gen_(st->cfg_.resolver->generation()) {}

  // A route changed since the path was taken: asked again. None now (the
  // route removed): nothing leaves, as from Linux's TCP, and the
  // connection's timers send it again, until the route is back.
  std::span<uint8_t> header_room(size_t header_len, size_t data_len) override {
    if (const uint64_t gen = st_->cfg_.resolver->generation(); gen != path_gen_) {
      TxPath path;
      ToKernel why;
      if (st_->resolve(t_, &path, &why) != 0) {
        st_->ctr_.path_lost++;
        return {};
      }
      repath(path);
      path_gen_ = gen;
    }
    return PathSink::header_room(header_len, data_len);
  }

 private:
  Stack* st_;
  FourTuple t_;
  uint64_t path_gen_;
};

// The stack's lock for a call that may send: the segments it queued go to
// the device with one kick once the lock is let go (a burst of segments,
// one system call, made outside the lock); a GsoBatch goes before, under
// the lock, so that a later call's segments cannot pass it.
class Stack::Sending {
 public:
  explicit Sending(Stack* st) : lock_(st->mu_), st_(st) {}
  ~Sending() {
    st_->out_->send_batch();
    lock_.unlock();
    st_->cfg_.tx->flush();
  }
  Sending(const Sending&) = delete;
  Sending& operator=(const Sending&) = delete;

 private:
  std::unique_lock<std::mutex> lock_;
  Stack* st_;
};

// What the listeners ask of the stack (its lock held: they run inside
// its calls).
namespace {
prov::FlowConnection flow_connection(const FourTuple& t) {
  prov::FlowConnection c;
  c.family = t.local.family;
  memcpy(c.local, t.local.bytes, t.local.size());
  memcpy(c.remote, t.remote.bytes, t.remote.size());
  c.local_port = t.local_port;
  c.remote_port = t.remote_port;
  return c;
}
}  // namespace

class Stack::Host final : public ListenerHost {
 public:
  explicit Host(Stack* st) : st_(st) {}
  // A passive connection is ours from its SYN: a group that changes
  // before its accept must not take its handshake elsewhere.
  std::unique_ptr<Connection> make_connection(const FourTuple& t, const tcp::Config& cfg) override {
    std::unique_ptr<Connection> c = st_->make_connection_locked(t, cfg);
    if (c && st_->cfg_.steering->own(flow_connection(t), true) < 0) st_->ctr_.own_failed++;
    return c;
  }
  void forget(const FourTuple& t) override { st_->cfg_.steering->own(flow_connection(t), false); }
  void send_stateless(const FourTuple& t, const Header& h, const Options& o) override {
    st_->send_stateless_locked(t, h, o);
  }
  bool to_kernel_instead(const FourTuple& t, const Header& h) override {
    return st_->to_kernel_instead_locked(t, h);
  }

 private:
  Stack* st_;
};

Stack::Stack(const Config& cfg)
    : cfg_(cfg),
      clock_(cfg.clock ? cfg.clock : monotonic_us),
      host_(std::make_unique<Host>(this)),
      out_(new Outlet{cfg.tx, cfg.packets, &ctr_, {}}) {
  if (cfg.packets) out_->batch.emplace();
}

int Stack::create(const Config& cfg, std::unique_ptr<Stack>* out) {
  if (!out || !cfg.steering || !cfg.tx || !cfg.resolver) return -EINVAL;
  out->reset(new Stack(cfg));
  return 0;
}

Stack::~Stack() {
  std::lock_guard lock(mu_);
  {
    std::lock_guard in(inbox_mu_);
    inbox_.clear();
  }
  for (auto& [c, o] : opens_)
    if (o.kept) cfg_.steering->keep(flow_connection(o.t), false);
  for (auto& [flow, refs] : flow_refs_) cfg_.steering->remove(flow);
  sockets_.clear();  // listeners, with their queued connections
  opens_.clear();
}

int Stack::resolve(const FourTuple& t, TxPath* path, ToKernel* why) {
  Flow f;
  f.dst = t.remote;
  if (!all_zero(t.local)) f.src = t.local;
  f.sport = t.local_port;
  f.dport = t.remote_port;
  return cfg_.resolver->resolve(f, path, why);
}

std::unique_ptr<Connection> Stack::make_connection_locked(const FourTuple& t,
                                                          const tcp::Config& cfg) {
  TxPath path;
  ToKernel why;
  if (resolve(t, &path, &why) != 0) {
    ctr_.path_lost++;
    return nullptr;
  }
  tcp::Config c = cfg;
  // The program's bound (VMA_MSS), the path's MTU, and for what we
  // announce the frames we receive in; a packet socket sends the MTU's.
  const uint16_t path_mss = segment_bound(version_of(t.remote), path.mtu, 0);
  c.mss = std::min({c.mss, path_mss, segment_bound(version_of(t.remote), 0, cfg_.rx_frame_max)});
  if (cfg_.packets) c.tx_mss = std::min(cfg.mss, path_mss);
  if (version_of(t.remote) == 6) c.default_peer_mss = std::min<uint16_t>(c.default_peer_mss, 1220);
  return std::make_unique<RingConnection>(this, t, path, c);
}

void Stack::send_stateless_locked(const FourTuple& t, const Header& h, const Options& o) {
  TxPath path;
  ToKernel why;
  if (resolve(t, &path, &why) != 0) return;
  PathSink sink(out_.get(), t, path);
  Options mine = o;  // a cookie's SYN-ACK: the MSS as make_connection_locked's
  if (mine.has_mss)
    mine.mss = std::min({mine.mss, segment_bound(version_of(t.remote), path.mtu, 0),
                         segment_bound(version_of(t.remote), 0, cfg_.rx_frame_max)});
  uint8_t opts[kMaxOptionsLen];
  const size_t opts_len = write_options(mine, opts);
  const std::span<uint8_t> room = sink.header_room(kHeaderLen + opts_len, 0);
  if (room.empty()) return;
  write_header(room.data(), h, opts_len);
  memcpy(room.data() + kHeaderLen, opts, opts_len);
  sink.send_segment({});
}

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

int Stack::listen(const IpAddr& ip, uint16_t port, const ListenerConfig& cfg, Socket** out) {
  if (ip.family != AF_INET && ip.family != AF_INET6) return -EAFNOSUPPORT;
  std::lock_guard lock(mu_);
  auto s = std::make_unique<Socket>();
  s->listener = std::make_unique<Listener>(cfg, host_.get(), &isn_);
  s->flow = steered_flow(kIpProtoTcp, ip, port);
  if (int err = table_.listen(ip, port, s->listener.get()); err < 0) return err;
  // A kept-only flow's new connections are the kernel's: steering all its
  // frames again would take theirs.
  const int err = std::ranges::count(kept_only_, s->flow) ? -EADDRINUSE : steer_locked(s->flow);
  if (err < 0) {
    table_.unlisten(ip, port);
    return err;
  }
  s->t.local = ip;
  s->t.local_port = port;
  *out = s.get();
  listeners_.push_back(s.get());
  sockets_.emplace(s.get(), std::move(s));
  return 0;
}

int Stack::connect(const FourTuple& t, const tcp::Config& cfg, Socket** out, ToKernel* why) {
  if (t.local.family != t.remote.family || all_zero(t.local)) return -EINVAL;
  const Sending lock(this);
  auto s = std::make_unique<Socket>();
  if (const int r = open_locked(s.get(), t, cfg, why); r != 0) return r;
  *out = s.get();
  sockets_.emplace(s.get(), std::move(s));
  return 0;
}

int Stack::reconnect(Socket* s, const FourTuple* t, const tcp::Config& cfg, ToKernel* why) {
  if (t && (t->local.family != t->remote.family || all_zero(t->local))) return -EINVAL;
  const Sending lock(this);
  if (s->listener || s->moved) return -EINVAL;
  if (s->conn) {
    if (s->conn->state() != State::kClosed) return -EISCONN;
    if (auto it = opens_.find(s->conn); it != opens_.end()) free_locked(it);
    s->conn = nullptr;
    s->changes++;
    mark_ready_locked(s);  // its old events are gone
  }
  return t ? open_locked(s, *t, cfg, why) : 0;
}

int Stack::open_locked(Socket* s, const FourTuple& t, const tcp::Config& cfg, ToKernel* why) {
  if (table_.find(t)) return -EADDRINUSE;
  TxPath path;
  if (const int r = resolve(t, &path, why); r != 0) return r;
  std::unique_ptr<Connection> c = make_connection_locked(t, cfg);
  if (!c) return -EHOSTUNREACH;
  const prov::SteeredFlow flow = steered_flow(kIpProtoTcp, t.local, t.local_port);
  if (int err = steer_locked(flow); err < 0) return err;
  if (int err = table_.add(t, c.get()); err < 0) {
    unsteer_locked(flow);
    return err;
  }
  if (cfg_.steering->own(flow_connection(t), true) < 0) ctr_.own_failed++;
  // On a kept-only flow (a stopped listener's port) it is one more kept.
  bool kept = false;
  if (std::ranges::count(kept_only_, flow)) {
    kept = cfg_.steering->keep(flow_connection(t), true) == 0;
    ctr_.keep_failed += !kept;  // its frames then go to the kernel, which resets them
  }
  Connection* conn = c.get();
  s->conn = conn;
  s->t = t;
  opens_.emplace(conn, Open{t, std::move(c), flow, kept, s, {}});
  const uint64_t now = clock_();
  conn->connect(isn_.isn(t, now), now);
  check_due_locked();
  return 0;
}

int Stack::accept(Socket* l, Socket** out, FourTuple* peer) {
  std::lock_guard lock(mu_);
  if (!l || !l->listener) return -EINVAL;
  Socket* s = nullptr;
  if (!l->completed.empty()) {
    s = l->completed.front();
    l->completed.pop_front();
  } else if (const int err = accept_locked(l, &s); err < 0) {
    return err;
  }
  if (peer) *peer = s->t;
  *out = s;
  return 0;
}

int Stack::accept_locked(Socket* l, Socket** out) {
  FourTuple t;
  std::unique_ptr<Connection> c = l->listener->accept(&t);
  l->last_queue = l->listener->accept_queue();  // a later arrival moves it again: a kick
  if (!c) return -EAGAIN;
  if (int err = table_.add(t, c.get()); err < 0) return err;  // cannot be: the listener fed it
  steer_locked(l->flow);  // held already by the listener: only counted (and owned: make_connection)
  Connection* conn = c.get();
  auto s = std::make_unique<Socket>();
  s->conn = conn;
  s->t = t;
  opens_.emplace(conn, Open{t, std::move(c), l->flow, false, s.get(), {}});
  *out = s.get();
  sockets_.emplace(s.get(), std::move(s));
  return 0;
}

ssize_t Stack::send(Socket* s, std::span<const uint8_t> data, bool keep_error) {
  const Sending lock(this);
  if (!s->conn) return -ENOTCONN;
  const ssize_t n = s->conn->send(data, clock_(), keep_error);
  s->changes++;
  // A watcher reporting edges sees POLLOUT fall, or it would miss its rise.
  if (s->ready_tag && !s->conn->writable()) mark_ready_locked(s);
  check_due_locked();
  return n;
}

ssize_t Stack::recv(Socket* s, std::span<uint8_t> out, bool peek, bool keep_error) {
  const Sending lock(this);
  if (!s->conn) return -ENOTCONN;
  const ssize_t n = s->conn->recv(out, peek, clock_(), keep_error);
  s->changes++;
  check_due_locked();  // a window update's delayed ACK, a persist probe
  return n;
}

ssize_t Stack::recv_lent(Socket* s, size_t most, std::vector<mem::Buffer>* out, bool keep_error) {
  std::lock_guard lock(mu_);
  if (!s->conn) return -ENOTCONN;
  const ssize_t n = s->conn->lend(most, out, clock_(), keep_error);
  s->changes++;
  return n;
}

void Stack::give_back(Socket* s, size_t bytes) {
  const Sending lock(this);
  if (!s->conn) return;
  s->conn->returned(bytes, clock_());
  check_due_locked();  // a persist probe's end
}

mem::Buffer Stack::next_offer(Socket* s) {
  std::lock_guard lock(mu_);
  return s->conn ? s->conn->next_offer() : mem::Buffer();
}

void Stack::settle_offer(Socket* s, ReceiveQueue::Offer o, size_t len) {
  const Sending lock(this);
  if (!s->conn) return;
  s->conn->settle_offer(o, len, clock_());
  touch_locked(s->conn);  // another thread asleep may read what was kept
  wake_touched_locked();
  check_due_locked();
}

void Stack::stop_offering(Socket* s) {
  std::lock_guard lock(mu_);
  if (!s->conn) return;
  s->conn->stop_offering();
  touch_locked(s->conn);  // every byte readable now
  wake_touched_locked();
}

int Stack::shutdown_write(Socket* s) {
  const Sending lock(this);
  if (!s->conn) return -ENOTCONN;
  const int r = s->conn->shutdown_write(clock_());
  s->changes++;
  s->waiters.wake();  // another thread's poll sees POLLOUT go
  mark_ready_locked(s);
  check_due_locked();  // the FIN's retransmission
  return r;
}

void Stack::set_option(Socket* s, Option o, int64_t value) {
  const Sending lock(this);
  if (s->listener) s->listener->set_option(o, value);
  if (s->conn) {
    s->conn->set_option(o, value, clock_());
    if (o == Option::kSndBuf) {  // a larger send buffer: a blocked send goes on
      touch_locked(s->conn);
      wake_touched_locked();
    }
  }
  check_due_locked();  // a keepalive or cork timer
}

FourTuple Stack::tuple(Socket* s) {
  std::lock_guard lock(mu_);
  return s->t;
}

int Stack::join_waiters(Socket* s) {
  std::lock_guard lock(mu_);
  const int err = s->waiters.join();
  return err < 0 ? err : s->waiters.fd();
}

void Stack::leave_waiters(Socket* s, bool woken) {
  std::lock_guard lock(mu_);
  s->waiters.leave(woken);
}

uint64_t Stack::changes(Socket* s) {
  std::lock_guard lock(mu_);
  return s->changes;
}

void Stack::touch_locked(Connection* c) {
  Open* o = open_of(c);
  if (!o) return;
  if (!o->handle) {
    maybe_done_.push_back(c);
    return;
  }
  if (o->handle->touched) return;
  o->handle->touched = true;
  touched_.push_back(o->handle);
}

void Stack::wake_touched_locked() {
  for (Socket* s : touched_) {
    s->touched = false;
    s->changes++;
    s->waiters.wake();
    mark_ready_locked(s);
  }
  touched_.clear();
}

void Stack::mark_ready_locked(Socket* s) {
  if (!s->ready_tag || s->ready) return;
  s->ready = true;
  ready_.push_back(s);
  if (ready_.size() > 1) return;
  any_ready_.store(true, std::memory_order_release);
  if (cfg_.on_first_ready) cfg_.on_first_ready();
}

void Stack::watch_ready(Socket* s, const void* tag) {
  std::lock_guard lock(mu_);
  if (!sockets_.count(s)) return;
  s->ready_tag = tag;
  if (tag) {
    mark_ready_locked(s);
  } else if (s->ready) {
    s->ready = false;
    std::erase(ready_, s);
    any_ready_.store(!ready_.empty(), std::memory_order_release);
  }
}

bool Stack::receive_window_shut(Socket* s) {
  std::lock_guard lock(mu_);
  return s->conn && s->conn->rcv_wnd() < s->conn->mss();
}

bool Stack::any_ready() const { return any_ready_.load(std::memory_order_acquire); }

void Stack::take_ready(std::vector<const void*>* out) {
  std::lock_guard lock(mu_);
  for (Socket* s : ready_) {
    s->ready = false;
    out->push_back(s->ready_tag);
  }
  ready_.clear();
  any_ready_.store(false, std::memory_order_release);
}

void Stack::close(Socket* s, bool abort, std::function<void()> on_freed) {
  const Sending lock(this);
  close_locked(s, abort, std::move(on_freed));
  sweep_locked();
  wake_touched_locked();
  check_due_locked();
}

void Stack::close_locked(Socket* s, bool abort, std::function<void()> on_freed) {
  auto it = sockets_.find(s);
  if (it == sockets_.end()) return;
  if (s->listener) {
    unlisten_locked(s);
    // What it completed and nobody accepted is reset, as Linux's close does.
    for (Socket* c : s->completed) close_locked(c, /*abort=*/true, {});
    s->completed.clear();
  } else if (Open* o = open_of(s->conn)) {
    o->handle = nullptr;
    o->on_freed = std::move(on_freed);
    if (abort)
      s->conn->abort(clock_());
    else
      s->conn->close(clock_());
    maybe_done_.push_back(s->conn);
  }
  if (s->touched) std::erase(touched_, s);
  if (s->ready) {
    std::erase(ready_, s);
    any_ready_.store(!ready_.empty(), std::memory_order_release);
  }
  s->waiters.wake();  // a sleeper in another thread looks again (and finds EBADF)
  sockets_.erase(it);
}

void Stack::stop_listening(Socket* s, bool keep_completed) {
  const Sending lock(this);
  if (!sockets_.count(s) || !s->listener) return;
  if (keep_completed && !s->stopped) {
    // Open now, while the port still brings their segments: the stopped
    // port keeps steering what is open (keep_only_open_locked).
    s->listener->settle();
    for (Socket* c = nullptr; accept_locked(s, &c) == 0;) s->completed.push_back(c);
  }
  unlisten_locked(s);
  s->waiters.wake();
  sweep_locked();
  wake_touched_locked();
}

void Stack::unlisten_locked(Socket* s) {
  if (s->stopped) return;
  s->stopped = true;
  s->listener->abort_all(clock_());
  table_.unlisten(s->t.local, s->t.local_port);
  unsteer_locked(s->flow);
  if (flow_refs_.count(s->flow)) {
    keep_only_open_locked(s->flow);  // held by what it gave out
  } else {
    const uint64_t now = clock_();
    drop_ended(&left_, now);
    left_.emplace_back(s->flow, now + kMovedQuietUs);
  }
  std::erase(listeners_, s);
  if (s->touched) std::erase(touched_, s);
  s->touched = false;
}

short Stack::events(Socket* s) {
  std::lock_guard lock(mu_);
  if (s->listener) return s->listener->accept_queue() || !s->completed.empty() ? POLLIN : 0;
  if (s->moved) return POLLIN | POLLOUT;
  if (!s->conn) return POLLHUP | POLLERR;  // a reconnect that found no memory
  const Connection& c = *s->conn;
  short ev = 0;
  if (c.readable()) ev |= POLLIN;
  if (c.writable()) ev |= POLLOUT;
  if (c.error()) ev |= POLLERR;
  const State st = c.state();
  // The end of stream shows once a receive callback saw every byte.
  const bool fin_in = c.offered_all() && (st == State::kCloseWait || st == State::kLastAck ||
                                          st == State::kClosing || st == State::kTimeWait);
  if (fin_in) ev |= POLLIN | POLLRDHUP;
  if (st == State::kClosed || (fin_in && c.write_shut())) ev |= POLLHUP;
  return ev;
}

int Stack::take_error(Socket* s) {
  std::lock_guard lock(mu_);
  return s->conn ? s->conn->take_error() : 0;
}

State Stack::state(Socket* s) {
  std::lock_guard lock(mu_);
  return s->conn ? s->conn->state() : State::kClosed;
}

Counters Stack::connection_counters(Socket* s, Info* info) {
  std::lock_guard lock(mu_);
  if (info) *info = s->conn ? s->conn->info() : Info{};
  return s->conn ? s->conn->counters() : Counters{};
}

ListenerCounters Stack::listener_counters(Socket* s) {
  std::lock_guard lock(mu_);
  return s->listener ? s->listener->counters() : ListenerCounters{};
}

Stack::Open* Stack::open_of(Connection* c) {
  auto it = opens_.find(c);
  return it == opens_.end() ? nullptr : &it->second;
}

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

int Stack::hand_over(Socket* s, const std::function<int(const Handover&)>& install) {
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
  Handover h;
  if (const int r = s->conn->handover(&h, now); r < 0) return r;
  if (stays) {
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

void Stack::sweep_locked() {
  for (Socket* s : listeners_) {
    s->listener->settle();
    const size_t queued = s->listener->accept_queue();
    if (queued != s->last_queue && !s->touched) {  // a connection to accept, or one fewer
      s->touched = true;
      touched_.push_back(s);
    }
    s->last_queue = queued;
  }
  for (Connection* c : maybe_done_) {
    auto it = opens_.find(c);  // gone already when listed twice
    if (it != opens_.end() && !it->second.handle && c->done()) free_locked(it);
  }
  maybe_done_.clear();
}

void Stack::free_locked(std::map<Connection*, Open>::iterator it) {
  Open& o = it->second;
  table_.remove(o.t);
  cfg_.steering->own(flow_connection(o.t), false);
  unsteer_open_locked(o);
  std::function<void()> freed = std::move(o.on_freed);
  out_->send_batch();  // it may gather from the connection's send queue
  opens_.erase(it);
  if (freed) freed();
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

void Stack::wake(Socket* s) {
  std::lock_guard lock(mu_);
  s->changes++;
  s->waiters.wake();
  mark_ready_locked(s);
}

StackCounters Stack::counters() const {
  std::lock_guard lock(mu_);
  return ctr_;
}

namespace {
bool awaits_peer(State s) {
  return s == State::kSynReceived || s == State::kFinWait1 || s == State::kFinWait2 ||
         s == State::kClosing || s == State::kLastAck;
}
}  // namespace

void Stack::close_at_exit() {
  const Sending lock(this);
  const uint64_t now = clock_();
  // A stopped listener's unaccepted connections reset, as at its close.
  for (auto& [s, sock] : sockets_)
    for (Socket* c : s->completed) c->conn->abort(now);
  for (auto& [s, sock] : sockets_)
    if (s->conn) {
      s->conn->close(now);
      touch_locked(s->conn);
    }
  exit_waits_.clear();
  for (auto& [c, o] : opens_)
    if (awaits_peer(c->state())) exit_waits_.emplace_back(c, c->snd_una());
  wake_touched_locked();
  check_due_locked();  // the FINs' retransmissions
}

Stack::ExitWait Stack::awaiting_peer() {
  std::lock_guard lock(mu_);
  ExitWait w;
  w.moved = std::erase_if(exit_waits_, [this](const auto& cw) {
              return !opens_.contains(cw.first) || !awaits_peer(cw.first->state());
            }) > 0;
  for (auto& [c, una] : exit_waits_) {
    w.moved |= c->snd_una() != una;
    una = c->snd_una();
    w.longest_rto_us = std::max(w.longest_rto_us, c->rtt().rto_us());
  }
  w.closing = exit_waits_.size();
  return w;
}

void Stack::reset_awaiting_peer() {
  const Sending lock(this);
  const uint64_t now = clock_();
  for (auto& [c, una] : exit_waits_)
    if (opens_.contains(c) && awaits_peer(c->state())) {
      c->give_up(now);
      maybe_done_.push_back(c);
    }
  exit_waits_.clear();
  sweep_locked();
}

size_t Stack::connections() const {
  std::lock_guard lock(mu_);
  return table_.connections();
}

}  // namespace ss::net::tcp
