// Two Connections on a fake wire under a virtual clock, with a fault
// injector between them: each segment is dropped, duplicated or delayed
// (and so reordered) by a seeded random draw or by a rule on its index.
// The stack's real parts are used end to end (segments are written by
// one connection, parsed and handed to the other as the stack would);
// only the rings and the clock are stand-ins. Side 0 connects; side 1
// listens (the first SYN it gets opens it passively).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <random>
#include <vector>

#include "core/mem/pool.h"
#include "core/net/tcp/connection.h"
#include "core/net/tcp/timer_queue.h"

namespace ss::net::tcp::wire {

struct Faults {
  double drop = 0, duplicate = 0, reorder = 0;  // probabilities per segment
  uint64_t latency_us = 1000;                   // one way
  uint64_t reorder_delay_us = 3000;             // added to a reordered segment
  uint32_t seed = 1;
  // Drops the n-th segment (0-based) sent by side 0 or 1 when it returns true.
  std::function<bool(int side, uint64_t n)> drop_rule;
};

class Wire {
 public:
  Wire(const Config& a, const Config& b, const Faults& f);
  ~Wire();
  Connection& end(int side);
  uint64_t now() const { return now_; }
  // Runs events (deliveries, timers) up to `until`, calling `app` after
  // each (the programs' turn); stops early when app returns false.
  void run(uint64_t until, const std::function<bool()>& app);
  uint64_t dropped() const { return dropped_; }
  // Side `side`'s connection handed over (Connection::handover), the
  // state through encode_handover and decode_handover as between
  // processes, and carried on by a new connection of config c
  // (Connection::restore) in its place; the old one goes without a
  // segment. restore's answer, or the handover's or decoding's -errno.
  int hand_over(int side, const Config& c = {});

 private:
  struct End;
  struct InFlight {
    uint64_t at;
    uint64_t order;
    int to;
    std::vector<uint8_t> bytes;
    bool operator>(const InFlight& o) const { return at != o.at ? at > o.at : order > o.order; }
  };
  void sent(int from, std::vector<uint8_t> bytes);
  void deliver(const InFlight& s);

  Faults faults_;
  std::mt19937 rng_;
  uint64_t now_ = 0, order_ = 0, dropped_ = 0;
  std::unique_ptr<mem::Pool> pool_;
  TimerQueue timers_;
  std::priority_queue<InFlight, std::vector<InFlight>, std::greater<>> flight_;
  std::unique_ptr<End> ends_[2];
};

}  // namespace ss::net::tcp::wire
