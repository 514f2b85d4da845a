// TCP sequence numbers (RFC 9293 §3.4): 32-bit counters compared modulo
// 2^32, so "a before b" means b is ahead of a by less than 2^31. The same
// arithmetic serves timestamps (RFC 7323 §5.2: PAWS compares TSvals so).
#pragma once
#include <cstdint>

namespace ss::net::tcp {

inline bool seq_lt(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) < 0; }
inline bool seq_le(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) <= 0; }
inline bool seq_gt(uint32_t a, uint32_t b) { return seq_lt(b, a); }
inline bool seq_ge(uint32_t a, uint32_t b) { return seq_le(b, a); }
// lo <= x < lo + len: x inside a window of len bytes starting at lo
// (len 0: nothing is inside).
inline bool seq_in(uint32_t x, uint32_t lo, uint32_t len) { return x - lo < len; }
inline uint32_t seq_max(uint32_t a, uint32_t b) { return seq_lt(a, b) ? b : a; }
inline uint32_t seq_min(uint32_t a, uint32_t b) { return seq_lt(a, b) ? a : b; }

}  // namespace ss::net::tcp
