#include "core/base/epoll_set.h"

#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "core/base/deadline.h"
#include "core/base/log.h"
#include "core/base/sleep_set.h"

namespace ss {

namespace {
// The poll(2) bits of an epoll event mask (the values are the same).
constexpr uint32_t kPollBits = EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLRDHUP |
                               EPOLLRDNORM | EPOLLRDBAND | EPOLLWRNORM | EPOLLWRBAND;
}  // namespace

int EpollSet::create(int flags, std::unique_ptr<EpollSet>* out) {
  int fd = epoll_create1(flags);
  if (fd < 0) return -errno;
  out->reset(new EpollSet(fd));
  return 0;
}

std::unique_ptr<EpollSet> EpollSet::adopt(int epfd) {
  return std::unique_ptr<EpollSet>(new (std::nothrow) EpollSet(epfd));
}

EpollSet::~EpollSet() {
  ::close(epfd_);
  if (arm_fd_ >= 0) ::close(arm_fd_);
}

void EpollSet::to_kernel(const Pollable* obj) {
  std::lock_guard<std::mutex> g(mu_);
  std::erase_if(members_, [this, obj](const Member& m) {
    auto o = m.obj.lock();
    if (!o || o.get() != obj) return false;
    // Disabled, the kernel keeps only the flags of an entry (EP_PRIVATE_BITS).
    epoll_event ev{m.disabled ? m.events & ~kPollBits : m.events, m.data};
    if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, m.fd, &ev) != 0)
      SS_WARN("epoll set %d: fd %d cannot move to the kernel set: %s", epfd_, m.fd,
              strerror(errno));
    return true;
  });
}

EpollSet::Member* EpollSet::find(int fd) {
  for (Member& m : members_)
    if (m.fd == fd) return &m;
  return nullptr;
}

int EpollSet::ctl(int op, int fd, const epoll_event* ev, const FdTable& table) {
  for (;;)
    if (int rc = ctl_once(op, fd, ev, table); rc != kLookAgain) return rc;
}

int EpollSet::ctl_once(int op, int fd, const epoll_event* ev, const FdTable& table) {
  if (fd == epfd_) return -EINVAL;  // a set in itself
  std::shared_ptr<Pollable> obj = fd >= 0 ? table.get_pollable(fd) : nullptr;
  if (obj && obj->kernel_served()) obj = nullptr;  // the kernel's (a member already stays one)
  // A set that holds this one, at any depth (or nested too deep), as the
  // kernel: ELOOP. Looked at before taking mu_ (the other set locks its own),
  // under one global lock held until the insert, as the kernel's epnested
  // mutex: "A into B" and "B into A" at once cannot both pass the check.
  constexpr int kMaxNesting = 4;
  static std::mutex nesting;
  std::unique_lock<std::mutex> nest(nesting, std::defer_lock);
  if (auto* inner = dynamic_cast<EpollSet*>(obj.get()); inner && op == EPOLL_CTL_ADD) {
    nest.lock();
    if (inner->reaches(this, kMaxNesting)) return -ELOOP;
  }
  std::lock_guard<std::mutex> g(mu_);
  // The descriptor changed since the lookup: a preload moved it to the
  // kernel meanwhile (its to_kernel, under mu_, found no member here to
  // move, and the object goes with the table's entry), or a close and a
  // new socket took the number. Under mu_ a move comes after this add or
  // is seen here.
  if (obj && table.get_pollable(fd) != obj) return kLookAgain;
  Member* m = find(fd);
  if (m && m->obj.expired()) {  // closed since: gone from the set, as in the kernel
    members_.erase(members_.begin() + (m - members_.data()));
    m = nullptr;
  }
  if (!obj && !m) {  // the kernel's, errors and all
    if (::epoll_ctl(epfd_, op, fd, const_cast<epoll_event*>(ev)) != 0) return -errno;
    return 0;
  }
  if (op != EPOLL_CTL_DEL && !ev) return -EFAULT;
  switch (op) {
    case EPOLL_CTL_ADD:
      if (m) return -EEXIST;
      members_.push_back({fd, ev->events, ev->data, obj});
      kick_.wake();  // a sleeper armed before the add looks again
      return 0;
    case EPOLL_CTL_MOD:
      if (!m) return -ENOENT;
      *m = {fd, ev->events, ev->data, m->obj};  // re-armed: edge state and one-shot reset
      kick_.wake();
      return 0;
    case EPOLL_CTL_DEL:
      if (!m) return -ENOENT;
      members_.erase(members_.begin() + (m - members_.data()));
      return 0;
    default:
      return -EINVAL;
  }
}

bool EpollSet::reaches(const EpollSet* set, int depth) {
  if (set == this) return true;
  if (depth == 0) return true;  // too deep to follow: refused as a loop
  std::vector<std::shared_ptr<Pollable>> objs;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (Member& m : members_)
      if (auto o = m.obj.lock()) objs.push_back(std::move(o));
  }
  for (auto& o : objs)
    if (auto* inner = dynamic_cast<EpollSet*>(o.get()); inner && inner->reaches(set, depth - 1))
      return true;
  return false;
}

short EpollSet::due(Member& m, Pollable& obj, bool commit, bool repeat) {
  uint64_t changes = 0;
  const bool counted = (m.events & EPOLLET) && obj.change_count(&changes);
  const auto want = static_cast<short>(m.events & kPollBits);
  short rev = repeat ? obj.readiness_repeat(want) : obj.readiness(want);
  if (!counted) return rev;  // level-triggered (EPOLLET without a count too)
  // Risen since reported; POLLIN only with the count: an arrival the
  // kernel queued before its wake-up reached the count (a connection to a
  // kernel listener) shows in readiness first, and the count's move that
  // follows would be its second edge.
  short fresh = static_cast<short>(rev & ~m.reported & ~POLLIN);
  if (changes != m.seen) fresh = rev;  // an event since: all of it
  if (commit) {
    m.seen = changes;
    m.reported = rev;  // bits that went away may fire again
  }
  return fresh ? rev : 0;
}

bool EpollSet::moved(const Member& m, Pollable& obj) {
  uint64_t now = 0;
  return (m.events & EPOLLET) && m.reported && obj.change_count(&now) && now != m.seen;
}

int EpollSet::collect(epoll_event* events, int max, bool repeat) {
  int n = 0;
  const size_t count = members_.size();
  for (size_t k = 0; k < count && n < max; k++) {
    Member& m = members_[(next_ + k) % count];
    std::shared_ptr<Pollable> obj = m.obj.lock();
    if (!obj || m.disabled) continue;
    short rev = due(m, *obj, true, repeat);
    if (!rev) continue;
    if (m.events & EPOLLONESHOT) m.disabled = true;
    events[n++] = {static_cast<uint32_t>(static_cast<uint16_t>(rev)), m.data};
  }
  if (count) next_ = (next_ + 1) % count;
  return n;
}

bool EpollSet::arm(SleepSet* sleep, int* sleep_ms, std::vector<std::shared_ptr<Pollable>>* held,
                   bool* joined) {
  sleep->add_kernel(epfd_, POLLIN);
  // The members change (ctl) while this thread sleeps: their kick wakes it.
  *joined = kick_.join() == 0;
  if (*joined) sleep->add_kernel(kick_.fd(), POLLIN);
  held->clear();
  for (Member& m : members_) {
    std::shared_ptr<Pollable> obj = m.obj.lock();
    if (!obj || m.disabled) continue;
    held->push_back(obj);
    // Edge-triggered and reported: sleep until the object's next event
    // (its wake-ups say when), not until it is ready, which it is.
    uint32_t want = m.events & kPollBits;
    if (m.events & EPOLLET) want &= ~static_cast<uint32_t>(static_cast<uint16_t>(m.reported));
    if (!sleep->arm(obj.get(), static_cast<short>(want), sleep_ms) || moved(m, *obj)) return false;
  }
  return true;
}

int EpollSet::wait(epoll_event* events, int maxevents, int timeout, const PollTiming& timing) {
  if (maxevents <= 0) return -EINVAL;
  if (!events) return -EFAULT;
  std::vector<std::shared_ptr<Pollable>> held;  // alive while armed
  bool joined = false;                          // a waiter of kick_ since the last arm
  uint64_t passes = 0;                          // for timing.os_first and os_ratio
  auto leave = [&] {                            // mu_ held
    if (!joined) return;
    pollfd k{kick_.fd(), POLLIN, 0};
    kick_.leave(::poll(&k, 1, 0) > 0 && (k.revents & POLLIN));
    joined = false;
  };
  // Left however the wait ends: an interrupted sleep returns without a
  // last look, a cancelled one unwinds.
  struct LeaveAtEnd {
    std::mutex& mu;
    decltype(leave)& then;
    ~LeaveAtEnd() {
      std::lock_guard<std::mutex> g(mu);
      then();
    }
  } const at_end{mu_, leave};
  // One waiter at a time looks at the members (their edge and one-shot
  // state); the lock is not held across the sleep.
  return look_spin_sleep(
      timeout, timing,
      [&](bool repeat) {
        int n;
        {
          std::lock_guard<std::mutex> g(mu_);
          leave();
          n = collect(events, maxevents, repeat);
        }
        if (n == maxevents || !looks_at_os(timing, passes++, !repeat)) return n;
        int k = ::epoll_wait(epfd_, events + n, maxevents - n, 0);
        if (k < 0) return n ? n : -errno;
        return n + k;
      },
      [&](SleepSet* sleep, int* ms) {
        std::lock_guard<std::mutex> g(mu_);
        return arm(sleep, ms, &held, &joined);
      });
}

short EpollSet::readiness(short events) {
  if (!(events & POLLIN)) return 0;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (Member& m : members_) {
      std::shared_ptr<Pollable> obj = m.obj.lock();
      if (obj && !m.disabled && due(m, *obj, false, false)) return POLLIN;
    }
  }
  pollfd p{epfd_, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 ? POLLIN : 0;
}

bool EpollSet::watch(int fd, short events, Arming* a) {
  auto& [sleepers, mask] = watched_[fd];
  const uint32_t want = mask | static_cast<uint16_t>(events);
  if (!sleepers || want != mask) {
    epoll_event ev{};
    ev.events = want;
    ev.data.fd = fd;
    if (::epoll_ctl(arm_fd_, sleepers ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev) != 0) {
      if (!sleepers) watched_.erase(fd);
      return false;
    }
    mask = want;
  }
  sleepers++;
  a->watched.push_back(fd);
  return true;
}

void EpollSet::unwatch(Arming* a) {
  for (int fd : a->watched) {
    auto it = watched_.find(fd);
    if (it == watched_.end() || --it->second.first > 0) continue;
    ::epoll_ctl(arm_fd_, EPOLL_CTL_DEL, fd, nullptr);  // gone already if closed meanwhile
    watched_.erase(it);
  }
}

void EpollSet::leave_members(Arming* a) {
  // Which kicks fired: one look at all of them, each descriptor once (a
  // thread's kicks are its one eventfd).
  std::vector<pollfd> kicks;
  std::unordered_map<int, size_t> slot;
  for (auto& [obj, t] : a->armed)
    if (t.kick_fd >= 0 && slot.try_emplace(t.kick_fd, kicks.size()).second)
      kicks.push_back({t.kick_fd, POLLIN, 0});
  if (!kicks.empty() && ::poll(kicks.data(), kicks.size(), 0) < 0)
    for (pollfd& k : kicks) k.revents = 0;
  for (auto& [obj, t] : a->armed)
    obj->after_wait(t, t.kick_fd >= 0 && (kicks[slot[t.kick_fd]].revents & POLLIN));
}

WaitTarget EpollSet::wait_target(short events, int* sleep_ms) {
  // Out of descriptors for the second epoll fd, or one that cannot watch
  // a target: sleeps cut as a Kick's without its eventfd.
  auto cut = [&] { cut_sleep_ms(sleep_ms); };
  if (!(events & POLLIN)) return {WaitTarget::kTimeOnly};
  std::lock_guard<std::mutex> g(mu_);
  if (arm_fd_ < 0) {
    int fd = epoll_create1(EPOLL_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    if (fd >= 0 && ::epoll_ctl(fd, EPOLL_CTL_ADD, epfd_, &ev) != 0) {
      ::close(fd);
      fd = -1;
    }
    if (fd < 0) {
      cut();
      return {WaitTarget::kTimeOnly};
    }
    arm_fd_ = fd;
  }
  auto a = std::make_unique<Arming>();
  for (Member& m : members_) {
    std::shared_ptr<Pollable> obj = m.obj.lock();
    if (!obj || m.disabled) continue;
    uint32_t want = m.events & kPollBits;
    if (m.events & EPOLLET) want &= ~static_cast<uint32_t>(static_cast<uint16_t>(m.reported));
    WaitTarget t = obj->wait_target(static_cast<short>(want), sleep_ms);
    if (t.fd == WaitTarget::kReady) {
      leave_members(a.get());
      unwatch(a.get());
      return {};
    }
    if (t.fd < 0) continue;
    a->armed.push_back({obj, t});
    if (moved(m, *obj)) {
      leave_members(a.get());
      unwatch(a.get());
      return {};
    }
    if (!watch(t.fd, t.events, a.get())) cut();
    if (t.kick_fd >= 0 && !watch(t.kick_fd, POLLIN, a.get())) cut();
  }
  // As in wait(): a ctl during the sleep kicks it.
  a->joined = kick_.join() == 0;
  WaitTarget out{arm_fd_, POLLIN, a->joined ? kick_.fd() : -1};
  out.tag = reinterpret_cast<uintptr_t>(a.release());
  return out;
}

void EpollSet::after_wait(const WaitTarget& armed, bool kicked) {
  std::unique_ptr<Arming> a(reinterpret_cast<Arming*>(armed.tag));
  if (!a) return;
  leave_members(a.get());
  std::lock_guard<std::mutex> g(mu_);
  if (a->joined) kick_.leave(kicked);
  unwatch(a.get());
}

}  // namespace ss
