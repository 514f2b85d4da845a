#include "core/base/mixed_poll.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/base/call_mask.h"
#include "core/base/pollable.h"
#include "core/base/sleep_set.h"

namespace ss {

namespace {
// One call's state: the Pollables behind the entries, and the kernel
// descriptors' poll set, built once and reused by every pass.
class MixedPoll {
 public:
  MixedPoll(pollfd* fds, nfds_t nfds, const PollTiming& timing, const FdTable& table)
      : fds_(fds), nfds_(nfds), timing_(timing), objs_(nfds) {
    for (nfds_t i = 0; i < nfds; i++) {
      if (fds[i].fd < 0) continue;
      objs_[i] = table.get_pollable(fds[i].fd);
      if (!objs_[i]) {
        plain_.push_back({fds[i].fd, fds[i].events, 0});
        plain_idx_.push_back(i);
      }
    }
  }

  // One pass without sleeping: how many entries have revents. `repeat`:
  // a look again while spinning (Pollable::readiness_repeat).
  int scan(bool repeat) {
    for (nfds_t i = 0; i < nfds_; i++) {
      Pollable* o = objs_[i].get();
      fds_[i].revents = !o       ? 0
                        : repeat ? o->readiness_repeat(fds_[i].events)
                                 : o->readiness(fds_[i].events);
    }
    if (!plain_.empty() && looks_at_os(timing_, passes_++, !repeat) &&
        ::poll(plain_.data(), plain_.size(), 0) > 0)
      for (size_t k = 0; k < plain_.size(); k++) fds_[plain_idx_[k]].revents = plain_[k].revents;
    int ready = 0;
    for (nfds_t i = 0; i < nfds_; i++) ready += fds_[i].revents != 0;
    return ready;
  }

  // The sleep's set: the kernel descriptors, each Pollable armed.
  bool arm(SleepSet* sleep, int* sleep_ms) {
    for (const pollfd& p : plain_) sleep->add_kernel(p.fd, p.events);
    for (nfds_t i = 0; i < nfds_; i++)
      if (objs_[i] && !sleep->arm(objs_[i].get(), fds_[i].events, sleep_ms)) return false;
    return true;
  }

 private:
  pollfd* fds_;
  nfds_t nfds_;
  const PollTiming& timing_;
  uint64_t passes_ = 0;
  std::vector<std::shared_ptr<Pollable>> objs_;  // null: a kernel descriptor
  std::vector<pollfd> plain_;                    // the kernel descriptors, for scan()
  std::vector<nfds_t> plain_idx_;
};
}  // namespace

int poll_mixed(pollfd* fds, nfds_t nfds, int timeout, const PollTiming& timing,
               const FdTable& table) {
  if (nfds && !fds) return -EFAULT;
  MixedPoll mp(fds, nfds, timing, table);
  const uint64_t handlers = timing.handlers_ran ? timing.handlers_ran() : 0;
  const int n = look_spin_sleep(
      timeout, timing, [&](bool repeat) { return mp.scan(repeat); },
      [&](SleepSet* sleep, int* ms) { return mp.arm(sleep, ms); });
  if (n != 0 || timeout != 0) return n;
  // poll(2) looks at signals before its timeout: one that ran (the call's
  // mask swapped in) or is pending for the mask ends it.
  if (timing.handlers_ran && timing.handlers_ran() != handlers) return -EINTR;
  return let_in_pending_signal();
}

int select_mixed(int nfds, fd_set* rd, fd_set* wr, fd_set* ex, timeval* tv,
                 const PollTiming& timing, const FdTable& table) {
  if (nfds < 0 || nfds > FD_SETSIZE) return -EINVAL;
  std::vector<pollfd> fds;
  for (int fd = 0; fd < nfds; fd++) {  // fd 0 included (upstream rselect skips it)
    short ev = 0;
    if (rd && FD_ISSET(fd, rd)) ev |= POLLIN;
    if (wr && FD_ISSET(fd, wr)) ev |= POLLOUT;
    if (ex && FD_ISSET(fd, ex)) ev |= POLLPRI;
    if (ev) fds.push_back({fd, ev, 0});
  }
  int timeout = -1;
  if (tv) {
    if (tv->tv_sec < 0 || tv->tv_usec < 0) return -EINVAL;
    timeout = static_cast<int>(
        std::min<long long>(tv->tv_sec * 1000LL + (tv->tv_usec + 999) / 1000, INT32_MAX));
  }
  int n = poll_mixed(fds.data(), fds.size(), timeout, timing, table);
  if (n < 0) return n;
  if (rd) FD_ZERO(rd);
  if (wr) FD_ZERO(wr);
  if (ex) FD_ZERO(ex);
  int count = 0;
  for (const pollfd& p : fds) {
    if (p.revents & POLLNVAL) return -EBADF;
    if (rd && (p.revents & (POLLIN | POLLHUP | POLLERR)) && (p.events & POLLIN)) {
      FD_SET(p.fd, rd);
      count++;
    }
    if (wr && (p.revents & (POLLOUT | POLLERR)) && (p.events & POLLOUT)) {
      FD_SET(p.fd, wr);
      count++;
    }
    if (ex && (p.revents & POLLPRI) && (p.events & POLLPRI)) {
      FD_SET(p.fd, ex);
      count++;
    }
  }
  return count;
}

}  // namespace ss
