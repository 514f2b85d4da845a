// Initial sequence numbers (RFC 6528): a 4 µs clock plus a keyed hash of
// the connection's addresses and ports, so that a connection's numbers
// follow each other across incarnations (old duplicates stay out of the
// new one's window) and an off-path attacker cannot predict them. The key
// is drawn at random once per stack; the hash is SipHash-2-4
// (libsodium's crypto_shorthash), which the lookup tables key as well.
#pragma once
#include <cstdint>

#include "core/net/netlink_addr.h"

namespace ss::net::tcp {

// A connection's addresses and ports (host order), as its segments carry
// them seen from our side.
struct FourTuple {
  IpAddr local, remote;
  uint16_t local_port = 0, remote_port = 0;
  friend bool operator==(const FourTuple&, const FourTuple&) = default;
};

class SecretHash {
 public:
  SecretHash();  // a random key
  // The keyed 64-bit hash of the tuple (and `extra`, a value the caller
  // mixes in).
  uint64_t operator()(const FourTuple& t, uint64_t extra = 0) const;

 private:
  unsigned char key_[16];
};

class IsnGenerator {
 public:
  // RFC 6528 §3: ISN = M + F(tuple, key), M ticking every 4 µs.
  uint32_t isn(const FourTuple& t, uint64_t now_us) const {
    return static_cast<uint32_t>(now_us / 4) + static_cast<uint32_t>(hash_(t));
  }

 private:
  SecretHash hash_;
};

}  // namespace ss::net::tcp
