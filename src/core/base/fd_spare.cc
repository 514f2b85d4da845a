#include "core/base/fd_spare.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <vector>

#include "core/base/own_fd.h"
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

// The reserve's numbers (duplicates of one memfd of its own, told apart
// by its device and inode from a number the program closed and reused) and how many
// it gave back for the last step. A try_lock: a fork child of a thread
// that held it (or a second thread) sees no reserve rather than waiting.
struct Reserve {
  std::mutex mu;
  std::vector<int> fds;
  int seed = -1;  // reserve_prepare's, never given back
  dev_t dev = 0;
  ino_t ino = 0;
  int given = 0;
};
Reserve& reserve() {
  static Reserve* r = new Reserve;  // outlives static destructors
  return *r;
}

// Free numbers below the limit, counted up to `n` (from the top down:
// descriptors are made lowest first, so far from the limit the first
// batch finds them, and near it the whole table is looked at, what a
// process that full holds anyway); -1 when unknown.
int free_numbers(int n) {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return -1;
  const long limit = static_cast<long>(std::min<rlim_t>(lim.rlim_cur, 1L << 30));
  constexpr int kBatch = 256, kFirstBatch = 16;
  int free_found = 0;
  for (long top = limit; top > 0 && free_found < n;) {
    // A first small batch: the numbers near the limit are free in most
    // processes, and release_number asks at each close of a step.
    const long batch = top == limit ? kFirstBatch : kBatch;
    const int count = static_cast<int>(std::min<long>(batch, top));
    top -= count;
    const int closed = closed_in(static_cast<int>(top), count);
    if (closed < 0) return -1;
    free_found += closed;
  }
  return free_found;
}

// Whether `fd` is still the reserve's (a number the program closed may
// be one of its own files now).
bool ours(const Reserve& r, int fd) {
  struct stat st {};
  return ::syscall(SYS_fstat, fd, &st) == 0 && st.st_ino == r.ino && st.st_dev == r.dev;
}

// A memfd of the reserve's, its identity noted; -1 when none can be made.
int make_file(Reserve& r) {
  const int fd = static_cast<int>(syscall(SYS_memfd_create, "slipstream-reserve", MFD_CLOEXEC));
  struct stat st {};
  if (fd < 0) return -1;
  if (::syscall(SYS_fstat, fd, &st) != 0) {
    own_close(fd);
    return -1;
  }
  r.dev = st.st_dev;
  r.ino = st.st_ino;
  return fd;
}

// A number of the reserve's file to duplicate, or -1 (none, or the
// program closed the seed: it is made again at the next listener).
int source(Reserve& r) {
  std::erase_if(r.fds, [&r](int fd) { return !ours(r, fd); });
  if (r.seed >= 0 && !ours(r, r.seed)) r.seed = -1;
  return r.seed >= 0 ? r.seed : r.fds.empty() ? -1 : r.fds.front();
}

// One more number of the reserve's file: a duplicate, or the file itself
// when there is none yet; -1 when out. The system calls: a preload's
// fcntl would enter the copy in its table.
int new_number(Reserve& r) {
  const int from = source(r);
  return from >= 0 ? static_cast<int>(syscall(SYS_fcntl, from, F_DUPFD_CLOEXEC, 0)) : make_file(r);
}

// Gives the reserve's numbers back: those still its own.
void give_back(Reserve& r) {
  for (int fd : r.fds)
    if (ours(r, fd)) own_close(fd);
  r.fds.clear();
}

// Takes the free numbers into the reserve, up to `most` in it; when
// more are free (the program made room) the reserve ends instead.
void take(Reserve& r, size_t most) {
  const int free_now = free_numbers(static_cast<int>(most) + 1);
  if (free_now < 0) return;
  if (free_now > static_cast<int>(most)) {
    give_back(r);
    return;
  }
  while (r.fds.size() < most) {
    const int fd = new_number(r);
    if (fd < 0) return;
    r.fds.push_back(fd);
  }
}

// Set for a listener's step by its probe when the step began with more
// room than it needs, until it settles (reserve_again): then no number
// free at one of its closes means the program took some meanwhile, not
// that the step's own descriptors fill the table.
thread_local bool t_slack = false;

// reserve_free, and reserve_again when the probe gave the reserve.
void refill(bool only_if_given) {
  if (sandbox::locked_in()) return;
  Reserve& r = reserve();
  std::unique_lock<std::mutex> g(r.mu, std::try_to_lock);
  if (!g.owns_lock() || (only_if_given && r.given == 0)) return;
  r.given = 0;
  take(r, kReserveMost);
}

}  // namespace

int descriptor_shortage(int n, bool with_reserve) {
  if (sandbox::locked_in()) return 0;  // getrlimit may be what the filter kills for
  Reserve& r = reserve();
  std::unique_lock<std::mutex> g(r.mu, std::defer_lock);
  if (with_reserve) g.try_lock();
  const int held = g.owns_lock() ? static_cast<int>(r.fds.size()) : 0;
  if (g.owns_lock()) r.given = 0;             // whatever it gave before is settled
  const int want = with_reserve ? n + 1 : n;  // one more tells the step's slack
  const int free_now = free_numbers(held ? std::max(want, kReserveMost + 1) : want);
  if (free_now < 0) return 0;  // unknown: let the step try
  if (with_reserve) t_slack = (free_now >= n ? free_now : free_now + held) > n;
  if (free_now >= n) {
    if (held && free_now > kReserveMost) give_back(r);  // the program made room
    return 0;
  }
  if (free_now + held < n) return -EMFILE;
  r.given = held;
  give_back(r);
  return 0;
}

void reserve_free() { refill(false); }

void reserve_prepare() {
  if (sandbox::locked_in()) return;
  Reserve& r = reserve();
  std::unique_lock<std::mutex> g(r.mu, std::try_to_lock);
  if (!g.owns_lock() || (r.seed >= 0 && ours(r, r.seed))) return;
  r.seed = -1;
  r.seed = new_number(r);
}

void reserve_end() {
  if (sandbox::locked_in()) return;
  Reserve& r = reserve();
  std::unique_lock<std::mutex> g(r.mu, std::try_to_lock);
  if (g.owns_lock()) give_back(r);
}

void release_number(int fd) {
  if (fd < 0) return;
  if (t_slack && !sandbox::locked_in()) {  // a step's close; any other is a close
    Reserve& r = reserve();
    std::unique_lock<std::mutex> g(r.mu, std::try_to_lock);
    if (g.owns_lock() && free_numbers(1) == 0) {
      const int from = source(r);
      if (from >= 0 && ::syscall(SYS_dup3, from, fd, O_CLOEXEC) == fd) {
        r.fds.push_back(fd);
        return;
      }
    }
  }
  ::close(fd);
}

void reserve_again() {
  t_slack = false;
  refill(true);
}

}  // namespace ss
