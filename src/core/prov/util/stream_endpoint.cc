#include "core/prov/util/stream_endpoint.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "core/base/fd_passing.h"
#include "core/base/fd_spare.h"
#include "core/base/library_thread.h"
#include "core/base/own_fd.h"
#include "core/base/sandbox.h"
#include "core/base/log.h"
#include "core/mem/region.h"

namespace ss::prov::util {

namespace {
// Payloads at least this large bypass the staging buffer.
constexpr size_t kDirectRxMin = 4096;
constexpr uint8_t kReject = 1;
}  // namespace

StreamEndpoint::StreamEndpoint(const StreamProto& proto, int fd, bool active)
    : proto_(proto),
      fd_(fd),
      active_(active),
      rx_size_(std::max<size_t>(proto.rx_staging, kFrameHeaderSize)),
      rx_buf_(new uint8_t[rx_size_]) {}  // not zeroed: pages the stream never reaches stay free

bool StreamEndpoint::set_destination(const sockaddr* dst, socklen_t len) {
  if (len > sizeof dst_) return false;
  memcpy(&dst_, dst, len);
  dst_len_ = len;
  return true;
}

void StreamEndpoint::init_passive(const uint8_t* pdata, size_t pdata_len) {
  peer_pdata_len_ = std::min(pdata_len, kMaxPrivateData);
  memcpy(peer_pdata_, pdata, peer_pdata_len_);
  cm_ = Cm::kAwaitAccept;
  rx_frames_ = 1;  // the hello, read by the listener
}

int StreamEndpoint::local_name(sockaddr_storage* addr, socklen_t* len) const {
  *len = sizeof(*addr);
  return ::getsockname(fd_, reinterpret_cast<sockaddr*>(addr), len) < 0 ? -errno : 0;
}

int StreamEndpoint::peer_name(sockaddr_storage* addr, socklen_t* len) const {
  *len = sizeof(*addr);
  return ::getpeername(fd_, reinterpret_cast<sockaddr*>(addr), len) < 0 ? -errno : 0;
}

int StreamEndpoint::on_ctrl_frame(const FrameHeader& h, const uint8_t*) {
  SS_WARN("%s: unexpected control frame %u from peer; connection failed", proto_.name, h.flags);
  return -EPROTO;
}

ssize_t StreamEndpoint::rx_read(void* buf, size_t len, bool* cut) {
  *cut = false;
  iovec iov{buf, len};
  int got = 0;
  const ssize_t n = recv_with_fds(fd_, &iov, 1, nullptr, 0, &got, MSG_DONTWAIT);
  if (n < 0) errno = static_cast<int>(-n);
  return n < 0 ? -1 : n;
}

StreamEndpoint::~StreamEndpoint() {
  set_async_progress(false);
  if (async_wake_fd_ >= 0) ::close(async_wake_fd_);
  if (notify_fd_ >= 0) ::close(notify_fd_);
}

uint32_t StreamEndpoint::caps() const {
  return kCapWrite | kCapWriteImm | kCapInline | kCapAsyncPlace | kCapCopyOnPost | kCapForkCopies;
}

int StreamEndpoint::setup(EndpointAttr* attr) {
  // The stream has no queue limits of its own; grant what was asked.
  attr->sq_size = std::clamp<uint32_t>(attr->sq_size, 16, 0xFFFE);
  attr->rq_size = std::clamp<uint32_t>(attr->rq_size, 16, 0xFFFE);
  attr->max_inline = std::min<uint32_t>(attr->max_inline, 0xFFFE);
  Guard lock(*this);
  max_cq_ = 2 * (attr->sq_size + attr->rq_size) + 64;
  return 0;
}

void StreamEndpoint::PassedFd::reset() {
  if (fd_ >= 0) release_number(fd_);  // a memfd the peer has now
  fd_ = -1;
}

int StreamEndpoint::reg_mr(void* addr, size_t len, int access, MemoryRegion* mr) {
  if (!addr || !len) return -EINVAL;
  *mr = regions_.add(addr, len, access);
  // The mapping outlives its memfd: an open one would only use up a
  // descriptor per buffer.
  if (!shares_memory(access)) mem::drop_backing(addr, len);
  return 0;
}

void StreamEndpoint::dereg_mr(MemoryRegion* mr) {
  Guard lock(*this);
  regions_.remove(*mr);
  // A write still arriving for this memory is discarded: the owner may free it.
  auto* base = static_cast<uint8_t*>(mr->addr);
  if (rx_in_payload_ && rx_dst_ && rx_dst_ >= base && rx_dst_ < base + mr->length)
    rx_dst_ = nullptr;
  *mr = MemoryRegion{};
}

int StreamEndpoint::connect(const void* pdata, size_t len) {
  Guard lock(*this);
  if (!active_ || cm_ != Cm::kIdle || len > kMaxPrivateData) return -EINVAL;
  if (dst_len_) {
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&dst_), dst_len_) < 0 &&
        errno != EINPROGRESS)
      return -errno;
  }
  FrameHeader h{FrameType::kHello, proto_.hello_tag, static_cast<uint32_t>(len), 0,
                kHelloVersion,     kHelloMagic};
  Sge sge{reinterpret_cast<uint64_t>(pdata), static_cast<uint32_t>(len), 0};
  int rc = queue_frame(h, &sge, len ? 1 : 0, 0, false, true);
  if (rc) return rc;
  cm_ = Cm::kConnecting;
  return 0;
}

int StreamEndpoint::accept(const void* pdata, size_t len) {
  Guard lock(*this);
  if (active_ || cm_ != Cm::kAwaitAccept || len > kMaxPrivateData) return -EINVAL;
  FrameHeader h{FrameType::kHelloReply, 0,          static_cast<uint32_t>(len), 0,
                kHelloVersion,          kHelloMagic};
  Sge sge{reinterpret_cast<uint64_t>(pdata), static_cast<uint32_t>(len), 0};
  int rc = queue_frame(h, &sge, len ? 1 : 0, 0, false, true);
  if (rc) return rc;
  cm_ = Cm::kEstablished;
  on_established();
  return 0;
}

int StreamEndpoint::reject() {
  Guard lock(*this);
  if (active_ || cm_ != Cm::kAwaitAccept) return -EINVAL;
  FrameHeader h{FrameType::kHelloReply, kReject, 0, 0, kHelloVersion, kHelloMagic};
  queue_frame(h, nullptr, 0, 0, false, true);
  cm_ = Cm::kClosed;
  return 0;
}

const uint8_t* StreamEndpoint::peer_private_data(size_t* len) const {
  *len = peer_pdata_len_;
  return peer_pdata_;
}

void StreamEndpoint::fail(int err, Cm state) {
  if (cm_ == Cm::kFailed || cm_ == Cm::kClosed) return;
  SS_DEBUG("%s: fd %d: transport %s: %s", proto_.name, fd_,
           state == Cm::kClosed ? "closed" : "failed", strerror(err));
  error_ = err;
  owes_established_ = cm_ == Cm::kEstablished && !cm_reported_;
  cm_ = state;
  cm_reported_ = false;
  // Everything still queued is flushed with an error, as a QP in error would.
  for (const PendingSend& p : sendq_)
    if (p.signal) cq_.push_back({p.wr_id, ECONNRESET, WcOp::kSend, 0, 0});
  sendq_.clear();
  // Only the write side: bytes the peer has not read yet must still reach it.
  ::shutdown(fd_, SHUT_WR);
}

void StreamEndpoint::disconnect() {
  Guard lock(*this);
  // Frames already queued were accepted from the caller: give them a
  // bounded chance to reach the kernel before the stream closes.
  for (int i = 0; i < 100 && !sendq_.empty() && cm_ == Cm::kEstablished; i++) {
    flush_sends();
    pollfd p{fd_, POLLOUT, 0};
    if (!sendq_.empty()) ::poll(&p, 1, 10);
  }
  if (cm_ == Cm::kEstablished) cm_reported_ = true;  // local choice: no event
  fail(ECONNRESET, Cm::kClosed);
  cm_reported_ = true;
  owes_established_ = false;
}

int StreamEndpoint::cm_progress(CmEvent* ev) {
  Guard lock(*this);
  // Once established, poll_cq moves the stream; don't read it twice.
  if (cm_ != Cm::kEstablished) progress_locked();
  return cm_report_locked(ev);
}

int StreamEndpoint::cm_report_locked(CmEvent* ev) {
  *ev = CmEvent::kNone;
  if (std::exchange(owes_established_, false)) {
    *ev = CmEvent::kEstablished;
    return 0;
  }
  if (cm_reported_) return -EAGAIN;
  // What arrived before the connection went away is delivered first.
  if (!cq_.empty() && (cm_ == Cm::kFailed || cm_ == Cm::kClosed)) return -EAGAIN;
  switch (cm_) {
    case Cm::kEstablished:
      *ev = CmEvent::kEstablished;
      break;
    case Cm::kFailed:
      *ev = (error_ == ECONNRESET || error_ == EPIPE) && active_ ? CmEvent::kDisconnected
                                                                 : CmEvent::kError;
      if (error_ == ECONNREFUSED && active_) *ev = CmEvent::kRejected;
      break;
    case Cm::kClosed:
      *ev = CmEvent::kDisconnected;
      break;
    default:
      return -EAGAIN;
  }
  cm_reported_ = true;
  return 0;
}

// One sendmsg of what is left of `p`, with its descriptor if it has one.
ssize_t StreamEndpoint::send_pending(PendingSend& p) {
  const int pass_fd = p.pass_fd.get();
  ssize_t n = send_with_fds(fd_, p.iov, p.iovcnt, &pass_fd, pass_fd >= 0 ? 1 : 0, MSG_DONTWAIT);
  if (n < 0) {
    errno = static_cast<int>(-n);
    return -1;
  }
  if (n == 0) return 0;
  p.pass_fd.reset();  // the kernel took it with the first byte
  p.remaining -= n;
  // Advance the iovecs past what went out.
  size_t done = n;
  int i = 0;
  while (i < p.iovcnt && done >= p.iov[i].iov_len) done -= p.iov[i++].iov_len;
  if (i) {
    memmove(p.iov, p.iov + i, (p.iovcnt - i) * sizeof(iovec));
    p.iovcnt -= i;
  }
  if (p.iovcnt) {
    p.iov[0].iov_base = static_cast<uint8_t*>(p.iov[0].iov_base) + done;
    p.iov[0].iov_len -= done;
  }
  return n;
}

int StreamEndpoint::queue_frame(const FrameHeader& h, const Sge* sge, int nsge, uint64_t wr_id,
                                bool signal, bool copy_source, int pass_fd) {
  PendingSend p;
  p.pass_fd = PassedFd(pass_fd);
  if (cm_ == Cm::kFailed || cm_ == Cm::kClosed) return -ECONNRESET;
  tx_frames_++;
  encode_frame(h, p.header);
  p.iov[0] = {p.header, kFrameHeaderSize};
  p.iovcnt = 1;
  p.remaining = kFrameHeaderSize;
  for (int i = 0; i < nsge; i++) {
    if (!sge[i].length) continue;
    p.iov[p.iovcnt++] = {reinterpret_cast<void*>(sge[i].addr), sge[i].length};
    p.remaining += sge[i].length;
  }
  p.wr_id = wr_id;
  p.signal = signal;
  bool flush = false;
  if (sendq_.empty() && cm_ != Cm::kConnecting) {
    // Nothing ahead of it: straight from the stack, queued only if the
    // kernel does not take it all (no queue element, no allocation).
    ssize_t n = send_pending(p);
    if (n > 0 && p.remaining == 0) return signal ? kPostDone : 0;
    // A hard error: queue the frame and let flush_sends report it.
    flush = n < 0 && errno != EAGAIN && errno != EINTR && errno != ENOTCONN;
  }
  sendq_.push_back(std::move(p));
  // The frame's iovecs may point into the header they were built with:
  // move them to the queued copy's header.
  PendingSend& q = sendq_.back();
  for (int i = 0; i < q.iovcnt; i++) {
    auto* b = static_cast<uint8_t*>(q.iov[i].iov_base);
    if (b >= p.header && b < p.header + kFrameHeaderSize)
      q.iov[i].iov_base = q.header + (b - p.header);
  }
  if (flush) flush_sends();
  if (!sendq_.empty() && async_.joinable()) kick_async();
  if (copy_source && !sendq_.empty() && &sendq_.back() == &q) {
    // Still (partly) queued while the caller gets its buffer back: copy
    // what is left of the payload; the header stays in the element.
    size_t payload = 0;
    int first_payload = 0;
    while (first_payload < q.iovcnt && q.iov[first_payload].iov_base >= q.header &&
           q.iov[first_payload].iov_base < q.header + kFrameHeaderSize)
      first_payload++;
    for (int i = first_payload; i < q.iovcnt; i++) payload += q.iov[i].iov_len;
    if (payload) {
      q.owned.resize(payload);
      size_t off = 0;
      for (int i = first_payload; i < q.iovcnt; i++) {
        memcpy(q.owned.data() + off, q.iov[i].iov_base, q.iov[i].iov_len);
        off += q.iov[i].iov_len;
      }
      q.iov[first_payload] = {q.owned.data(), payload};
      q.iovcnt = first_payload + 1;
    }
  }
  return 0;
}

void StreamEndpoint::flush_sends() {
  while (!sendq_.empty()) {
    PendingSend& p = sendq_.front();
    ssize_t n = send_pending(p);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR || errno == ENOTCONN) return;
      SS_DEBUG("%s: fd %d: send failed: %s", proto_.name, fd_, strerror(errno));
      if (errno == EPIPE || errno == ECONNRESET) {
        // The peer closed: what it sent before is still in our socket.
        // Flush our queue with errors and let the receive side read on
        // until the end of the stream, which then fails the connection
        // (EPIPE: our bytes were lost, no orderly end).
        sends_lost_ = true;
        for (const PendingSend& q : sendq_)
          if (q.signal) cq_.push_back({q.wr_id, ECONNRESET, WcOp::kSend, 0, 0});
        sendq_.clear();
        return;
      }
      fail(errno, Cm::kFailed);
      return;
    }
    if (p.remaining) return;
    if (p.signal) cq_.push_back({p.wr_id, 0, WcOp::kSend, 0, 0});
    sendq_.pop_front();
  }
}

// Parses complete frames out of the staging buffer; false when it needs more bytes.
bool StreamEndpoint::parse_rx() {
  for (;;) {
    if (rx_in_payload_) {
      size_t want = rx_hdr_.length - rx_done_;
      size_t have = std::min(want, rx_end_ - rx_begin_);
      if (have) {
        if (rx_dst_) memcpy(rx_dst_ + rx_done_, rx_buf_.get() + rx_begin_, have);
        rx_begin_ += have;
        rx_done_ += have;
      }
      if (rx_done_ < rx_hdr_.length) return false;
      rx_in_payload_ = false;
      rx_frames_++;
      if (rx_hdr_.type == FrameType::kCtrl) {
        int rc = on_ctrl_frame(rx_hdr_, rx_ctrl_);
        if (rc) {
          fail(-rc, Cm::kFailed);
          return false;
        }
        continue;
      }
      if (rx_hdr_.type == FrameType::kWriteImm) {
        // A peer that ignores its credits would grow the queue without bound.
        if (cq_.size() >= max_cq_) {
          SS_WARN("%s: peer overran its receive credits; connection failed", proto_.name);
          fail(EPROTO, Cm::kFailed);
          return false;
        }
        cq_.push_back({0, 0, WcOp::kRecvImm, rx_hdr_.imm, rx_hdr_.length});
      } else if (rx_hdr_.type == FrameType::kHelloReply) {
        if (rx_hdr_.flags == kReject) {
          fail(ECONNREFUSED, Cm::kFailed);
          return false;
        }
        cm_ = Cm::kEstablished;
        cm_reported_ = false;
        on_established();
      }
      continue;
    }
    if (rx_end_ - rx_begin_ < kFrameHeaderSize) return false;
    decode_frame(rx_buf_.get() + rx_begin_, &rx_hdr_);
    rx_begin_ += kFrameHeaderSize;
    rx_expect_large_ = rx_hdr_.length >= kDirectRxMin;
    rx_dst_ = nullptr;
    rx_done_ = 0;
    switch (rx_hdr_.type) {
      case FrameType::kHelloReply:
        if (cm_ != Cm::kAwaitReply || rx_hdr_.imm != kHelloMagic || rx_hdr_.rkey != kHelloVersion ||
            rx_hdr_.length > kMaxPrivateData) {
          SS_WARN("%s: malformed connection reply from peer; connection failed", proto_.name);
          fail(EPROTO, Cm::kFailed);
          return false;
        }
        rx_dst_ = peer_pdata_;
        peer_pdata_len_ = rx_hdr_.length;
        break;
      case FrameType::kWrite:
      case FrameType::kWriteImm:
        if (cm_ != Cm::kEstablished) {
          fail(EPROTO, Cm::kFailed);
          return false;
        }
        if (rx_hdr_.length) {
          rx_dst_ = regions_.resolve(rx_hdr_.rkey, rx_hdr_.remote_addr, rx_hdr_.length);
          if (!rx_dst_) {
            SS_WARN(
                "%s: peer wrote %u bytes at 0x%llx key %u outside what it was given; "
                "connection failed",
                proto_.name, rx_hdr_.length, static_cast<unsigned long long>(rx_hdr_.remote_addr),
                rx_hdr_.rkey);
            fail(EPROTO, Cm::kFailed);
            return false;
          }
        }
        break;
      case FrameType::kCtrl:
        if (rx_hdr_.length > kMaxCtrlPayload) {
          fail(EPROTO, Cm::kFailed);
          return false;
        }
        rx_dst_ = rx_ctrl_;
        break;
      default:
        SS_WARN("%s: unknown frame type %u from peer; connection failed", proto_.name,
                static_cast<unsigned>(rx_hdr_.type));
        fail(EPROTO, Cm::kFailed);
        return false;
    }
    rx_in_payload_ = true;
  }
}

void StreamEndpoint::progress_rx() {
  // A short read means the socket is empty for now: parse what came and
  // stop, rather than pay one more recv() just to hear EAGAIN.
  bool drained = false;
  while (cm_ == Cm::kAwaitReply || cm_ == Cm::kEstablished) {
    if (parse_rx()) continue;
    if (drained || (cm_ != Cm::kAwaitReply && cm_ != Cm::kEstablished)) return;
    if (rx_begin_ == rx_end_) rx_begin_ = rx_end_ = 0;
    ssize_t n;
    bool cut_read = false;
    size_t want = rx_in_payload_ ? rx_hdr_.length - rx_done_ : 0;
    if (rx_in_payload_ && rx_dst_ && want >= kDirectRxMin) {
      // Large payload: read it straight into its target.
      n = rx_read(rx_dst_ + rx_done_, want, &cut_read);
      if (n > 0) {
        rx_done_ += n;
        drained = static_cast<size_t>(n) < want && !cut_read;
        continue;
      }
    } else {
      if (rx_end_ == rx_size_) {
        memmove(rx_buf_.get(), rx_buf_.get() + rx_begin_, rx_end_ - rx_begin_);
        rx_end_ -= rx_begin_;
        rx_begin_ = 0;
      }
      size_t space = rx_size_ - rx_end_;
      // After a large payload the next is likely large too: take only its
      // header, so its payload goes straight to the target below instead
      // of being copied through here (a 64 KiB stream would stage it all).
      if (!rx_in_payload_ && rx_expect_large_)
        space = std::min(space, kFrameHeaderSize - (rx_end_ - rx_begin_));
      n = rx_read(rx_buf_.get() + rx_end_, space, &cut_read);
      if (n > 0) {
        rx_end_ += n;
        drained = static_cast<size_t>(n) < space && !cut_read;
        continue;
      }
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    // Inside a frame: the peer broke off mid-write, by an end or a reset
    // (its close with our bytes unread), not an end of its own.
    const bool cut = rx_in_payload_ || rx_begin_ != rx_end_;
    if (n == 0) {
      SS_DEBUG("%s: fd %d: end of stream%s", proto_.name, fd_, cut ? " inside a frame" : "");
      fail(cut ? EPROTO : sends_lost_ ? EPIPE : ECONNRESET, Cm::kFailed);
      return;
    }
    SS_DEBUG("%s: fd %d: receive failed: %s%s", proto_.name, fd_, strerror(errno),
             cut ? " inside a frame" : "");
    fail(cut ? EPROTO : errno, Cm::kFailed);
    return;
  }
}

void StreamEndpoint::progress_locked() {
  if (cm_ == Cm::kConnecting) {
    pollfd p{fd_, POLLOUT, 0};
    if (::poll(&p, 1, 0) <= 0) return;
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err) {
      fail(err, Cm::kFailed);
      return;
    }
    cm_ = Cm::kAwaitReply;
  }
  flush_sends();
  progress_rx();
}

int StreamEndpoint::post_send(const SendWr& wr) {
  Guard lock(*this);
  if (cm_ != Cm::kEstablished)
    return cm_ == Cm::kFailed || cm_ == Cm::kClosed ? -ECONNRESET : -ENOTCONN;
  uint32_t len = 0;
  for (int i = 0; i < wr.num_sge; i++) len += wr.sge[i].length;
  FrameHeader h{wr.op == Op::kWriteImm ? FrameType::kWriteImm : FrameType::kWrite,
                0,
                len,
                wr.remote_addr,
                wr.rkey,
                wr.imm};
  return queue_frame(h, wr.sge, wr.num_sge, wr.wr_id, true, wr.inline_data);
}

int StreamEndpoint::poll_cq(Completion* wc, int max) {
  Guard lock(*this);
  progress_locked();
  int n = 0;
  while (n < max && !cq_.empty()) {
    wc[n++] = cq_.front();
    cq_.pop_front();
  }
  return n;
}

int StreamEndpoint::arm() {
  Guard lock(*this);
  if (!cq_.empty() || (!cm_reported_ && cm_ != Cm::kConnecting && cm_ != Cm::kAwaitReply &&
                       cm_ != Cm::kAwaitAccept))
    return 1;
  armed_ = true;
  return 0;
}

short StreamEndpoint::event_mask() const {
  if (async_.joinable()) return POLLIN;
  short ev = POLLIN;
  if (cm_ == Cm::kConnecting || !sendq_.empty()) ev |= POLLOUT;
  return ev;
}

void StreamEndpoint::ack_events() {
  if (notify_fd_ < 0) return;
  uint64_t v;
  if (::read(notify_fd_, &v, sizeof v) < 0) { /* nothing pending */
  }
}

void StreamEndpoint::notify_locked() {
  if (!armed_) return;
  armed_ = false;
  uint64_t one = 1;
  if (::write(notify_fd_, &one, sizeof one) < 0) SS_DEBUG("notify write failed");
}

void StreamEndpoint::kick_async() {
  uint64_t one = 1;
  if (async_wake_fd_ >= 0 && ::write(async_wake_fd_, &one, sizeof one) < 0)
    SS_DEBUG("async wake failed");
}

int StreamEndpoint::set_async_progress(bool on) {
  if (on == async_.joinable()) return 0;
  if (!on) {
    async_stop_ = true;
    kick_async();
    async_.join();
    return 0;
  }
  if (sandbox::locked_in()) return -EOPNOTSUPP;  // neither a thread nor its eventfds there
  if (async_wake_fd_ < 0) async_wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (notify_fd_ < 0) notify_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (async_wake_fd_ < 0 || notify_fd_ < 0) return -errno;
  async_stop_ = false;
  std::lock_guard<std::recursive_mutex> lock(mu_);
  async_ = std::thread([this] {
    mark_library_thread();
    async_loop();
  });
  return 0;
}

void StreamEndpoint::fork_child() {
  new (&mu_) std::recursive_mutex();
  regions_.fork_child();
  if (async_.joinable()) {
    // The parent's thread: a std::thread put over its handle, never
    // joined nor detached here (its pthread_t names nothing in this process).
    new (&async_) std::thread();
    for (int* fd : {&async_wake_fd_, &notify_fd_}) {
      if (*fd >= 0) own_close(*fd);  // in a fork handler: by the system call (own_fd.h)
      *fd = -1;
    }
  }
  armed_ = false;
}

void StreamEndpoint::drop_in_fork_child(int fd) {
  own_close(fd);
  if (fd_ != fd) own_close(fd_);  // shm's active side: its unix socket
  for (int* own : {&async_wake_fd_, &notify_fd_}) {
    if (*own >= 0) own_close(*own);  // fork_child closed them when the thread ran
    *own = -1;
  }
  for (PendingSend& p : sendq_)
    if (int passed = p.pass_fd.release(); passed >= 0) own_close(passed);
}

void StreamEndpoint::async_loop() {
  while (!async_stop_) {
    pollfd p[2] = {{fd_, POLLIN, 0}, {async_wake_fd_, POLLIN, 0}};
    {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      if (cm_ == Cm::kFailed || cm_ == Cm::kClosed) p[0].fd = -1;  // nothing more will come
      if (!sendq_.empty()) p[0].events |= POLLOUT;
    }
    if (::poll(p, 2, -1) < 0 && errno != EINTR) break;
    if (p[1].revents) {
      uint64_t v;
      if (::read(async_wake_fd_, &v, sizeof v) < 0) { /* drained */
      }
    }
    std::lock_guard<std::recursive_mutex> lock(mu_);
    size_t before = cq_.size();
    Cm cm_before = cm_;
    progress_locked();
    if (cq_.size() != before || cm_ != cm_before) notify_locked();
  }
}

}  // namespace ss::prov::util
