#include "core/net/checksum.h"

#include <bit>
#include <cstring>

namespace ss::net {
namespace {

inline void add_carry(uint64_t& s, uint64_t v) {
  s += v;
  s += s < v;  // end-around carry: one's complement addition
}

inline uint16_t fold(uint64_t s) {
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return static_cast<uint16_t>(s);
}

// The one's complement sum of the bytes taken as words in memory order
// (native-endian loads): 64 bits at a time, since 2^16 - 1 divides 2^64 - 1
// the folded result equals the sum of 16-bit words. A last odd byte is a
// word with a zero second byte.
uint16_t memory_order_sum(const uint8_t* p, size_t n) {
  uint64_t s = 0, w[4];
  for (; n >= sizeof w; p += sizeof w, n -= sizeof w) {
    memcpy(w, p, sizeof w);
    add_carry(s, w[0]);
    add_carry(s, w[1]);
    add_carry(s, w[2]);
    add_carry(s, w[3]);
  }
  for (; n >= 8; p += 8, n -= 8) {
    memcpy(w, p, 8);
    add_carry(s, w[0]);
  }
  if (n >= 4) {
    uint32_t v;
    memcpy(&v, p, 4);
    add_carry(s, v);
    p += 4, n -= 4;
  }
  if (n >= 2) {
    uint16_t v;
    memcpy(&v, p, 2);
    add_carry(s, v);
    p += 2, n -= 2;
  }
  if (n) {
    const uint8_t last[2] = {p[0], 0};
    uint16_t v;
    memcpy(&v, last, 2);
    add_carry(s, v);
  }
  return fold(s);
}

}  // namespace

void Checksum::add(const void* p, size_t n) {
  uint16_t s = memory_order_sum(static_cast<const uint8_t*>(p), n);
  // After an odd count these bytes sit one place over in their words:
  // swapping the bytes of their sum moves them there (RFC 1071 §2(B)).
  if (odd_) s = __builtin_bswap16(s);
  acc_ += s;  // 2^48 additions before it could overflow
  odd_ ^= (n & 1) != 0;
}

uint16_t Checksum::sum() const {
  const uint16_t s = fold(acc_);
  return std::endian::native == std::endian::little ? __builtin_bswap16(s) : s;
}

}  // namespace ss::net
