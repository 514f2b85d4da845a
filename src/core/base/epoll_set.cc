#include "core/base/epoll_set.h"

#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>

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

EpollSet::~EpollSet() { ::close(epfd_); }

EpollSet::Member* EpollSet::find(int fd) {
  for (Member& m : members_)
    if (m.fd == fd) return &m;
  return nullptr;
}

int EpollSet::ctl(int op, int fd, const epoll_event* ev, const FdTable& table) {
  if (fd == epfd_) return -EINVAL;  // a set in itself
  std::shared_ptr<Pollable> obj = fd >= 0 ? table.get_pollable(fd) : nullptr;
  std::lock_guard<std::mutex> g(mu_);
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
      return 0;
    case EPOLL_CTL_MOD:
      if (!m) return -ENOENT;
      *m = {fd, ev->events, ev->data, m->obj};  // re-armed: edge state and one-shot reset
      return 0;
    case EPOLL_CTL_DEL:
      if (!m) return -ENOENT;
      members_.erase(members_.begin() + (m - members_.data()));
      return 0;
    default:
      return -EINVAL;
  }
}

short EpollSet::edge(Member* m, short rev, bool counted, uint64_t count) {
  if (!counted) return rev;  // no count: level-triggered
  short fresh = static_cast<short>(rev & ~m->reported);  // risen since reported
  if (count != m->seen) fresh = rev;                      // an event since: all of it
  m->seen = count;
  m->reported = rev;  // bits that went away may fire again
  return fresh ? rev : 0;
}

int EpollSet::collect(epoll_event* events, int max) {
  int n = 0;
  const size_t count = members_.size();
  for (size_t k = 0; k < count && n < max; k++) {
    Member& m = members_[(next_ + k) % count];
    std::shared_ptr<Pollable> obj = m.obj.lock();
    if (!obj || m.disabled) continue;
    uint64_t changes = 0;
    const bool counted = (m.events & EPOLLET) && obj->change_count(&changes);
    short rev = obj->readiness(static_cast<short>(m.events & kPollBits));
    if (m.events & EPOLLET) rev = edge(&m, rev, counted, changes);
    if (!rev) continue;
    if (m.events & EPOLLONESHOT) m.disabled = true;
    events[n++] = {static_cast<uint32_t>(static_cast<uint16_t>(rev)), m.data};
  }
  if (count) next_ = (next_ + 1) % count;
  return n;
}

bool EpollSet::arm(SleepSet* sleep, int* sleep_ms, std::vector<std::shared_ptr<Pollable>>* held) {
  sleep->add_kernel(epfd_, POLLIN);
  held->clear();
  for (Member& m : members_) {
    std::shared_ptr<Pollable> obj = m.obj.lock();
    if (!obj || m.disabled) continue;
    held->push_back(obj);
    // Edge-triggered and reported: sleep until the object's next event
    // (its wake-ups say when), not until it is ready, which it is.
    uint32_t want = m.events & kPollBits;
    if (m.events & EPOLLET) want &= ~static_cast<uint32_t>(static_cast<uint16_t>(m.reported));
    if (!sleep->arm(obj.get(), static_cast<short>(want), sleep_ms)) return false;
  }
  return true;
}

int EpollSet::wait(epoll_event* events, int maxevents, int timeout, const PollTiming& timing) {
  if (maxevents <= 0) return -EINVAL;
  if (!events) return -EFAULT;
  std::vector<std::shared_ptr<Pollable>> held;  // alive while armed
  // One waiter at a time looks at the members (their edge and one-shot
  // state); the lock is not held across the sleep.
  return look_spin_sleep(
      timeout, timing,
      [&] {
        int n;
        {
          std::lock_guard<std::mutex> g(mu_);
          n = collect(events, maxevents);
        }
        if (n == maxevents) return n;
        int k = ::epoll_wait(epfd_, events + n, maxevents - n, 0);
        if (k < 0) return n ? n : -errno;
        return n + k;
      },
      [&](SleepSet* sleep, int* ms) {
        std::lock_guard<std::mutex> g(mu_);
        return arm(sleep, ms, &held);
      });
}

}  // namespace ss
