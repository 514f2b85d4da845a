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
// (native-endian loads). Since 2^16 - 1 divides 2^32 - 1 and 2^64 - 1, the
// folded sum of wider words equals the sum of 16-bit words: the bulk goes
// as 32-bit words into four 64-bit sums (independent additions, no carry
// to chase; flushed long before one could overflow). A last odd byte is a
// word with a zero second byte.
uint16_t memory_order_sum(const uint8_t* p, size_t n) {
  uint64_t s = 0, w[1];
  while (n >= 16) {
    uint64_t a = 0, b = 0, c = 0, d = 0;
    for (size_t k = 0; k < (size_t{1} << 24) && n >= 16; k++, p += 16, n -= 16) {
      uint32_t v[4];
      memcpy(v, p, sizeof v);
      a += v[0];
      b += v[1];
      c += v[2];
      d += v[3];
    }
    add_carry(s, a);
    add_carry(s, b);
    add_carry(s, c);
    add_carry(s, d);
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
