// rpoll and rselect over a mix of rsockets and ordinary descriptors: a busy
// phase of polling_time, then a kernel poll() on what each rsocket's
// provider can wake, bounded by wake_up_interval and an absolute deadline.
#include "librsocket/poll.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <vector>

#include "core/base/fd_table.h"
#include "librsocket/dgram_dispatch.h"
#include "librsocket/fork.h"
#include "librsocket/interruptible_sleep.h"
#include "librsocket/settings.h"
#include "librsocket/socket.h"

namespace ss::rs {

namespace {
using clock = std::chrono::steady_clock;

// One pass: readiness of every entry; returns how many have revents.
int scan(pollfd* fds, nfds_t nfds, std::vector<PollEntry>& socks) {
  int ready = 0;
  std::vector<pollfd> plain;
  std::vector<nfds_t> plain_idx;
  for (nfds_t i = 0; i < nfds; i++) {
    fds[i].revents = 0;
    if (fds[i].fd < 0) continue;
    if (socks[i]) {
      fds[i].revents = socks[i].readiness(fds[i].events);
    } else {
      plain.push_back({fds[i].fd, fds[i].events, 0});
      plain_idx.push_back(i);
    }
  }
  if (!plain.empty() && ::poll(plain.data(), plain.size(), 0) > 0)
    for (size_t k = 0; k < plain.size(); k++) fds[plain_idx[k]].revents = plain[k].revents;
  for (nfds_t i = 0; i < nfds; i++) ready += fds[i].revents != 0;
  return ready;
}
// An rsocket armed for a sleep: its entry, and where its kick sits in the
// poll set (-1: none).
struct Armed {
  nfds_t entry;
  int kick_slot;
};

// After a sleep (or instead of one): every rsocket that was armed hears it.
void leave_all(std::vector<PollEntry>& socks, const std::vector<Armed>& armed,
               const std::vector<pollfd>& waits) {
  for (const Armed& a : armed)
    socks[a.entry].after_wait(a.kick_slot >= 0 ? waits[a.kick_slot] : pollfd{-1, 0, 0});
}
}  // namespace

int poll(pollfd* fds, nfds_t nfds, int timeout) {
  if (nfds && !fds) return -EFAULT;
  std::vector<PollEntry> socks(nfds);
  fork::resume_services();
  for (nfds_t i = 0; i < nfds; i++)
    socks[i] = PollEntry::lookup(fds[i].fd);

  const auto start = clock::now();
  const bool forever = timeout < 0;
  const auto deadline = start + std::chrono::milliseconds(std::max(timeout, 0));
  const auto spin_until =
      start + std::chrono::microseconds(settings::get(settings::Id::kPollingTime));
  const int wake = static_cast<int>(settings::get(settings::Id::kWakeUpInterval));
  // What the sleep polls: ordinary fds, and for each rsocket what its
  // provider can wake plus its own kick (only real fds: poll(2) refuses a
  // set larger than RLIMIT_NOFILE).
  std::vector<pollfd> waits;
  std::vector<Armed> armed;
  for (;;) {
    int n = scan(fds, nfds, socks);
    if (n || timeout == 0) return n;
    auto now = clock::now();
    if (!forever && now >= deadline) return 0;
    if (now < spin_until) continue;

    int ms = wake > 0 ? wake : -1;
    if (!forever) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
      ms = ms < 0 ? static_cast<int>(left) : std::min<int>(ms, static_cast<int>(left));
    }
    bool ready_now = false;
    waits.clear();
    armed.clear();
    for (nfds_t i = 0; i < nfds && !ready_now; i++) {
      if (fds[i].fd < 0) continue;
      if (!socks[i]) {
        waits.push_back({fds[i].fd, fds[i].events, 0});
        continue;
      }
      int wfd, kick;
      short wev = 0;
      socks[i].wait_target(fds[i].events, &wfd, &wev, &kick, &ms);
      if (wfd == -1) ready_now = true;
      else if (wfd >= 0) waits.push_back({wfd, wev, 0});
      if (kick >= 0) waits.push_back({kick, POLLIN, 0});
      if (wfd >= 0) armed.push_back({i, kick >= 0 ? static_cast<int>(waits.size() - 1) : -1});
    }
    if (ready_now) {
      leave_all(socks, armed, waits);
      continue;
    }
    int r = interruptible_poll(waits.data(), waits.size(), ms, false);  // poll(2): no restart
    leave_all(socks, armed, waits);
    if (r < 0) return r;
  }
}

int select(int nfds, fd_set* rd, fd_set* wr, fd_set* ex, timeval* tv) {
  if (nfds < 0 || nfds > FD_SETSIZE) return -EINVAL;
  std::vector<pollfd> fds;
  for (int fd = 0; fd < nfds; fd++) {  // fd 0 included (upstream skips it)
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
  int n = ss::rs::poll(fds.data(), fds.size(), timeout);
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

}  // namespace ss::rs
