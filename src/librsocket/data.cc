// Stream data path: rsend/rsendv chunking and rrecv/rrecvv from the
// receive ring. One body each way, over a byte source or sink: a single
// buffer (rsend/rrecv, the common case, compiled without the iovec walk)
// or an iovec array.
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "librsocket/socket.h"

namespace ss::rs {

namespace {
// Walks an iovec array as one byte stream.
class IovCursor {
 public:
  IovCursor(const iovec* iov, int cnt) : iov_(iov), cnt_(cnt) { skip_empty(); }
  size_t total() const {
    size_t t = 0;
    for (int i = 0; i < cnt_; i++) t += iov_[i].iov_len;
    return t;
  }
  // The next `n` bytes as one pointer, or nullptr when they span iovecs.
  const uint8_t* contiguous(size_t n) const {
    if (i_ < cnt_ && iov_[i_].iov_len - off_ >= n)
      return static_cast<const uint8_t*>(iov_[i_].iov_base) + off_;
    return nullptr;
  }
  void copy_out(uint8_t* dst, size_t n) {
    while (n) {
      size_t k = std::min(n, iov_[i_].iov_len - off_);
      memcpy(dst, static_cast<const uint8_t*>(iov_[i_].iov_base) + off_, k);
      dst += k;
      n -= k;
      advance(k);
    }
  }
  void copy_in(const uint8_t* src, size_t n) {
    while (n) {
      size_t k = std::min(n, iov_[i_].iov_len - off_);
      memcpy(static_cast<uint8_t*>(iov_[i_].iov_base) + off_, src, k);
      src += k;
      n -= k;
      advance(k);
    }
  }
  void advance(size_t n) {
    off_ += n;
    if (i_ < cnt_ && off_ == iov_[i_].iov_len) {
      i_++;
      off_ = 0;
      skip_empty();
    }
  }

 private:
  void skip_empty() {
    while (i_ < cnt_ && iov_[i_].iov_len == 0) i_++;
  }
  const iovec* iov_;
  int cnt_;
  int i_ = 0;
  size_t off_ = 0;
};

// One buffer, with IovCursor's interface: always contiguous.
class BufCursor {
 public:
  BufCursor(const void* buf, size_t len)
      : p_(static_cast<uint8_t*>(const_cast<void*>(buf))), len_(len) {}
  size_t total() const { return len_; }
  const uint8_t* contiguous(size_t) const { return p_; }
  void copy_out(uint8_t* dst, size_t n) {
    memcpy(dst, p_, n);
    p_ += n;
  }
  void copy_in(const uint8_t* src, size_t n) {
    memcpy(p_, src, n);
    p_ += n;
  }
  void advance(size_t n) { p_ += n; }

 private:
  uint8_t* p_;
  size_t len_;
};
}  // namespace

ssize_t Socket::send(const void* buf, size_t len, int flags) {
  BufCursor cur(buf, len);
  return send_from(cur, flags);
}

ssize_t Socket::sendv(const iovec* iov, int iovcnt, int flags) {
  IovCursor cur(iov, iovcnt);
  return send_from(cur, flags);
}

ssize_t Socket::recv(void* buf, size_t len, int flags) {
  BufCursor out(buf, len);
  return recv_into(out, flags);
}

ssize_t Socket::recvv(const iovec* iov, int iovcnt, int flags) {
  IovCursor out(iov, iovcnt);
  return recv_into(out, flags);
}

template <typename Cursor>
ssize_t Socket::send_from(Cursor& cur, int flags) {
  Lock lk(mu_);
  Turn turn(*this, lk, &sending_);
  if (turn.refused()) return -EAGAIN;
  may_look();  // the latest state first (fork: another process may have left it)
  bool nonblock = is_nonblocking(flags);
  const Deadline until = deadline_after_us(opt_.sndtimeo_us);
  if (phase() == kConnecting) {
    int rc = wait_for(
        lk, nonblock, [this] { return phase() != kConnecting; }, until, /*quiet=*/true);
    if (rc) return rc;
  }
  if (has(kFellBack))
    return -ENOTCONN;  // nothing moved: librspreload repeats it on the kernel socket
  // A peer that stopped writing is likely closing: see its DISCONNECT now
  // (as TCP's reset), not only once the send window runs out.
  if (!(state_ & kReadable) && (state_ & kConnected)) process_cq(lk);
  if (sends_refused()) return data_error(true);
  size_t len = cur.total();
  if (len == 0) return 0;
  if (std::any_of(iomaps_.begin(), iomaps_.end(), [](const Iomap& m) { return !m.published; })) {
    int rc = send_iomaps(lk, nonblock);
    if (rc) return rc;
  }
  size_t left = len;
  // Upstream's chunking (small first, then 64 KiB) overlaps staging copies
  // with transfers; where a post is the whole copy it only adds posts.
  const bool whole = caps_ & prov::kCapUnchunked;
  const uint32_t max_xfer = whole ? UINT32_MAX : kMaxTransfer;
  uint32_t olap = whole ? max_xfer : kOlapStartSize;
  std::vector<uint8_t> gather;
  while (left) {
    if (!can_send()) {
      int rc = wait_for(
          lk, nonblock, [this] { return can_send() || !(state_ & kWritable); }, until,
          /*quiet=*/true);
      if (!(state_ & kWritable) || (state_ & kError)) {
        if (left == len) return data_error(true);
        break;
      }
      if (rc == -EAGAIN || rc == -EINTR) {  // what moved already is the answer
        if (left == len) return rc;
        break;
      }
      if (!can_send()) continue;
    }
    RsSge& target = target_[target_sge_];
    uint32_t xfer = static_cast<uint32_t>(std::min<size_t>(left, olap));
    xfer = std::min({xfer, sbuf_bytes_avail_, target.length});
    if (olap < max_xfer) olap *= 2;
    const uint8_t* src = cur.contiguous(xfer);
    if (!src) {
      gather.resize(xfer);
      cur.copy_out(gather.data(), xfer);
      src = gather.data();
    } else {
      cur.advance(xfer);
    }
    const uint64_t raddr = target.addr;
    const uint32_t rkey = target.key;
    target.addr += xfer;
    target.length -= xfer;
    if (target.length == 0) target_sge_ = (target_sge_ + 1) % kSglSize;
    int rc = post_data(kOpData, make_imm(kOpData, xfer), src, xfer, src != gather.data(), raddr,
                       rkey, true);
    if (rc) {
      if (left == len) return data_error(true);
      break;
    }
    sseq_no_++;
    left -= xfer;
  }
  return static_cast<ssize_t>(len - left);
}

template <typename Cursor>
ssize_t Socket::recv_into(Cursor& out, int flags) {
  Lock lk(mu_);
  Turn turn(*this, lk, &receiving_);
  if (turn.refused()) return -EAGAIN;
  may_look();  // as send_from
  bool nonblock = is_nonblocking(flags);
  const Deadline until = deadline_after_us(opt_.rcvtimeo_us);
  if (phase() == kConnecting) {
    int rc = wait_for(
        lk, nonblock, [this] { return phase() != kConnecting; }, until, /*quiet=*/true);
    if (rc) return rc;
  }
  if (has(kFellBack)) return -ENOTCONN;  // as in send_from
  if (!rbuf_) return data_error(false);
  size_t len = out.total();
  if (len == 0) return 0;
  size_t total = 0;
  const bool peek = flags & MSG_PEEK;
  // What a blocking receive waits for: all of it (MSG_WAITALL), else the
  // receive low mark (SO_RCVLOWAT) or less when the buffer is shorter.
  const size_t target = (flags & MSG_WAITALL) && !peek
                            ? len
                            : std::min(len, static_cast<size_t>(nonblock ? 1 : opt_.rcvlowat));
  for (;;) {
    if (rmsg_.empty()) {
      // wait_for progresses the completion queue before it would wait.
      if (total >= target) break;
      if (!(state_ & kReadable)) {
        if (total) break;
        // A failed connection says why once (as Linux's reset), then reads
        // as its end of stream.
        if ((state_ & kError) && err_) return -std::exchange(err_, 0);
        return 0;  // end of stream
      }
      int rc = wait_for(
          lk, nonblock, [this] { return !rmsg_.empty() || !(state_ & kReadable); }, until,
          /*quiet=*/true);
      if (rc == -EAGAIN || rc == -EINTR) {
        if (total) break;
        return rc;
      }
      continue;
    }
    if (peek && rbuf_queued_ < target && (state_ & kReadable)) {
      // MSG_PEEK below the mark waits for it as a receive would.
      const uint32_t want = static_cast<uint32_t>(target);
      int rc = wait_for(
          lk, nonblock, [&] { return rbuf_queued_ >= want || !(state_ & kReadable); }, until,
          /*quiet=*/true);
      if (rc == -EAGAIN || rc == -EINTR) return rc;
    }
    if (peek) {
      // Copy across queued messages without consuming any.
      uint32_t off = rbuf_offset_, skip = rmsg_head_consumed_;
      for (size_t i = 0; i < rmsg_.size(); i++) {
        const Rmsg& m = rmsg_[i];
        if (total == len) break;
        uint32_t n = static_cast<uint32_t>(std::min<size_t>(m.len - skip, len - total));
        out.copy_in(rbuf_ + off, n);
        total += n;
        off = (off + m.len - skip) % opt_.rbuf_size;
        skip = 0;
      }
      break;
    }
    Rmsg& m = rmsg_.front();
    uint32_t n = static_cast<uint32_t>(std::min<size_t>(m.len - rmsg_head_consumed_, len - total));
    out.copy_in(rbuf_ + rbuf_offset_, n);
    total += n;
    rbuf_offset_ = ring_wrap(rbuf_offset_ + n, opt_.rbuf_size);  // n <= one message <= half
    rbuf_bytes_avail_ += n;
    rbuf_queued_ -= n;
    rmsg_head_consumed_ += n;
    if (rmsg_head_consumed_ == m.len) {
      rmsg_.pop_front();
      rmsg_head_consumed_ = 0;
      rseq_no_++;
      // More to copy: a half of rbuf freed now goes back to the peer now,
      // so it writes there while we copy the rest (a 1 MiB read spans both
      // halves; credits only at the end would leave the peer idle meanwhile).
      if (total < len) give_credits();
    }
    if (total == len) break;
  }
  give_credits();
  return static_cast<ssize_t>(total);
}

}  // namespace ss::rs
