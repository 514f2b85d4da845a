#include "core/base/fd_spare.h"

#include <poll.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "core/base/sandbox.h"

namespace ss {

namespace {
// Descriptors of [first, first + count) not open, by poll's POLLNVAL (no
// events asked, no wait), or -1 when the kernel refused. The raw system
// call: a preload's poll must not see our probe.
int closed_in(int first, int count) {
  constexpr int kBatch = 256;
  pollfd p[kBatch];
  for (int i = 0; i < count; i++) p[i] = {first + i, 0, 0};
  timespec zero{0, 0};
  if (syscall(SYS_ppoll, p, static_cast<nfds_t>(count), &zero, nullptr, 0) < 0) return -1;
  int closed = 0;
  for (int i = 0; i < count; i++) closed += (p[i].revents & POLLNVAL) != 0;
  return closed;
}
}  // namespace

int descriptor_shortage(int n) {
  if (sandbox::locked_in()) return 0;  // getrlimit may be what the filter kills for
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return 0;  // no limit to compare: let the step try
  const long limit = static_cast<long>(std::min<rlim_t>(lim.rlim_cur, 1L << 30));
  // From the top down: descriptors are made lowest first, so far from the
  // limit the first batch finds the free numbers, and near it the whole
  // table is looked at (what a process that full holds anyway).
  constexpr int kBatch = 256;
  int free_found = 0;
  for (long top = limit; top > 0 && free_found < n;) {
    const int count = static_cast<int>(std::min<long>(kBatch, top));
    top -= count;
    const int closed = closed_in(static_cast<int>(top), count);
    if (closed < 0) return 0;  // unknown: let the step try
    free_found += closed;
  }
  return free_found >= n ? 0 : -EMFILE;
}

}  // namespace ss
