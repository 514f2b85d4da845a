// The process's exit: every connection closed, and the wait for peers
// that still owe an answer, bounded by their RTOs.
#include <algorithm>

#include "core/net/tcp/stack_parts.h"

namespace ss::net::tcp {

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

}  // namespace ss::net::tcp
