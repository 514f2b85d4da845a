// Restores errno on scope exit: library code called from inside a socket
// call must not disturb the errno that call reports.
#pragma once
#include <cerrno>

namespace ss {

class ErrnoGuard {
 public:
  ErrnoGuard() : saved_(errno) {}
  ~ErrnoGuard() { errno = saved_; }
  ErrnoGuard(const ErrnoGuard&) = delete;
  ErrnoGuard& operator=(const ErrnoGuard&) = delete;

 private:
  int saved_;
};

}  // namespace ss
