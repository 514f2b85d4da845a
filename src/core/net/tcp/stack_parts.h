// What the stack's files share, and its callers never see: a program's
// handle, the way out to the netdev, the lock of a call that sends.
#pragma once
#include <algorithm>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "core/base/kick.h"
#include "core/net/tcp/gso_batch.h"
#include "core/net/tcp/stack.h"

namespace ss::net::tcp {

// Long enough for the frames a reader took off the rings before the flow
// was unsteered; the peer retransmits anything dropped meanwhile to the
// new owner.
inline constexpr uint64_t kMovedQuietUs = 2'000'000;

// The entries of a list of (what, until when) whose time ended by `now`.
template <typename T>
void drop_ended(std::vector<std::pair<T, uint64_t>>* list, uint64_t now) {
  std::erase_if(*list, [now](const auto& e) { return e.second <= now; });
}

inline bool all_zero(const IpAddr& a) {
  for (size_t i = 0; i < a.size(); i++)
    if (a.bytes[i]) return false;
  return true;
}

inline prov::FlowConnection flow_connection(const FourTuple& t) {
  prov::FlowConnection c;
  c.family = t.local.family;
  memcpy(c.local, t.local.bytes, t.local.size());
  memcpy(c.remote, t.remote.bytes, t.remote.size());
  c.local_port = t.local_port;
  c.remote_port = t.remote_port;
  return c;
}

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

}  // namespace ss::net::tcp
