// SYN cookies (RFC 4987 §3.6): under a SYN flood the listener answers
// without keeping state, the state folded into the SYN-ACK's sequence
// number and checked when the handshake's ACK echoes it. The cookie's top
// 8 bits are a 64-second time slot; the low 24 are a keyed hash of the
// 4-tuple, the peer's ISN and the slot, plus the index of the peer's MSS
// in a short table, and whether our SYN-ACK had timestamps. A cookie is
// good for two slots. With timestamps the peer's window scale and SACK
// permission ride in our timestamp's low 6 bits (the echo brings them
// back); without, the SYN-ACK offers neither, as Linux's. The key is the
// process's, one for all its listeners (as Linux's one secret) and a fork
// child's: a port's group may hand a handshake's ACK to another process
// of the family than the one that sent the SYN-ACK (a worker joining or
// leaving), and that one's listener checks the cookie.
#pragma once
#include <cstdint>

#include "core/net/tcp/isn.h"
#include "core/net/tcp/options.h"

namespace ss::net::tcp {

// What a cookie carries back.
struct CookieState {
  uint16_t mss = 0;
  bool has_wscale = false, sack = false, ts = false;
  uint8_t wscale = 0;
};

class SynCookies {
 public:
  SynCookies();  // makes the process's key, if none yet: before any fork
  // The ISN for our SYN-ACK to a SYN (peer_isn, its options) at now_us;
  // *ts_val (when the SYN had timestamps) is our timestamp carrying the
  // options, no later than `ts_now` so the peer's PAWS never sees time go
  // back on the next segment.
  uint32_t make(const FourTuple& t, uint32_t peer_isn, const Options& syn, uint64_t now_us,
                uint32_t ts_now, uint32_t* ts_val) const;
  // Checks the ACK completing such a handshake (its seq - 1 is the
  // peer's ISN, its ack - 1 the cookie; opts its options, for the echoed
  // timestamp). False for a forged or expired cookie.
  bool check(const FourTuple& t, uint32_t seq, uint32_t ack, const Options& opts, uint64_t now_us,
             CookieState* out) const;

 private:
  uint32_t hash24(const FourTuple& t, uint32_t peer_isn, uint32_t slot) const;
  const SecretHash& hash_;
};

}  // namespace ss::net::tcp
