// Threads inside a region, counted: the count goes up for the object's
// life (a blocked send or receive, an accept), however the region is left.
#pragma once
#include <atomic>

namespace ss {

class ScopedCount {
 public:
  explicit ScopedCount(std::atomic<int>& n) : n_(n) { n_.fetch_add(1); }
  ~ScopedCount() { n_.fetch_sub(1); }
  ScopedCount(const ScopedCount&) = delete;
  ScopedCount& operator=(const ScopedCount&) = delete;

 private:
  std::atomic<int>& n_;
};

}  // namespace ss
