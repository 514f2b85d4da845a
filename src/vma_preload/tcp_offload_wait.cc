// An offloaded connection's waits: a blocking call spins VMA_RX_POLL
// looks at the rings, then sleeps on the netdev's rings, the
// connection's kick and the stack's next timer; poll, select and epoll
// nest the same sleep (wait_target). While a program thread sleeps on
// the rings the vma-tcp thread leaves them to it (ring_turn.h).
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/base/interruptible_poll.h"
#include "core/base/deadline.h"
#include "core/base/scoped_count.h"
#include "core/base/signal_depth.h"
#include "core/base/spin_phase.h"
#include "interpose/signal_count.h"
#include "libvmacompat/settings.h"
#include "vma_preload/netdev_rings.h"
#include "vma_preload/rx_extras.h"
#include "vma_preload/socket_flags.h"
#include "vma_preload/tcp_offload.h"

namespace ss::vma::preload {

using net::tcp::State;

void TcpOffload::progress() { rings_->program_look(); }

int TcpOffload::wait_for(short events, int timeout_ms, bool restartable, bool quiet) {
  net::tcp::Stack& st = *rings_->tcp;
  const auto ready = [&] {
    if (events & POLLIN) run_callback();
    return ((events & POLLIN) && read_shut_.load(std::memory_order_relaxed)) ||
           (st.events(sock_) & (events | POLLERR | POLLHUP));
  };
  // VMA_RX_POLL: a receive spins on the rings that many looks before it
  // sleeps (-1: for good), as libvma's.
  return wait_until(ready, (events & POLLIN) ? settings::get(settings::Id::kRxPoll) : 0, timeout_ms,
                    restartable, quiet);
}

template <class Ready>
int TcpOffload::wait_until(const Ready& ready, int64_t polls, int timeout_ms, bool restartable,
                           bool quiet) {
  const ScopedCount waiting(waiting_);
  using clock = std::chrono::steady_clock;
  const clock::time_point end = clock::now() + std::chrono::milliseconds(timeout_ms);
  net::tcp::Stack& st = *rings_->tcp;
  std::vector<pollfd> fds;
  // A handler that runs while it spins interrupts it as the kernel's sleep
  // would be.
  uint64_t handlers = interpose::handlers_ran();
  SpinLimit spin;
  for (;;) {
    progress();
    if (ready()) return 0;
    if (polls != 0) {
      const clock::time_point now = clock::now();
      if (timeout_ms >= 0 && now >= end) return -EAGAIN;
      if (interpose::spin_interrupted(&handlers, restartable)) return -EINTR;
      if (polls > 0) polls--;
      if (spin.go_on(now)) continue;
      polls = 0;
    }
    spin.end();
    fds.clear();
    rings_->poll_fds(&fds);
    // Joined before this look: a change from now on kicks us. Left however
    // the sleep ends (a cancellation too).
    net::tcp::ScopedWaiter joined(st, sock_);
    if (joined.kick >= 0) fds.push_back({joined.kick, POLLIN, 0});
    if (ready()) return 0;
    int ms = -1;
    if (timeout_ms >= 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - clock::now());
      ms = left.count() > 0 ? static_cast<int>(left.count()) : 0;
    }
    const uint64_t due = st.next_due(), now = st.now();
    ms = shorter_sleep_ms(ms, ms_until(due, now));
    // No kick (out of descriptors): look often.
    if (joined.kick < 0) cut_sleep_ms(&ms);
    const bool timed_out = timeout_ms >= 0 && clock::now() >= end;
    int rc = 0;
    if (!timed_out) {
      const RingTurn::Sleep asleep(rings_->turn, tcp_wake_service);
      const QuietSleep q(quiet);
      rc = interruptible_poll(fds.data(), fds.size(), ms, restartable);
    }
    if (joined.kick >= 0) joined.kicked = fds.back().revents & POLLIN;
    if (rc == -EINTR) return -EINTR;
    if (timed_out) return -EAGAIN;
  }
}

int TcpOffload::await_readable(int fd, int flags) {
  // Inside the receive callback nothing more can become readable.
  if (extras_ && extras_->callback.running_here()) return -EAGAIN;
  // Only now the socket's flags and timeout (syscalls).
  if (nonblocking(fd, flags)) {
    progress();  // the rings may hold the data: one look before EAGAIN
    return (rings_->tcp->events(sock_) & (POLLIN | POLLERR | POLLHUP)) ? 0 : -EAGAIN;
  }
  const int timeout = rcv_timeout_ms(fd);
  const int w = wait_for(POLLIN, timeout, timeout < 0, /*quiet=*/true);
  return w < 0 ? w : 0;
}

short TcpOffload::readiness(short events, bool poll_rings) {
  if (poll_rings) progress();
  if (events & POLLIN) run_callback();
  short ev = rings_->tcp->events(sock_);
  if (read_shut_.load(std::memory_order_relaxed)) ev |= POLLIN | POLLRDHUP;
  return static_cast<short>(ev & (events | POLLERR | POLLHUP));
}

namespace {
constexpr uintptr_t kTagJoined = 1, kTagAsleep = 2;  // wait_target's, for after_wait
}  // namespace

WaitTarget TcpOffload::wait_target(short events, int* sleep_ms) {
  net::tcp::Stack& st = *rings_->tcp;
  if (readiness(events)) return WaitTarget{};  // kReady
  const uint64_t due = st.next_due(), now = st.now();
  *sleep_ms = shorter_sleep_ms(*sleep_ms, ms_until(due, now));
  WaitTarget t;
  t.fd = rings_->wait_fd();
  if (t.fd < 0) {  // no wait set (out of descriptors): only looked at
    cut_sleep_ms(sleep_ms);
    return WaitTarget{WaitTarget::kTimeOnly};
  }
  t.events = POLLIN;
  if (const int kick = st.join_waiters(sock_); kick >= 0) {
    // Joined, then looked again: a change from now on kicks the sleep.
    if (readiness(events)) {
      st.leave_waiters(sock_, false);
      return WaitTarget{};
    }
    t.kick_fd = kick;
    t.tag = kTagJoined;
  }
  rings_->turn.enter_sleep();
  t.tag |= kTagAsleep;
  return t;
}

void TcpOffload::after_wait(const WaitTarget& armed, bool kicked) {
  if (armed.tag & kTagJoined) rings_->tcp->leave_waiters(sock_, kicked);
  if ((armed.tag & kTagAsleep) && rings_->turn.leave_sleep()) tcp_wake_service();
}

uint64_t TcpOffload::changes() {
  progress();
  return rings_->tcp->changes(sock_);
}
void TcpOffload::linger_wait(int ms) {
  net::tcp::Stack& st = *rings_->tcp;
  const auto fin_acked = [&] {
    const State s = st.state(sock_);
    return s != State::kFinWait1 && s != State::kClosing && s != State::kLastAck;
  };
  wait_until(fin_acked, 0, ms, /*restartable=*/true, /*quiet=*/false);
}

}  // namespace ss::vma::preload
