// Ending a connection: rshutdown, rclose and the graceful close (linger)
// between them. See Socket::lingering for why a close may linger.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>

#include "librsocket/settings.h"
#include "core/base/fd_spare.h"
#include "core/base/log.h"
#include "core/base/own_fd.h"
#include "librsocket/keepalive_service.h"
#include "librsocket/linger_service.h"
#include "librsocket/listen_service.h"
#include "librsocket/preload_hooks.h"
#include "librsocket/socket.h"

namespace {
// ss_rspreload_fork_closed's callback: the preload forgets a number closed
// behind it in a fork child.
std::atomic<void (*)(int)> g_fork_closed{nullptr};
}  // namespace

extern "C" __attribute__((visibility("default"))) void ss_rspreload_fork_closed(
    void (*closed)(int fd)) {
  g_fork_closed.store(closed, std::memory_order_release);
}

namespace ss::rs {

namespace {
using clock = std::chrono::steady_clock;
// After a linger ends on our side, the DISCONNECT gets this long to leave.
constexpr auto kDisconnectDrain = std::chrono::milliseconds(100);
constexpr int kMaxLingerSeconds = 60;
}  // namespace

std::chrono::milliseconds Socket::linger_time() const {
  if (opt_.linger)  // SO_LINGER: l_linger seconds (0: at once)
    return std::chrono::seconds(std::clamp(opt_.linger_s, 0, kMaxLingerSeconds));
  return std::chrono::milliseconds(settings::get(settings::Id::kCloseLinger));
}

bool Socket::sends_drained() const {
  return sqe_avail_ == opt_.sq_size - kQpCtrlSize && ctrl_avail_ == kQpCtrlSize;
}

int Socket::shutdown(int how) {
  KeepaliveService::instance().remove(this);  // as upstream: any shutdown stops probes
  Lock lk(mu_);
  if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR) return -EINVAL;
  if (ep_) may_look();  // as send_from
  if (phase() == kListening) {
    // Linux lets shutdown stop a listener; we simply report success.
    return 0;
  }
  if (phase() == kConnecting && has(kReplyPending)) {
    // As Linux with a connect in progress: the connect is abandoned and
    // fails with ECONNRESET (a blocked rconnect returns now); the transport
    // goes at rclose, as after a refused connect. (An accepted socket still
    // finishing its handshake is no connect of ours: not abandoned.)
    err_ = ECONNRESET;
    set_phase(kConnectError);
    kick_waiters();
    return 0;
  }
  if (!(state_ & kConnected) && !(state_ & kDisconnected)) return -ENOTCONN;
  if (!(state_ & kConnected) || lingering()) return 0;
  shutting_++;  // its waits release mu_: an rclose meanwhile must not free ep_
  uint32_t ctrl;
  bool linger = false;
  if (how == SHUT_RDWR) {
    // The peer still sends, so it still reads: tell it only that we stopped
    // writing, and let it close first.
    linger = (state_ & kReadable) && linger_time().count() > 0;
    ctrl = linger ? kCtrlShutdown : kCtrlDisconnect;
    state_ &= ~(kReadable | kWritable);
  } else if (how == SHUT_WR) {
    ctrl = (state_ & kReadable) ? kCtrlShutdown : kCtrlDisconnect;
    state_ &= ~kWritable;
  } else {
    ctrl = (state_ & kWritable) ? 0xFFu : static_cast<uint32_t>(kCtrlDisconnect);
    state_ &= ~kReadable;
  }
  if (how != SHUT_RD) set(kShutWr);
  if (ctrl == 0xFF || (state_ & (kError | kDisconnected))) {
    linger = false;
  } else {
    // Bounded wait for a control slot and for the sends to drain (upstream
    // waits forever here).
    auto deadline = clock::now() + std::chrono::seconds(2);
    auto expired = [&] { return clock::now() > deadline; };
    // Not cut short by a signal: shutdown(2) does not sleep, nor fail with EINTR.
    while (wait_for(lk, false, [&] { return ctrl_ready() || expired() || (state_ & kError); }) ==
           -EINTR) {
    }
    const bool sent = ctrl_ready() && send_ctrl(ctrl) == 0;
    linger = linger && sent;  // a peer never told we stopped would wait in vain
    SS_DEBUG("rsocket: fd %d: shutdown(%d) control %u, state 0x%x, ctrl slots %u, sqe %u", fd_, how,
             ctrl, state_, ctrl_avail_, sqe_avail_);
    while (wait_for(lk, false, [&] { return sends_drained() || expired() || (state_ & kError); }) ==
           -EINTR) {
    }
  }
  linger = linger && lingering() && !(state_ & kError);
  if (linger) {
    linger_deadline_ = clock::now() + linger_time();
    set(kInLinger);
  } else if (!(state_ & (kReadable | kWritable))) {
    state_ = (state_ & ~kConnected) | kDisconnected;
    ep_->disconnect();
  }
  kick_waiters();  // blocked readers/writers see the new state
  const bool release_now = --shutting_ == 0 && has(kClosed) && !has(kInLinger);
  lk.unlock();
  if (linger) LingerService::instance().add(shared_from_this());
  if (release_now) release();  // an rclose came while we slept
  return 0;
}

bool Socket::linger_step() {
  bool release_now;
  {
    Lock lk(mu_);
    if (ep_) process_cq(lk);
    const auto now = clock::now();
    if (lingering()) {
      if (!has(kPeerWroteLate) && !(state_ & kError) && now < linger_deadline_) return false;
      // The peer did not close in time, or wrote to our closed end (where
      // TCP would answer with a reset): we are gone.
      SS_DEBUG("rsocket: fd %d: linger ends without the peer's close (%s)", fd_,
               has(kPeerWroteLate) ? "it wrote to us" : "time");
      // Not posted when the transport is gone anyway.
      if (!(state_ & kError) && ctrl_ready()) send_ctrl(kCtrlDisconnect);
      state_ = (state_ & ~kConnected) | kDisconnected;
      linger_deadline_ = now + kDisconnectDrain;
    } else {
      linger_deadline_ = std::min(linger_deadline_, now + kDisconnectDrain);
    }
    if (!sends_drained() && !(state_ & kError) && now < linger_deadline_) return false;
    if (ep_) ep_->disconnect();
    kick_waiters();
    set(kInLinger, false);
    release_now = has(kClosed);
  }
  if (release_now) release();
  return true;
}

void Socket::close() {
  KeepaliveService::instance().remove(this);
  bool copy;
  {
    std::lock_guard<FutexMutex> g(mu_);
    copy = has(kSharedElsewhere) || endpoint_foreign() || given_away_;
  }
  if (copy) {
    drop_copy();
    return;
  }
  bool listened = false;
  {
    Lock lk(mu_);
    if (phase() == kListening) {
      lk.unlock();
      ListenService::instance().remove(this);
      lk.lock();
      for (auto& s : accept_queue_) s->close();
      accept_queue_.clear();
      if (starved_ep_) starved_ep_->reject();
      starved_ep_.reset();
      listener_.reset();
      listened = true;
    }
  }
  if (listened) reserve_end();  // outside our lock (fd_spare.h)
  bool connected;
  {
    std::lock_guard<FutexMutex> g(mu_);
    connected = state_ & kConnected;
    if (connected && !lingering() && !rmsg_.empty()) {
      reset_on_close();
      connected = false;
    }
  }
  if (connected) shutdown(SHUT_RDWR);
  {
    std::lock_guard<FutexMutex> g(mu_);
    kick_waiters();
    if (has(kInLinger) || shutting_) {
      set(kClosed);  // the linger, or the shutdown under way, releases it
      return;
    }
  }
  release();
}

void Socket::reset_on_close() {
  SS_DEBUG("rsocket: fd %d: closed with %u bytes unread: reset", fd_, rbuf_queued_);
  state_ = (state_ & ~(kConnected | kReadable | kWritable)) | kDisconnected;
  ep_->disconnect();
  kick_waiters();
}

void Socket::close_at_exit() {
  KeepaliveService::instance().remove(this);
  {
    // Held: by a thread still running, or one a handler calling exit
    // interrupted. Left to the transport's end rather than waited for.
    Lock g(mu_, std::try_to_lock);
    if (!g.owns_lock()) return;
    if (!(state_ & kConnected) || lingering() || endpoint_foreign()) return;
    if (has(kSharedElsewhere) || share_.holders() > 1) {
      // Shared with another process (fork): its holder goes on with it.
      // A process that moved it (holds the turn) leaves it as a kernel
      // socket's writer and reader would: what it sent leaves (its writes
      // were taken; a provider may still hold them: tcp's queue), and
      // with nothing unread the peer's credits come back whole, so its
      // count says we read all it sent (a transport end is then its end
      // of stream, engine.cc).
      if (!share_.holds_turn()) return;
      if (rmsg_.empty() && ctrl_ready()) send_credits();
      const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      auto over = [&] { return (state_ & kError) || std::chrono::steady_clock::now() > end; };
      // What this process moved is left for the others, once the
      // transport took it all (the endpoint may still hold bytes of a
      // frame after the engine's sends completed); else a copy as current
      // as ours may go on.
      for (;;) {
        while (wait_for(g, false, [&] { return sends_drained() || over(); }) == -EINTR) {
        }
        if (hand_over_locked()) return;
        // Retried only for what the endpoint still flushes: with work of
        // the engine's own under way (another thread's call) none comes.
        if (over() || !quiet_locked()) break;
      }
      share_.give_up_turn();
      return;
    }
    if (!rmsg_.empty()) {
      reset_on_close();
      return;
    }
    // No linger: the DISCONNECT now (the peer reads its end of stream),
    // once what we sent has left.
    opt_.linger = true;
    opt_.linger_s = 0;
  }
  shutdown(SHUT_RDWR);
}

bool Socket::defer_close() {
  std::lock_guard<FutexMutex> g(mu_);
  // A copy another process holds goes at once (close: drop_copy); so
  // does a connection no call is using.
  if (has(kSharedElsewhere) || endpoint_foreign() || !(sending_.busy || receiving_.busy))
    return false;
  // The call ends as it would have (data, the peer's end, a signal, its
  // timeout) and closes then (api.cc, on_either), the program's number
  // held till it is. Listed under mu_: listed exactly while deferred.
  close_deferred_ = true;
  fork::defer_close(weak_from_this());
  return true;
}

bool Socket::take_deferred_close_locked() {
  std::lock_guard<FutexMutex> g(mu_);
  if (!close_deferred_ || sending_.busy || receiving_.busy) return false;
  close_deferred_ = false;
  fork::end_deferred_close(this);
  return true;
}

void Socket::close_in_fork_child() {
  // Done before the fork (the flag is the parent's at that moment).
  if (!close_deferred_.load(std::memory_order_relaxed)) return;
  fork_child();  // the blocked call's turn and lock are the parent thread's
  close_deferred_ = false;
  set(kInLinger, false);  // no linger thread here either
  if (ep_) {
    ep_->drop_in_fork_child(fd_);
    (void)ep_.release();  // never called nor destroyed here (its memory stays)
  } else {
    own_close(fd_);
  }
  // The preload's lock is free by now: its child handler, registered at
  // its load, ran before the fork registry's (registered at first use).
  if (auto closed = g_fork_closed.load(std::memory_order_acquire)) closed(fd_);
  set_phase(kDisconnected);
  kick_waiters();
}

bool Socket::endpoint_foreign() const {
  // A verbs endpoint's objects live in the parent's uverbs context, and
  // riomap targets are placed by a thread only the parent has: destroying
  // either from a child would reach into the parent.
  return ep_ && made_in_ != getpid() && (!(caps_ & prov::kCapForkCopies) || !iomaps_.empty());
}

void Socket::drop_copy() {
  std::lock_guard<FutexMutex> g(mu_);
  kick_waiters();
  // An rshutdown under way (or lingering) ends the connection for every
  // holder, as a kernel shutdown(2) does: it releases when it is done.
  if (has(kInLinger) || shutting_) {
    set(kClosed);
    return;
  }
  if (endpoint_foreign()) (void)ep_.release();  // kept, never destroyed: not ours
  ::close(fd_);  // no shutdown, no lingering close: the other copy lives on
  free_buffers();
}

void Socket::release() {
  std::lock_guard<FutexMutex> g(mu_);
  if (ep_) {
    ep_->disconnect();
    ep_->close_descriptor(fd_);
  } else {
    ::close(fd_);
  }
  free_buffers();
}

}  // namespace ss::rs
