// The rsockets v1 protocol engine: completions, credits, target-SGL
// updates, control messages and waiting. Runs under Socket::mu_.
#include <poll.h>
#include <sys/epoll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "librsocket/settings.h"
#include "core/base/library_thread.h"
#include "core/base/log.h"
#include "core/base/sandbox.h"
#include "librsocket/socket.h"

namespace ss::rs {

namespace {
constexpr int kCqBatch = 32;
constexpr unsigned kCmCheckEvery = 16;

RsSge maybe_swap(RsSge s, bool swap) {
  if (!swap) return s;
  return {__builtin_bswap64(s.addr), __builtin_bswap32(s.key), __builtin_bswap32(s.length)};
}

// Fields of our target table change under us (the peer writes them).
RsSge load(const RsSge& shared) {
  RsSge s;
  __atomic_load(&shared.addr, &s.addr, __ATOMIC_ACQUIRE);
  __atomic_load(&shared.key, &s.key, __ATOMIC_ACQUIRE);
  __atomic_load(&shared.length, &s.length, __ATOMIC_ACQUIRE);
  return s;
}
// The errno of a connection whose transport failed: ENOMEM, EMFILE or
// ENFILE when this process had no room (memory, a descriptor) for the
// peer's memory (a socket call out of either says so), else a reset.
int transport_errno(const prov::Endpoint& ep) {
  const int e = ep.cm_error();
  return e == ENOMEM || e == EMFILE || e == ENFILE ? e : ECONNRESET;
}

}  // namespace

void Socket::set_error(int err, const char* why) {
  // Connecting too: an accepted socket still finishing its handshake gets
  // no event once its transport is torn down.
  if ((state_ & kConnected) || phase() == kConnecting) {
    // Info, not warning: a peer that resets is no fault of this process.
    SS_INFO("rsocket: fd %d: connection failed: %s (%s)", fd_, why, strerror(err));
    set_phase(kError);
    err_ = err;
  }
}

int Socket::process_cq(Lock&) {
  // Not before the connecting side has set up from the peer's reply: the
  // provider may already hold the peer's first messages (a buffer update
  // right behind the reply), and the set-up would overwrite what they
  // brought.
  if (!ep_ || has(kReplyPending)) return 0;
  if (!may_look()) return has(kStale) ? -ECONNRESET : 0;
  // Where the peer's next message will land: fetch it while we look for
  // its completion, so the two cross-core misses overlap instead of
  // following each other (the sender writes the data before the entry).
  if (rbuf_) __builtin_prefetch(rbuf_ + rbuf_in_pos_);
  prov::Completion wc[kCqBatch];
  int total = 0;
  for (;;) {
    int n = ep_->poll_cq(wc, kCqBatch);
    if (n < 0) {
      set_error(-n, "polling completions failed");
      return n;
    }
    // A race with a sibling: what this copy's endpoint read is not for
    // the state another process left.
    if (n > 0 && !may_move_as_is()) return has(kStale) ? -ECONNRESET : 0;
    for (int i = 0; i < n; i++) handle_completion(wc[i]);
    total += n;
    if (n < kCqBatch) break;
  }
  // Transport loss is rare: look for it when nothing arrived, every few
  // polls (a spinning caller polls millions of times).
  if ((state_ & kConnected) && total == 0 && ++idle_cq_polls_ % kCmCheckEvery == 0) {
    prov::CmEvent ev;
    // The transport went away without a DISCONNECT message (ended or
    // reset: the peer's process was killed, no code ran, or it reset on
    // close). Linux's TCP says FIN when the peer had read all we sent,
    // else reset; so do we where the transport is a kernel stream (tcp,
    // shm: ECONNRESET, its end). A transport whose sends found the peer
    // gone (EPIPE: it never read them, e.g. it gave up its connect before
    // our reply) is a reset, unless what it lost were only our credit
    // updates to a peer that sent us data and read all ours (they met its
    // transport's end); so is verbs' disconnect without one: the
    // fabric does not tell a process's death from a broken connection
    // (siw tears a connection down after a peer's access violation as it
    // does after the peer's exit). Queued data stays readable.
    if (ep_->cm_progress(&ev) == 0 &&
        (ev == prov::CmEvent::kDisconnected || ev == prov::CmEvent::kError)) {
      const int why = ep_->cm_error();
      const bool lost = why == EPIPE || why == ECONNRESET || ev == prov::CmEvent::kDisconnected;
      if (lost && (why == ECONNRESET || (why == EPIPE && heard_data_)) && peer_read_all()) {
        peer_shut_writing();
        set(kTransportEnded);
      } else if (lost)
        set_error(ECONNRESET, "the transport ended without a disconnect message, our data unread");
      else
        set_error(transport_errno(*ep_), "the transport failed");
    }
  }
  // Even with nothing new: a reader looping for MSG_WAITALL consumed
  // since its last look, and the peer may be waiting for those credits.
  give_credits();
  if (total) kick_waiters();
  return total;
}

void Socket::peer_disconnected() {
  state_ = (state_ & ~(kConnected | kReadable | kWritable)) | kDisconnected;
}

void Socket::peer_shut_writing() {
  if (state_ & kWritable)
    state_ &= ~kReadable;
  else
    state_ = (state_ & ~(kConnected | kReadable)) | kDisconnected;
}

void Socket::fail_connection(const char* why, bool peer_fault) {
  if (peer_fault) set(kPeerDropped);
  set_error(ECONNRESET, why);
  ep_->disconnect();
  kick_waiters();
}

// An SGL update may carry a new target buffer, written into its slot
// before the update's notification: take it, now that this is here.
void Socket::take_target_buffer(uint32_t len) {
  RsSge& slot = target_sgl_[sgl_slot_];
  const bool len_unknown = caps_ & prov::kCapNoWriteLen;
  if (len_unknown) {
    // The notification cannot tell a credit-only update from one that
    // wrote the slot: slots are emptied once taken, so a length means a
    // new buffer (the peer writes a slot again only after we used it).
    if (__atomic_load_n(&slot.length, __ATOMIC_ACQUIRE) == 0) return;
  } else if (len != sizeof(RsSge)) {
    return;  // credits only
  }
  target_[sgl_slot_] = load(slot);
  if (len_unknown) __atomic_store_n(&slot.length, 0, __ATOMIC_RELAXED);
  sgl_slot_ = (sgl_slot_ + 1) % kSglSize;
}

void Socket::handle_recv(uint32_t imm, uint32_t len) {
  uint32_t op = imm_op(imm), data = imm_data(imm);
  switch (op) {
    case kOpSgl:
      sseq_comp_ = static_cast<uint16_t>(data);
      take_target_buffer(len);
      break;
    case kOpIomapSgl:
      // Counted as consumed: the sender charged a credit for it (upstream
      // never gives it back, which slowly closes the window).
      rseq_no_++;
      if (data < peer_iomaps_.size())
        memcpy(&peer_iomaps_[data], target_iomap_ + data * kIomapEntrySize, kIomapEntrySize);
      break;
    case kOpCtrl:
      if (data == kCtrlDisconnect) {
        peer_disconnected();
      } else if (data == kCtrlShutdown) {
        peer_shut_writing();
      }
      break;
    case kOpData: {
      // Data lands in order, each message inside one published half of
      // rbuf. A message that would not (or a peer that ignores its credits)
      // fails the connection: rrecv never reads outside rbuf.
      const uint32_t half = opt_.rbuf_size / 2;
      const bool len_known = !(caps_ & prov::kCapNoWriteLen);
      if ((len_known && data != len) || rmsg_.size() >= opt_.rq_size || data > half ||
          ring_wrap(rbuf_in_pos_, half) + data > half || rbuf_queued_ + data > opt_.rbuf_size) {
        SS_WARN("rsocket: fd %d: peer broke the protocol (data %u, len %u); connection failed", fd_,
                data, len);
        fail_connection("protocol error", true);
        return;
      }
      // The data was just written, maybe by another core: start fetching
      // it now, so the miss overlaps the bookkeeping before rrecv copies.
      __builtin_prefetch(rbuf_ + rbuf_in_pos_);
      rbuf_in_pos_ = ring_wrap(rbuf_in_pos_ + data, opt_.rbuf_size);  // data <= half
      rbuf_queued_ += data;
      heard_data_ = true;
      if (lingering()) set(kPeerWroteLate);
      if (data)
        rmsg_.push_back({data});
      else
        rseq_no_++;  // nothing to read: consumed at once
      break;
    }
    default:
      SS_WARN("rsocket: fd %d: reserved operation %u from peer; connection failed", fd_, op);
      fail_connection("protocol error", true);
      break;
  }
}

// Each message uses up a posted receive: one that cannot be replaced
// would leave fewer receives than the credits we give, and the peer's
// sends would fail later with no cause in sight. Providers post receives
// without looking at the connection (a dead one flushes them), so a
// failure is ours (a full queue, ENOMEM) and fails the connection now.
void Socket::repost_recv() {
  int rc = ep_->post_recv(0);
  if (!rc || !(state_ & kConnected)) return;
  SS_WARN("rsocket: fd %d: re-posting a receive failed (%s); connection failed", fd_,
          strerror(-rc));
  fail_connection("re-posting a receive failed", false);
}

void Socket::handle_completion(const prov::Completion& wc) {
  if (wc.op == prov::WcOp::kRecvImm) {
    if (has(kPeerDropped)) return;
    if (wc.status == 0) {
      set(kAwaitPeerFirst, false);
      handle_recv(wc.imm, wc.byte_len);
      if (ep_ && (caps_ & prov::kCapRecvWr)) repost_recv();
    } else if (wc.status != ECONNRESET && (state_ & kConnected)) {
      // Not a flush: what arrived was no message of this protocol (e.g. a
      // send bigger than the receive's buffer).
      SS_WARN("rsocket: fd %d: receive failed (%s); connection failed", fd_, strerror(wc.status));
      fail_connection("receive failed", true);
    }
    return;
  }
  handle_send_completion(wc.wr_id, wc.status);
}

bool Socket::may_look() {
  if (!share_.is_open()) return true;
  if (in_library_thread()) return share_.settled();
  if (share_.current() || (!has(kStale) && take_over_locked())) return true;
  went_stale();
  return false;
}

bool Socket::may_move() {
  if (!share_.is_open()) return true;
  if (in_library_thread()) return share_.take_settled();
  if (share_.take_turn() || (!has(kStale) && take_over_locked() && share_.take_turn())) return true;
  went_stale();
  return false;
}

bool Socket::may_move_as_is() {
  if (!share_.is_open()) return true;
  if (in_library_thread()) return share_.take_settled();
  if (share_.take_turn()) return true;
  went_stale();  // another process moved it while this one was at work on its copy
  return false;
}

void Socket::went_stale() {
  if (has(kStale)) return;
  set(kStale);
  SS_WARN_ONCE(
      "rsocket: fd %d: another process moved this connection on since this process's copy of it "
      "was made (fork): a copy cannot follow, the connection fails here (rsocket(7), Fork)",
      fd_);
  set_error(ECONNRESET, "out of date: another process moved it on");
  kick_waiters();
}

int Socket::post(const prov::SendWr& wr) {
  // The request was built from this copy's state: it goes only while that
  // is the current one (after a take-over it would not match the state).
  if (!may_move_as_is()) return has(kStale) ? -ECONNRESET : -EAGAIN;
  int rc = ep_->post_send(wr);
  if (rc != prov::kPostDone) return rc;
  handle_send_completion(wr.wr_id, 0);
  return 0;
}

int Socket::post_ctrl(const prov::SendWr& wr) {
  ctrl_avail_--;
  int rc = post(wr);
  if (rc) ctrl_avail_++;  // not posted: the slot stays ours (a close waits for all of them)
  return rc;
}

void Socket::handle_send_completion(uint64_t wr_id, int status) {
  uint32_t op = imm_op(static_cast<uint32_t>(wr_id));
  uint32_t data = imm_data(static_cast<uint32_t>(wr_id));
  switch (op) {
    case kOpSgl:
    case kOpCtrl:
      ctrl_avail_++;
      break;
    case kOpData:
    case kOpWrite:
      sqe_avail_++;
      sbuf_bytes_avail_ += data;
      break;
    case kOpIomapSgl:
      sqe_avail_++;
      sbuf_bytes_avail_ += kIomapEntrySize;
      break;
  }
  // A flushed send (ECONNRESET) only means the transport ended; that is
  // reported after the messages that arrived before it, by cm_progress.
  if (status && status != ECONNRESET && (state_ & kConnected)) set_error(EIO, "a send failed");
}

bool Socket::can_send() const {
  return sqe_avail_ > 0 && sbuf_bytes_avail_ >= kSndLowat && sseq_no_ != sseq_comp_ &&
         target_[target_sge_].length != 0 && !has(kAwaitPeerFirst);
}

void Socket::give_credits() {
  // Not while lingering: its control slots are kept for the DISCONNECT.
  if (!(state_ & kConnected) || lingering() || !ctrl_ready()) return;
  bool half_free = rbuf_bytes_avail_ >= opt_.rbuf_size / 2;
  if (half_free || static_cast<int16_t>(rseq_no_ - rseq_comp_) >= 0) send_credits();
}

int Socket::send_credits() {
  uint32_t limit = static_cast<uint16_t>(rseq_no_ + opt_.rq_size);
  prov::SendWr wr;
  wr.op = prov::Op::kWriteImm;
  wr.wr_id = make_imm(kOpSgl, limit);
  wr.imm = make_imm(kOpSgl, limit);
  wr.rkey = remote_sgl_.key;
  RsSge sge{};
  const bool publish = rbuf_bytes_avail_ >= opt_.rbuf_size / 2;
  if (publish) {
    sge = maybe_swap(
        {reinterpret_cast<uint64_t>(rbuf_ + rbuf_free_offset_), rbuf_rkey_, opt_.rbuf_size / 2},
        swap_sgl_);
    wr.remote_addr = remote_sgl_.addr + remote_sge_ * sizeof(RsSge);
    wr.sge[0] = {reinterpret_cast<uint64_t>(&sge), sizeof sge, 0};
    wr.num_sge = 1;
    wr.inline_data = true;
  } else {
    wr.remote_addr = remote_sgl_.addr;
  }
  // A transport that is gone is reported by cm_progress, after the
  // messages that arrived before it: don't fail the socket from here.
  // Nothing is counted as given until posted: a half marked published
  // but never sent would be lost to the peer for good.
  if (int rc = post_ctrl(wr)) return rc;
  rseq_comp_ = static_cast<uint16_t>(rseq_no_ + opt_.rq_size / 2);
  if (publish) {
    rbuf_bytes_avail_ -= opt_.rbuf_size / 2;
    rbuf_free_offset_ = (rbuf_free_offset_ + opt_.rbuf_size / 2) % opt_.rbuf_size;
    remote_sge_ = (remote_sge_ + 1) % static_cast<int>(remote_sgl_.length);
  }
  return 0;
}

int Socket::send_ctrl(uint32_t ctrl) {
  prov::SendWr wr;
  wr.op = prov::Op::kWriteImm;
  wr.wr_id = make_imm(kOpCtrl, ctrl);
  wr.imm = make_imm(kOpCtrl, ctrl);
  wr.remote_addr = remote_sgl_.addr;
  wr.rkey = remote_sgl_.key;
  return post_ctrl(wr);
}

// Posts one write of `len` bytes. From user memory when it fits inline,
// else staged in the circular sbuf (two SGEs when it wraps).
int Socket::post_data(uint32_t op, uint32_t imm, const void* src, uint32_t len, bool from_user,
                      uint64_t raddr, uint32_t rkey, bool with_imm) {
  prov::SendWr wr;
  wr.op = with_imm ? prov::Op::kWriteImm : prov::Op::kWrite;
  wr.wr_id = make_imm(op, len);
  wr.imm = imm;
  wr.remote_addr = raddr;
  wr.rkey = rkey;
  // Providers that take the bytes at post time need no staging copy.
  const bool direct = from_user && (len <= max_inline_ || (caps_ & prov::kCapCopyOnPost));
  if (direct) {
    wr.sge[0] = {reinterpret_cast<uint64_t>(src), len, 0};
    wr.num_sge = len ? 1 : 0;
    wr.inline_data = true;
  } else {
    uint32_t first = std::min(len, opt_.sbuf_size - sbuf_head_);
    memcpy(sbuf_ + sbuf_head_, src, first);
    wr.sge[0] = {reinterpret_cast<uint64_t>(sbuf_ + sbuf_head_), first, sbuf_lkey_};
    wr.num_sge = 1;
    if (first < len) {
      memcpy(sbuf_, static_cast<const uint8_t*>(src) + first, len - first);
      wr.sge[1] = {reinterpret_cast<uint64_t>(sbuf_), len - first, sbuf_lkey_};
      wr.num_sge = 2;
    }
    sbuf_head_ = (sbuf_head_ + len) % opt_.sbuf_size;
  }
  wr.inline_data = direct;
  sqe_avail_--;
  sbuf_bytes_avail_ -= len;
  int rc = post(wr);
  if (rc) {
    const bool lost = -rc == ENOTCONN || -rc == ECONNRESET;  // the transport's end
    set_error(lost ? transport_errno(*ep_) : -rc, "posting a write failed");
    return rc;
  }
  return 0;
}

// Sleeps until the endpoint or another thread of this socket signals
// (bounded by wake_up_interval and `until`); -EINTR when a signal handler
// ended it.
int Socket::block_once(Lock& lk, Deadline until, bool quiet) {
  if (ep_->arm() != 0) return 0;  // something arrived meanwhile: look again
  int ms = sleep_ms_until(until, static_cast<int>(settings::get(settings::Id::kWakeUpInterval)));
  if (phase() == kConnecting) ms = connect_sleep_ms(ms);
  int rc = kick_.sleep(lk, {ep_->event_fd(), ep_->event_mask(), 0}, ms, quiet);
  // Always: a provider counts its sleepers and must hear that this one woke.
  if (ep_) ep_->ack_events();
  idle_cq_polls_ = kCmCheckEvery - 1;  // the next empty poll looks at the connection
  return rc;
}

int Socket::wait_idle(Lock& lk, bool nonblock, SpinPhase* spin, Deadline until, bool quiet) {
  if (state_ & (kError | kConnectError)) return 0;  // callers check state
  if (!(state_ & kConnected) && phase() != kConnecting) return 0;
  if (nonblock) return -EAGAIN;
  const auto now = std::chrono::steady_clock::now();
  if (now >= until) return -EAGAIN;  // SO_RCVTIMEO/SO_SNDTIMEO ran out, as the kernel's
  // Busy-poll for polling_time before sleeping.
  if (spin->over(
          now, [] { return std::chrono::microseconds(settings::get(settings::Id::kPollingTime)); }))
    if (int rc = block_once(lk, until, quiet)) return rc;
  return 1;
}

void Socket::Turn::wait(Lock& lk) {
  while (d_->busy) {
    // The holder sleeps with mu_ released: wait as it does, and give way
    // when that cannot sleep (a connection gone), so the holder can finish.
    s_.wait_for(lk, false, [this] { return !d_->busy; });
    if (d_->busy) {
      lk.unlock();
      sandbox::yield_cpu();
      lk.lock();
    }
  }
}

int Socket::data_error(bool sending) {
  // Why a connection failed is said once (SO_ERROR's reading clears it
  // too); then a send gets EPIPE and a receive the end of stream, as on
  // Linux after a reset.
  if (state_ & kError) {
    // Left to its maker (fork): each call says why.
    if (!ep_ && !has(kExecLost)) return -(err_ ? err_ : ECONNRESET);
    return err_ ? -std::exchange(err_, 0) : (sending ? -EPIPE : 0);
  }
  if (sending) {
    if (has(kShutWr)) return -EPIPE;
    if (state_ & kDisconnected) return -EPIPE;
  }
  if (phase() == kConnecting) return -EAGAIN;
  return -ENOTCONN;
}

}  // namespace ss::rs

namespace ss::rs {

bool Socket::sends_refused() {
  // The peer is gone: Linux's first send after a dead peer's FIN meets a
  // reset, and the socket is then hung up. No send leaves here.
  if (has(kTransportEnded) && (state_ & kWritable)) peer_disconnected();
  return !(state_ & kWritable) || has(kShutWr);
}

short Socket::readiness(short events) {
  Lock lk(mu_);
  if (phase() == kListening && listen_shared_ && accept_queue_.empty()) {
    lk.unlock();
    serve_requests(true);  // shared by fork: rpoll takes a request itself
    lk.lock();
  }
  if (phase() != kListening && ep_) {
    if (phase() == kConnecting) progress_connect(lk);
    if (phase() != kConnecting && !(state_ & kConnectError)) process_cq(lk);
  }
  return ready_now(events);
}

short Socket::ready_now(short events) {
  if (has(kFellBack)) {  // the kernel socket's own connect (fall_back_to_kernel)
    pollfd p{fd_, events, 0};
    return ::poll(&p, 1, 0) > 0 ? p.revents : 0;
  }
  short rev = 0;
  if (phase() == kListening) {
    rev = accept_queue_.empty() && !accept_err_ ? 0 : POLLIN;  // raccept has an answer
    if (fork_err_) rev = POLLIN | POLLERR;                     // raccept says why
  } else if (ep_) {
    if (phase() == kConnecting) return 0;
    if (state_ & kConnectError) return (POLLIN | POLLOUT | POLLERR) & (events | POLLERR);
    if (rbuf_queued_ >= static_cast<uint32_t>(opt_.rcvlowat) || !(state_ & kReadable))
      rev |= POLLIN;
    if ((state_ & kWritable) && can_send()) rev |= POLLOUT;
    if (state_ & kDisconnected) rev |= POLLOUT;  // a send answers at once (EPIPE)
    // Hang-up only once nothing is left to read: an application that stops
    // at POLLHUP must still get the peer's last bytes (as with TCP's FIN).
    if (!(state_ & kReadable)) rev |= POLLRDHUP;  // the peer shut down writing
    if ((state_ & kDisconnected) && rmsg_.empty()) rev |= POLLHUP;
    if (lingering()) rev |= POLLHUP;  // both ways shut here, as Linux reports
    // Failed: reads and writes no longer block (they answer at once), and
    // POLLERR until a call or SO_ERROR took the error, as Linux's reset.
    if ((state_ & kError) && rmsg_.empty()) rev |= POLLOUT | POLLHUP | (err_ ? POLLERR : 0);
  } else if (phase() == kError) {
    rev = POLLIN | POLLOUT | POLLERR;  // left to its maker (fork): each call says why
  }
  return rev & (events | POLLERR | POLLHUP);
}

WaitTarget Socket::wait_target(short events, int* sleep_ms) {
  Lock lk(mu_);
  WaitTarget t;
  if (phase() == kListening) {
    t.fd = listen_shared_ && listener_ ? listener_->fd() : accept_efd_;
    t.events = POLLIN;
    return t;
  }
  if (has(kFellBack)) {
    t.fd = fd_;
    t.events = events;
    return t;
  }
  // Nothing will change by itself: sleep on nothing, only the timeout.
  if (!ep_ || !(state_ & (kConnected | kOpening))) return {WaitTarget::kTimeOnly};
  // As a waiter, an rshutdown or another thread's progress on this socket
  // wakes the rpoll at once (not at the next wake_up_interval).
  const bool joined = kick_.join() == 0;
  // A change since the caller's scan (an rshutdown while we were no
  // waiter yet) sent no kick: look once more, now that one would.
  if (ready_now(events) || ep_->arm() != 0) {
    if (joined) kick_.leave(false);
    return t;  // kReady
  }
  t.fd = ep_->event_fd();
  t.events = ep_->event_mask();
  if (joined) t.kick_fd = kick_.fd();
  if (phase() == kConnecting) *sleep_ms = connect_sleep_ms(*sleep_ms);
  return t;
}

bool Socket::change_count(uint64_t* count) {
  Lock lk(mu_);
  if (phase() == kListening) return false;
  if (has(kFellBack)) {  // the kernel socket's own events (watch_kernel_events)
    if (kernel_events_ep_ < 0) return false;
    epoll_event ev;
    if (::epoll_wait(kernel_events_ep_, &ev, 1, 0) > 0) changes_++;
    *count = changes_;
    return true;
  }
  if (ep_ && !(state_ & kConnectError) && phase() != kConnecting) process_cq(lk);
  *count = changes_;
  return true;
}

bool Socket::failed_unread() {
  Lock lk(mu_);
  return failed_unread(lk);
}

bool Socket::failed_unread(Lock& lk) {
  if (ep_ && (state_ & kConnected) && !(state_ & kError)) {
    // What a sleep's arming reads (a stream provider's end of stream,
    // which an established endpoint's cm_progress leaves to it), without
    // the sleep; then a look that checks the connection itself.
    if (ep_->arm() == 0) ep_->ack_events();
    idle_cq_polls_ = kCmCheckEvery - 1;
    process_cq(lk);
  }
  return (state_ & (kError | kConnectError)) && rmsg_.empty();
}

void Socket::after_wait(const WaitTarget& armed, bool kicked) {
  Lock lk(mu_);
  if (armed.kick_fd >= 0) kick_.leave(kicked);
  if (ep_ && phase() != kListening) ep_->ack_events();
  idle_cq_polls_ = kCmCheckEvery - 1;  // a wake-up may be the transport ending
}

}  // namespace ss::rs
