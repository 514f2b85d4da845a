// The bytes a connection has taken from the program and the peer has not
// acknowledged yet: a ring of SO_SNDBUF bytes starting at snd_una. A
// segment's data is copied out of it once, into the frame it goes in (or
// by the packet socket's send, which gathers it from here); retransmissions
// take the same bytes again until they are acknowledged.
#pragma once
#include <sys/uio.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace ss::net::tcp {

class SendBuffer {
 public:
  explicit SendBuffer(size_t capacity);
  // Takes as much of `data` as fits; returns how much.
  size_t append(std::span<const uint8_t> data);
  // Copies len bytes from `offset` (from the oldest byte held) to out;
  // offset + len <= size().
  void copy_out(size_t offset, size_t len, uint8_t* out) const;
  // The same bytes where they are held: one span, or two where the ring
  // wraps (len 0: none). Good until the next consume, grow, resize or
  // release.
  size_t spans(size_t offset, size_t len, iovec out[2]) const;
  // The oldest n bytes (n <= size()) were acknowledged.
  void consume(size_t n);
  // Room for `capacity` bytes in all (more than now), what is held kept;
  // false (nothing changed) when the memory cannot be had.
  bool grow(size_t capacity);
  // SO_SNDBUF set anew: more grows as grow(); less takes nothing more
  // until what is held drains below it (nothing held is dropped).
  bool resize(size_t capacity);
  // Nothing held and nothing more to come (TIME-WAIT): the ring's memory
  // goes; capacity() still says what the buffer was.
  void release();
  size_t size() const { return size_; }
  size_t space() const {
    const size_t room = std::min(max_, cap_);
    return size_ < room ? room - size_ : 0;
  }
  size_t capacity() const { return max_; }

 private:
  std::unique_ptr<uint8_t[]> ring_;  // not zeroed: only bytes appended are read
  size_t cap_;                       // the ring's bytes
  size_t max_;                       // what it may hold: cap_, or less after a resize
  size_t head_ = 0, size_ = 0;
};

}  // namespace ss::net::tcp
