#include "preload/dup.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <map>
#include <mutex>
#include <set>

#include "librsocket/rsocket_own.h"
#include "interpose/real.h"
#include "preload/route.h"

namespace ss::preload::dups {

namespace {

struct Group {
  int owner;  // the number the rsocket was made at
  int refs;   // descriptors of the program that name it
};

std::mutex mu;
std::map<const void*, Group> groups;  // by rsocket object
std::set<int> held_fds;  // parked or lingering
std::atomic<size_t> n_held{0};  // held_fds.size(), read without the lock

// A fork child has only the forking thread: mu is taken around fork so
// the child's tables are whole and its first dup or close does not wait
// for a thread that is not there. Registered after the fd table's
// (urcu's) handlers, so ours run before theirs: a thread inside mu may
// need urcu's locks. No one holding librsocket's fork TableGuard takes
// mu, so its handler may run after ours.
__attribute__((constructor)) void lock_around_fork() {
  FdTable::instance();
  pthread_atfork([] { mu.lock(); }, [] { mu.unlock(); }, [] { mu.unlock(); });
}

std::shared_ptr<Pollable> pollable_of(int fd) { return FdTable::instance().get_pollable(fd); }

}  // namespace

int dup_rsocket(int fd, int at, bool exact) {
  std::lock_guard<std::mutex> g(mu);
  auto obj = FdTable::instance().get_object(fd, FdKind::kRsocket);
  if (!obj) {
    errno = EBADF;
    return -1;
  }
  if (exact && held_fds.count(at)) {
    errno = EBUSY;
    return -1;
  }
  // The kernel descriptor is close-on-exec as every rsocket's (set_fd_flags).
  int nfd = exact ? ss::interpose::real().dup3(fd, at, O_CLOEXEC) : ss::interpose::real().fcntl(fd, F_DUPFD_CLOEXEC, at);
  if (nfd < 0) return -1;
  // The same object, a Pollable too (poll and epoll on the duplicate).
  if (int rc = FdTable::instance().insert(nfd, FdKind::kRsocket, obj, pollable_of(fd).get())) {
    ss::interpose::real().close(nfd);
    errno = -rc;
    return -1;
  }
  auto [it, fresh] = groups.try_emplace(obj.get(), Group{fd, 1});
  it->second.refs++;
  return nfd;
}

bool close_shared(int fd, int* rc) {
  std::unique_lock<std::mutex> g(mu);
  auto obj = FdTable::instance().get_object(fd, FdKind::kRsocket);
  auto it = obj ? groups.find(obj.get()) : groups.end();
  if (it == groups.end()) return false;
  auto pollable = pollable_of(fd);
  Group& grp = it->second;
  FdTable::instance().remove_object(fd, FdKind::kRsocket, nullptr);
  if (--grp.refs > 0) {
    if (fd == grp.owner) {
      held_fds.insert(fd);  // librsocket still acts on this number
      n_held = held_fds.size();
    }
    else
      ss::interpose::real().close(fd);
    *rc = 0;
    return true;
  }
  // The last one: the rsocket closes at its own number.
  const int owner = grp.owner;
  groups.erase(it);
  if (fd != owner) {
    ss::interpose::real().close(fd);
    FdTable::instance().insert(owner, FdKind::kRsocket, obj, pollable.get());
  }
  g.unlock();
  *rc = close_last(owner);
  return true;
}

int close_last(int fd) {
  {
    std::lock_guard<std::mutex> g(mu);
    held_fds.insert(fd);  // before rclose: its close of the number releases it
    n_held = held_fds.size();
  }
  InRsocket in;
  return rclose(fd);
}

int close_released(int fd) {
  if (n_held) {
    // Freed and no longer held in one step, as held() sees it: a thread
    // given the number by the kernel finds it free.
    std::lock_guard<std::mutex> g(mu);
    if (held_fds.erase(fd)) {
      n_held = held_fds.size();
      return ss::interpose::real().close(fd);  // gone even on EINTR
    }
  }
  return ss::interpose::real().close(fd);
}

bool last_descriptor(int fd) {
  std::lock_guard<std::mutex> g(mu);
  auto obj = FdTable::instance().get_object(fd, FdKind::kRsocket);
  auto it = obj ? groups.find(obj.get()) : groups.end();
  return it == groups.end() || it->second.refs <= 1;
}

bool held(int fd) {
  if (!n_held) return false;
  std::lock_guard<std::mutex> g(mu);
  return held_fds.count(fd) != 0;
}

int close_range_around(unsigned int first, unsigned int last, int flags, std::set<int> keep) {
  // Held throughout: a number librsocket frees meanwhile would otherwise
  // be skipped though the program may have it already.
  std::lock_guard<std::mutex> g(mu);
  keep.insert(held_fds.begin(), held_fds.end());
  unsigned int from = first;
  for (int p : keep) {
    const unsigned int u = static_cast<unsigned int>(p);
    if (u < from || u > last) continue;
    if (u > from && ss::interpose::real().close_range(from, u - 1, flags)) return -1;
    from = u + 1;
    if (from == 0) return 0;  // wrapped past the largest number
  }
  return from <= last ? ss::interpose::real().close_range(from, last, flags) : 0;
}

}  // namespace ss::preload::dups
