// The stack's life and its callers' calls on their handles: listen,
// connect, accept, send, receive, options, close.
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/net/steered_flow.h"
#include "core/net/tcp/stack_parts.h"

namespace ss::net::tcp {

using mem::Buffer;

namespace {

uint64_t monotonic_us() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
}

}  // namespace

// What the listeners ask of the stack (its lock held: they run inside
// its calls).
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

int Stack::new_connection_locked(const FourTuple& t, const tcp::Config& cfg, ToKernel* why,
                                 std::unique_ptr<Connection>* out) {
  if (table_.find(t)) return -EADDRINUSE;
  TxPath path;
  if (const int r = resolve(t, &path, why); r != 0) return r;
  *out = make_connection_locked(t, cfg);
  return *out ? 0 : -EHOSTUNREACH;
}

int Stack::enter_locked(Socket* s, const FourTuple& t, std::unique_ptr<Connection> c) {
  prov::SteeredFlow flow = steered_flow(kIpProtoTcp, t.local, t.local_port);
  int err = steer_locked(flow);
  if (err == -EOPNOTSUPP) {  // a joined stack steers only what the owner does: its port's, here
    memset(flow.ip, 0, sizeof flow.ip);
    err = steer_locked(flow);
  }
  if (err < 0) return err;
  if (err = table_.add(t, c.get()); err < 0) {
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
  return 0;
}

int Stack::open_locked(Socket* s, const FourTuple& t, const tcp::Config& cfg, ToKernel* why) {
  std::unique_ptr<Connection> c;
  if (const int r = new_connection_locked(t, cfg, why, &c); r != 0) return r;
  Connection* conn = c.get();
  if (const int r = enter_locked(s, t, std::move(c)); r < 0) return r;
  const uint64_t now = clock_();
  conn->connect(isn_.isn(t, now), now);
  check_due_locked();
  return 0;
}

int Stack::adopt(const FourTuple& t, const Handover& h, const tcp::Config& cfg, Socket** out,
                 ToKernel* why) {
  if (t.local.family != t.remote.family || all_zero(t.local)) return -EINVAL;
  const Sending lock(this);
  std::vector<Buffer> unread;
  for (size_t off = 0; off < h.unread.size();) {
    Buffer b = cfg_.tx->take();
    const size_t n = std::min(b.capacity(), h.unread.size() - off);
    if (!b || n == 0 || b.set_size(n) != 0) return -ENOBUFS;
    memcpy(b.data(), h.unread.data() + off, n);
    unread.push_back(std::move(b));
    off += n;
  }
  std::unique_ptr<Connection> c;
  if (const int r = new_connection_locked(t, cfg, why, &c); r != 0) return r;
  Connection* conn = c.get();
  auto s = std::make_unique<Socket>();
  if (const int r = enter_locked(s.get(), t, std::move(c)); r < 0) return r;
  std::erase_if(moved_, [&](const auto& m) { return m.first == t; });  // back where it left
  // Its segments may go out now: the tuple and its steering are here.
  if (const int r = conn->restore(h, std::move(unread), clock_()); r < 0) {
    opens_.at(conn).handle = nullptr;
    free_locked(opens_.find(conn));
    return r;
  }
  *out = s.get();
  sockets_.emplace(s.get(), std::move(s));
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

Stack::Open* Stack::open_of(Connection* c) {
  auto it = opens_.find(c);
  return it == opens_.end() ? nullptr : &it->second;
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

StackCounters Stack::counters() const {
  std::lock_guard lock(mu_);
  return ctr_;
}

size_t Stack::connections() const {
  std::lock_guard lock(mu_);
  return table_.connections();
}

}  // namespace ss::net::tcp
