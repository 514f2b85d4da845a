#include "core/net/tcp/send_buffer.h"

#include <algorithm>
#include <cstring>
#include <new>

namespace ss::net::tcp {

SendBuffer::SendBuffer(size_t capacity)
    : ring_(new uint8_t[capacity ? capacity : 1]), cap_(capacity ? capacity : 1), max_(cap_) {}

size_t SendBuffer::append(std::span<const uint8_t> data) {
  const size_t n = std::min(data.size(), space());
  const size_t tail = (head_ + size_) % cap_;
  const size_t first = std::min(n, cap_ - tail);
  if (first) std::memcpy(ring_.get() + tail, data.data(), first);
  if (n > first) std::memcpy(ring_.get(), data.data() + first, n - first);
  size_ += n;
  return n;
}

void SendBuffer::copy_out(size_t offset, size_t len, uint8_t* out) const {
  iovec piece[2];
  for (size_t i = 0, n = spans(offset, len, piece); i < n; i++) {
    std::memcpy(out, piece[i].iov_base, piece[i].iov_len);
    out += piece[i].iov_len;
  }
}

size_t SendBuffer::spans(size_t offset, size_t len, iovec out[2]) const {
  if (!len) return 0;
  const size_t at = (head_ + offset) % cap_;
  const size_t first = std::min(len, cap_ - at);
  out[0] = {ring_.get() + at, first};
  if (len == first) return 1;
  out[1] = {ring_.get(), len - first};
  return 2;
}

void SendBuffer::consume(size_t n) {
  n = std::min(n, size_);
  head_ = (head_ + n) % cap_;
  size_ -= n;
  if (size_ == 0) head_ = 0;
}

bool SendBuffer::grow(size_t capacity) {
  if (capacity <= cap_) {
    max_ = std::max(max_, capacity);
    return true;
  }
  std::unique_ptr<uint8_t[]> ring(new (std::nothrow) uint8_t[capacity]);
  if (!ring) return false;
  copy_out(0, size_, ring.get());
  ring_ = std::move(ring);
  cap_ = max_ = capacity;
  head_ = 0;
  return true;
}

void SendBuffer::release() {
  if (size_) return;
  ring_.reset(new uint8_t[1]);
  cap_ = 1;
  head_ = 0;
}

bool SendBuffer::resize(size_t capacity) {
  if (capacity >= max_) return grow(capacity);
  max_ = std::max<size_t>(capacity, 1);
  return true;
}

}  // namespace ss::net::tcp
