// What a program learns of its sockets: events, errors, counters, and
// the wake-ups of its sleepers and of a watcher of ready sockets.
#include <poll.h>

#include <algorithm>

#include "core/net/tcp/stack_parts.h"

namespace ss::net::tcp {

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

void Stack::wake(Socket* s) {
  std::lock_guard lock(mu_);
  s->changes++;
  s->waiters.wake();
  mark_ready_locked(s);
}

}  // namespace ss::net::tcp
