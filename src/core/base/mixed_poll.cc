#include "core/base/mixed_poll.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/base/interruptible_poll.h"
#include "core/base/pollable.h"
#include "core/base/spin_phase.h"

namespace ss {

namespace {
using clock = std::chrono::steady_clock;

// One call's state: the Pollables behind the entries, and the kernel poll
// sets, built once and reused by every pass.
class MixedPoll {
 public:
  MixedPoll(pollfd* fds, nfds_t nfds, const FdTable& table) : fds_(fds), nfds_(nfds), objs_(nfds) {
    for (nfds_t i = 0; i < nfds; i++) {
      if (fds[i].fd < 0) continue;
      objs_[i] = table.get_pollable(fds[i].fd);
      if (!objs_[i]) {
        plain_.push_back({fds[i].fd, fds[i].events, 0});
        plain_idx_.push_back(i);
      }
    }
  }

  // One pass without sleeping: how many entries have revents.
  int scan() {
    for (nfds_t i = 0; i < nfds_; i++)
      fds_[i].revents = objs_[i] ? objs_[i]->readiness(fds_[i].events) : 0;
    if (!plain_.empty() && ::poll(plain_.data(), plain_.size(), 0) > 0)
      for (size_t k = 0; k < plain_.size(); k++) fds_[plain_idx_[k]].revents = plain_[k].revents;
    int ready = 0;
    for (nfds_t i = 0; i < nfds_; i++) ready += fds_[i].revents != 0;
    return ready;
  }

  // Arms every Pollable and gathers the sleep's poll set (only real fds:
  // poll(2) refuses a set larger than RLIMIT_NOFILE). False when one is
  // ready now: no sleep then, but disarm() all the same.
  bool arm(int* sleep_ms) {
    waits_.clear();
    armed_.clear();
    for (nfds_t i = 0; i < nfds_; i++) {
      if (fds_[i].fd < 0) continue;
      if (!objs_[i]) {
        waits_.push_back({fds_[i].fd, fds_[i].events, 0});
        continue;
      }
      WaitTarget t = objs_[i]->wait_target(fds_[i].events, sleep_ms);
      if (t.fd == WaitTarget::kReady) return false;
      if (t.fd < 0) continue;  // kTimeOnly
      waits_.push_back({t.fd, t.events, 0});
      int kick_slot = -1;
      if (t.kick_fd >= 0) {
        kick_slot = static_cast<int>(waits_.size());
        waits_.push_back({t.kick_fd, POLLIN, 0});
      }
      armed_.push_back({i, t, kick_slot});
    }
    return true;
  }

  int sleep(int ms) {  // poll(2) is never restarted
    return interruptible_poll(waits_.data(), waits_.size(), ms, false);
  }

  // After a sleep (or instead of one): every armed Pollable hears it.
  void disarm() {
    for (const Armed& a : armed_)
      objs_[a.entry]->after_wait(a.target,
                                 a.kick_slot >= 0 && (waits_[a.kick_slot].revents & POLLIN));
  }

 private:
  struct Armed {
    nfds_t entry;
    WaitTarget target;
    int kick_slot;  // where its kick sits in waits_, or -1
  };
  pollfd* fds_;
  nfds_t nfds_;
  std::vector<std::shared_ptr<Pollable>> objs_;  // null: a kernel descriptor
  std::vector<pollfd> plain_;                     // the kernel descriptors, for scan()
  std::vector<nfds_t> plain_idx_;
  std::vector<pollfd> waits_;
  std::vector<Armed> armed_;
};
}  // namespace

int poll_mixed(pollfd* fds, nfds_t nfds, int timeout, const PollTiming& timing,
               const FdTable& table) {
  if (nfds && !fds) return -EFAULT;
  MixedPoll mp(fds, nfds, table);
  const bool forever = timeout < 0;
  const auto deadline = clock::now() + std::chrono::milliseconds(std::max(timeout, 0));
  SpinPhase spin;
  for (;;) {
    int n = mp.scan();
    if (n || timeout == 0) return n;
    auto now = clock::now();
    if (!forever && now >= deadline) return 0;
    if (!spin.over(now, [&] { return timing.spin; })) continue;

    int ms = timing.wake_interval_ms > 0 ? timing.wake_interval_ms : -1;
    if (!forever) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
      ms = ms < 0 ? static_cast<int>(left) : std::min<int>(ms, static_cast<int>(left));
    }
    int r = mp.arm(&ms) ? mp.sleep(ms) : 0;
    mp.disarm();
    if (r < 0) return r;
  }
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
    timeout = static_cast<int>(std::min<long long>(
        tv->tv_sec * 1000LL + (tv->tv_usec + 999) / 1000, INT32_MAX));
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
