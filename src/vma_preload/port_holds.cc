#include "vma_preload/port_holds.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/select.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/base/own_fd.h"
#include "interpose/real.h"

namespace ss::vma::preload {

namespace {

using interpose::real;

// One bit per descriptor number up to the hard limit at first use
// (capped: 128 KiB at most): set while the number is a hold. Read without
// a lock in a fork child; never freed.
struct Bits {
  std::atomic<uint64_t>* words = nullptr;
  size_t count = 0;  // words
};

const Bits& bits() {
  static const Bits b = [] {
    rlimit rl{};
    size_t n = 1 << 20;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY)
      n = std::min<size_t>(n, rl.rlim_max);
    Bits out;
    out.count = (n + 63) / 64;
    out.words = new std::atomic<uint64_t>[out.count]();
    return out;
  }();
  return b;
}

std::atomic<const Bits*> g_bits{nullptr};  // set once bits() exists

void mark(int fd, bool on) {
  const Bits& b = bits();
  g_bits.store(&b, std::memory_order_release);
  const size_t w = static_cast<size_t>(fd) / 64;
  if (w >= b.count) return;  // past the limit at first use: not tracked
  const uint64_t bit = uint64_t{1} << (fd % 64);
  if (on)
    b.words[w].fetch_or(bit, std::memory_order_relaxed);
  else
    b.words[w].fetch_and(~bit, std::memory_order_relaxed);
}

}  // namespace

int hold_port(int fd) {
  int hold = real().fcntl(fd, F_DUPFD_CLOEXEC, FD_SETSIZE);
  if (hold < 0) hold = real().fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (hold >= 0) mark(hold, true);
  return hold;
}

void release_port(int hold) {
  if (hold < 0) return;
  mark(hold, false);  // first: the number is free once closed
  real().close(hold);
}

void close_port_holds_in_fork_child() {
  const Bits* b = g_bits.load(std::memory_order_acquire);
  if (!b) return;
  for (size_t w = 0; w < b->count; w++) {
    uint64_t v = b->words[w].exchange(0, std::memory_order_relaxed);
    for (; v; v &= v - 1) own_close(static_cast<int>(w * 64 + __builtin_ctzll(v)));
  }
}

}  // namespace ss::vma::preload
