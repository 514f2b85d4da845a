#include "core/net/tcp/send_buffer.h"

#include <algorithm>
#include <cstring>

namespace ss::net::tcp {

size_t SendBuffer::append(std::span<const uint8_t> data) {
  const size_t n = std::min(data.size(), space());
  const size_t tail = (head_ + size_) % ring_.size();
  const size_t first = std::min(n, ring_.size() - tail);
  if (first) std::memcpy(ring_.data() + tail, data.data(), first);
  if (n > first) std::memcpy(ring_.data(), data.data() + first, n - first);
  size_ += n;
  return n;
}

void SendBuffer::copy_out(size_t offset, size_t len, uint8_t* out) const {
  const size_t at = (head_ + offset) % ring_.size();
  const size_t first = std::min(len, ring_.size() - at);
  if (first) std::memcpy(out, ring_.data() + at, first);
  if (len > first) std::memcpy(out + first, ring_.data(), len - first);
}

void SendBuffer::consume(size_t n) {
  n = std::min(n, size_);
  head_ = (head_ + n) % ring_.size();
  size_ -= n;
  if (size_ == 0) head_ = 0;
}

void SendBuffer::grow(size_t capacity) {
  if (capacity <= ring_.size()) return;
  std::vector<uint8_t> ring(capacity);
  copy_out(0, size_, ring.data());
  ring_.swap(ring);
  head_ = 0;
}

}  // namespace ss::net::tcp
