// The Internet checksum (RFC 1071): the one's complement sum of 16-bit
// big-endian words, computed incrementally so a header and a payload in
// separate spans (of any lengths, odd ones too) sum as if contiguous.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

namespace ss::net {

class Checksum {
 public:
  // Adds n bytes that follow those added so far.
  void add(const void* p, size_t n);
  void add(std::span<const uint8_t> s) { add(s.data(), s.size()); }
  // The folded sum as a number (0xffff over data that carries its correct
  // checksum: the receiver's test).
  uint16_t sum() const;
  // The value to store in a checksum field (big-endian) that was zero
  // while summing.
  uint16_t result() const { return static_cast<uint16_t>(~sum()); }

 private:
  uint64_t acc_ = 0;  // folded 16-bit partial sums, in memory byte order
  bool odd_ = false;  // an odd number of bytes added so far
};

}  // namespace ss::net
