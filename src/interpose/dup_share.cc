#include "interpose/dup_share.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <map>
#include <memory>
#include <utility>
#include <mutex>
#include <new>
#include <optional>
#include <vector>

#include "core/base/signals_held.h"
#include "interpose/real.h"
#include "interpose/signal_count.h"

namespace ss::interpose::dups {

namespace {

struct Group {
  int owner;                    // the number the object was made at
  bool acts_on_owner;           // the face uses that number (held until the last close)
  std::set<int> numbers;        // the program's numbers that name it
  std::map<int, bool> cloexec;  // their FD_CLOEXEC as the program set it (program_cloexec)
};

std::mutex mu;
// Never destroyed: the program's other threads may dup and close while
// exit runs the destructors. Made at the first use: a preload's
// constructor (an exec's connections built back) may come before this
// file's initialisers.
std::map<const void*, Group>& groups() {  // by object
  static auto& g = *new std::map<const void*, Group>;
  return g;
}
std::set<int>& held_fds() {  // kept open for a face
  static auto& h = *new std::set<int>;
  return h;
}
std::atomic<size_t> n_held{0};  // held_fds().size(), read without the lock

// mu held, signals held off around it, with the objects looked up under
// it freed only after the unlock (and, in a handler over the library,
// after the work it interrupted): a face's destructor takes its own
// locks, which other threads hold while they dup or forget (a lock-order
// cycle), and a face's close may drop its table entry without mu, which
// leaves a lookup here the last reference.
struct Locked {
  Locked() = default;
  Locked(const Locked&) = delete;
  Locked& operator=(const Locked&) = delete;
  ~Locked() {
    g.unlock();
    release_after_busy(std::move(stale));
    release_after_busy(std::move(obj));
  }
  SignalsHeld signals;  // a handler never waits for mu on its own thread
  // No grace period waited for under mu: another thread's handler may
  // want mu over the read that period would wait for.
  FdTable::RetireLater later;
  std::shared_ptr<void> obj, stale;
  std::unique_lock<std::mutex> g{mu};
};

// The group of the object `fd` names (mu held; the object in *obj), or null.
Group* group_of(int fd, std::shared_ptr<void>* obj) {
  FdTable& t = FdTable::instance();
  *obj = t.get_object(fd, t.kind(fd));
  auto it = *obj ? groups().find(obj->get()) : groups().end();
  return it == groups().end() ? nullptr : &it->second;
}

// fd's entry of `kind` out of the tables (mu held), its object for the
// caller to free after the lock (Locked).
std::shared_ptr<void> take_entry(int fd, FdKind kind) {
  std::shared_ptr<void> obj;
  if (kind == FdKind::kNone || FdTable::instance().remove_object(fd, kind, &obj) < 0)
    return nullptr;
  if (held_fds().erase(fd)) n_held = held_fds().size();
  auto it = groups().find(obj.get());
  if (it == groups().end()) return obj;
  it->second.numbers.erase(fd);
  it->second.cloexec.erase(fd);
  if (it->second.numbers.empty()) groups().erase(it);
  return obj;
}

// Taken by the forking thread around fork, signals held off as any holder's.
thread_local std::optional<Locked> t_fork_lock;

__attribute__((constructor)) void at_load() { lock_around_fork(); }

}  // namespace

// A fork child has only the forking thread: mu is taken around fork so
// the child's tables are whole and its first dup or close does not wait
// for a thread that is not there. Registered after the fd table's
// (urcu's) handlers, so ours run before theirs: a thread inside mu may
// need urcu's locks. No one holding librsocket's fork TableGuard takes
// mu, so its handler may run after ours.
void lock_around_fork() {
  static const bool once = [] {
    FdTable::instance();
    pthread_atfork([] { t_fork_lock.emplace(); }, [] { t_fork_lock.reset(); },
                   [] { t_fork_lock.reset(); });
    return true;
  }();
  (void)once;
}

int dup_entry(int fd, FdKind kind, int at, bool exact, bool cloexec, bool acts_on_owner) {
  Locked l;
  FdTable& t = FdTable::instance();
  const auto& obj = l.obj = t.get_object(fd, kind);
  if (!obj) {
    errno = EBADF;
    return -1;
  }
  if (exact && held_fds().count(at)) {
    errno = EBUSY;
    return -1;
  }
  const int nfd = exact ? real().dup3(fd, at, cloexec ? O_CLOEXEC : 0)
                        : real().fcntl(fd, cloexec ? F_DUPFD_CLOEXEC : F_DUPFD, at);
  if (nfd < 0) return -1;
  // A record still at nfd was closed behind the preload's back.
  l.stale = take_entry(nfd, t.kind(nfd));
  // The same object, a Pollable too (poll and epoll on the duplicate).
  if (const int rc = t.insert(nfd, kind, obj, t.get_pollable(fd).get())) {
    real().close(nfd);
    errno = -rc;
    return -1;
  }
  auto it = groups().try_emplace(obj.get(), Group{fd, acts_on_owner, {fd}, {}}).first;
  it->second.numbers.insert(nfd);
  return nfd;
}

bool close_shared(int fd, FdKind kind, int* rc, int* own) {
  Locked l;
  FdTable& t = FdTable::instance();
  *own = fd;
  const auto& obj = l.obj = t.get_object(fd, kind);
  auto it = obj ? groups().find(obj.get()) : groups().end();
  if (it == groups().end()) return false;
  auto pollable = t.get_pollable(fd);
  Group& grp = it->second;
  grp.numbers.erase(fd);
  grp.cloexec.erase(fd);
  if (!grp.numbers.empty()) {
    t.remove_object(fd, kind, nullptr);
    if (fd == grp.owner && grp.acts_on_owner) {
      // The face still acts on this number; closed as the program sees
      // it, so no exec'd program gets it either.
      real().fcntl(fd, F_SETFD, FD_CLOEXEC);
      held_fds().insert(fd);
      n_held = held_fds().size();
    } else {
      real().close(fd);
    }
    *rc = 0;
    return true;
  }
  // The last one: the object closes at its own number, its entry there.
  if (grp.acts_on_owner) *own = grp.owner;
  groups().erase(it);
  if (fd != *own) {
    t.remove_object(fd, kind, nullptr);
    real().close(fd);
    t.insert(*own, kind, obj, pollable.get());
  }
  return false;
}

void forget(int fd, FdKind kind) {
  Locked l;
  l.obj = take_entry(fd, kind);
}

int program_cloexec(int fd) {
  Locked l;
  Group* grp = group_of(fd, &l.obj);
  if (!grp) return -1;
  auto it = grp->cloexec.find(fd);
  return it == grp->cloexec.end() ? -1 : it->second;
}

void set_program_cloexec(int fd, bool on) {
  Locked l;
  if (Group* grp = group_of(fd, &l.obj); grp && grp->numbers.count(fd)) grp->cloexec[fd] = on;
}

int regroup(int owner, const std::vector<int>& numbers, FdKind kind) {
  std::vector<std::shared_ptr<void>> stale;  // freed after the lock (Locked)
  Locked l;
  FdTable& t = FdTable::instance();
  const auto& obj = l.obj = t.get_object(owner, kind);
  if (!obj) return -EBADF;
  auto pollable = t.get_pollable(owner);
  Group grp{owner, true, {}, {}};
  for (int n : numbers) {
    if (n != owner) {
      stale.push_back(take_entry(n, t.kind(n)));
      if (const int rc = t.insert(n, kind, obj, pollable.get())) return rc;
    }
    grp.numbers.insert(n);
    grp.cloexec[n] = false;  // each crossed the exec
  }
  if (!grp.numbers.count(owner)) {
    t.remove_object(owner, kind, nullptr);
    held_fds().insert(owner);
    n_held = held_fds().size();
  }
  if (grp.numbers.size() > 1 || !grp.numbers.count(owner)) groups()[obj.get()] = std::move(grp);
  return 0;
}

bool last_descriptor(int fd, FdKind kind) {
  Locked l;
  const auto& obj = l.obj = FdTable::instance().get_object(fd, kind);
  auto it = obj ? groups().find(obj.get()) : groups().end();
  return it == groups().end() || it->second.numbers.size() <= 1;
}

std::vector<int> dissolve(int fd) {
  Locked l;
  FdTable& t = FdTable::instance();
  const auto& obj = l.obj = t.get_object(fd, t.kind(fd));
  auto it = obj ? groups().find(obj.get()) : groups().end();
  if (it == groups().end()) return {};
  const Group grp = std::move(it->second);
  groups().erase(it);
  std::vector<int> others;
  for (int n : grp.numbers) {
    if (n == fd) continue;
    t.remove_object(n, t.kind(n), nullptr);
    others.push_back(n);
  }
  if (!grp.numbers.count(grp.owner) && held_fds().erase(grp.owner)) {
    n_held = held_fds().size();
    real().close(grp.owner);  // closed as the program sees it, and no face acts on it now
  }
  return others;
}

std::shared_ptr<void> held_object(int fd, FdKind kind) {
  if (!n_held) return nullptr;
  Locked l;
  if (!held_fds().count(fd)) return nullptr;
  for (const auto& [obj, grp] : groups())
    if (grp.owner == fd && !grp.numbers.empty()) {
      l.obj = FdTable::instance().get_object(*grp.numbers.begin(), kind);
      return l.obj.get() == obj ? l.obj : nullptr;
    }
  return nullptr;
}

bool held(int fd) {
  if (!n_held) return false;
  Locked l;
  return held_fds().count(fd) != 0;
}

void hold(int fd) {
  Locked l;
  held_fds().insert(fd);
  n_held = held_fds().size();
}

int close_released(int fd) {
  if (n_held) {
    Locked l;
    if (held_fds().erase(fd)) {
      n_held = held_fds().size();
      return real().close(fd);  // gone even on EINTR
    }
  }
  return real().close(fd);
}

void forget_held(int fd) {
  Locked l;
  held_fds().erase(fd);
  n_held = held_fds().size();
}

int close_range_around(unsigned int first, unsigned int last, int flags, std::set<int> keep) {
  // Held throughout: a number a face frees meanwhile would otherwise be
  // skipped though the program may have it already.
  Locked l;
  keep.insert(held_fds().begin(), held_fds().end());
  unsigned int from = first;
  for (int p : keep) {
    const unsigned int u = static_cast<unsigned int>(p);
    if (u < from || u > last) continue;
    if (u > from && real().close_range(from, u - 1, flags)) return -1;
    from = u + 1;
    if (from == 0) return 0;  // wrapped past the largest number
  }
  return from <= last ? real().close_range(from, last, flags) : 0;
}

int close_range_with(unsigned int first, unsigned int last, int flags,
                     const std::function<bool(int)>& ours,
                     const std::function<void(int)>& close_one) {
  if (flags & CLOSE_RANGE_CLOEXEC) return real().close_range(first, last, flags);
  rlimit lim{};
  unsigned int top = last;
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY &&
      lim.rlim_cur - 1 < top)
    top = static_cast<unsigned int>(lim.rlim_cur - 1);
  std::set<int> mine;
  try {
    for (unsigned int fd = first; fd <= top && fd < (1u << 20); fd++)
      if (ours(static_cast<int>(fd))) mine.insert(static_cast<int>(fd));
  } catch (const std::bad_alloc&) {
    errno = ENOMEM;
    return -1;
  }
  for (int fd : mine) close_one(fd);
  return close_range_around(first, last, flags, std::move(mine));
}

void closefrom_with(int lowfd, int (*close_range_fn)(unsigned int, unsigned int, int),
                    int (*close_fn)(int)) {
  if (lowfd < 0) lowfd = 0;
  if (close_range_fn(static_cast<unsigned int>(lowfd), ~0u, 0) == 0) return;
  rlimit lim{};
  const int top = getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY
                      ? static_cast<int>(lim.rlim_cur)
                      : (1 << 20);
  for (int fd = lowfd; fd < top; fd++) close_fn(fd);
}

}  // namespace ss::interpose::dups
