// A first-in first-out queue on one power-of-two ring that doubles when
// full: push and pop are an index and a mask, with no allocation per
// element once it has grown to its working size (std::deque allocates
// and frees a block every few hundred elements and costs ~20
// instructions a call). For the per-message queues of the data path.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace ss {

template <typename T>
class Fifo {
 public:
  bool empty() const { return head_ == tail_; }
  size_t size() const { return tail_ - head_; }
  T& front() { return buf_[head_ & mask_]; }
  const T& front() const { return buf_[head_ & mask_]; }
  // The i-th element from the front (i < size()).
  const T& operator[](size_t i) const { return buf_[(head_ + i) & mask_]; }
  void pop_front() { head_++; }
  void push_back(const T& v) {
    if (size() == buf_.size()) grow();
    buf_[tail_++ & mask_] = v;
  }
  void clear() { head_ = tail_ = 0; }
  // Room for n elements without growing.
  void reserve(size_t n) {
    while (buf_.size() < n) grow();
  }

 private:
  void grow() {
    std::vector<T> bigger(buf_.empty() ? 16 : 2 * buf_.size());
    const size_t n = size();
    for (size_t i = 0; i < n; i++) bigger[i] = std::move(buf_[(head_ + i) & mask_]);
    buf_.swap(bigger);
    mask_ = buf_.size() - 1;
    head_ = 0;
    tail_ = n;
  }

  std::vector<T> buf_;
  size_t mask_ = 0;
  size_t head_ = 0, tail_ = 0;  // ever-increasing; the slot is the index & mask_
};

}  // namespace ss
