// Direct data placement: riomap publishes a registered user buffer into a
// slot of the peer's iomap table; riowrite writes into the peer's mapped
// buffers with plain one-sided writes.
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/base/log.h"
#include "librsocket/socket.h"

namespace ss::rs {

off_t Socket::iomap(void* buf, size_t len, int prot, int flags, off_t offset) {
  Lock lk(mu_);
  Turn turn(*this, lk, &sending_);
  if (turn.refused()) return -EAGAIN;
  if (!buf || !len || flags != 0) return -EINVAL;
  if (prot & ~(PROT_WRITE)) return -EINVAL;
  if (!(state_ & kConnected) || lingering() || !ep_) return -ENOTCONN;
  if (len > UINT32_MAX) return -EINVAL;
  Iomap m{};
  m.index = -1;
  if (prot & PROT_WRITE) {
    auto it = std::find(remote_slots_used_.begin(), remote_slots_used_.end(), false);
    if (it == remote_slots_used_.end()) return -ENOMEM;
    m.index = static_cast<int>(it - remote_slots_used_.begin());
  }
  int access = (prot & PROT_WRITE) ? prov::kAccessRemoteWrite : prov::kAccessLocal;
  int rc = ep_->reg_mr(buf, len, access, &m.mr);
  if (rc) return rc;
  if (prot & PROT_WRITE) {
    // Software providers must place writes to this buffer even while the
    // application only watches the memory.
    if (ep_->caps() & prov::kCapAsyncPlace) {
      rc = ep_->set_async_progress(true);
      if (rc) {
        ep_->dereg_mr(&m.mr);
        return rc;
      }
    }
    remote_slots_used_[m.index] = true;
  }
  m.offset = offset == -1 ? reinterpret_cast<uint64_t>(buf) : static_cast<uint64_t>(offset);
  m.addr = buf;
  m.len = len;
  m.published = m.index < 0;
  iomaps_.push_back(m);
  return static_cast<off_t>(m.offset);
}

int Socket::iounmap(void* buf, size_t len) {
  Lock lk(mu_);
  Turn turn(*this, lk, &sending_);
  if (turn.refused()) return -EAGAIN;
  auto it = std::find_if(iomaps_.begin(), iomaps_.end(),
                         [&](const Iomap& m) { return m.addr == buf && m.len == len; });
  if (it == iomaps_.end()) return -EINVAL;
  // The peer is not told (wire compatibility): its entry goes stale and a
  // later riowrite into it fails that connection.
  if (ep_) ep_->dereg_mr(&it->mr);
  if (it->index >= 0 && static_cast<size_t>(it->index) < remote_slots_used_.size())
    remote_slots_used_[it->index] = false;
  iomaps_.erase(it);
  return 0;
}

// Publishes queued mappings; each costs a send WQE, 24 sbuf bytes and a credit.
int Socket::send_iomaps(Lock& lk, bool nonblock) {
  for (Iomap& m : iomaps_) {
    if (m.published) continue;
    if (!can_send()) {
      int rc = wait_for(
          lk, nonblock, [this] { return can_send() || !(state_ & kWritable); }, Deadline::max(),
          /*quiet=*/true);
      if (rc) return rc;
      if (!(state_ & kWritable) || (state_ & kError)) return data_error(true);
    }
    RsIomap e{m.offset,
              {reinterpret_cast<uint64_t>(m.addr), m.mr.rkey, static_cast<uint32_t>(m.len)}};
    if (swap_sgl_) {  // written in the byte order of the memory's owner
      e.offset = __builtin_bswap64(e.offset);
      e.sge.addr = __builtin_bswap64(e.sge.addr);
      e.sge.key = __builtin_bswap32(e.sge.key);
      e.sge.length = __builtin_bswap32(e.sge.length);
    }
    uint64_t raddr = remote_iomap_.addr + static_cast<uint64_t>(m.index) * kIomapEntrySize;
    int rc = post_data(kOpIomapSgl, make_imm(kOpIomapSgl, m.index), &e, sizeof e, true, raddr,
                       remote_iomap_.key, true);
    if (rc) return rc;
    sseq_no_++;
    m.published = true;
  }
  return 0;
}

ssize_t Socket::iowrite(const void* buf, size_t count, off_t offset, int flags) {
  Lock lk(mu_);
  Turn turn(*this, lk, &sending_);
  if (turn.refused()) return -EAGAIN;
  may_look();  // as send_from
  bool nonblock = is_nonblocking(flags);
  if (sends_refused()) return data_error(true);
  if (count == 0) return 0;
  if (std::any_of(iomaps_.begin(), iomaps_.end(), [](const Iomap& m) { return !m.published; })) {
    int rc = send_iomaps(lk, nonblock);
    if (rc) return rc;
  }
  const auto* src = static_cast<const uint8_t*>(buf);
  size_t left = count;
  uint64_t off = static_cast<uint64_t>(offset);
  uint32_t olap = kOlapStartSize;
  RsIomap e{};
  while (left) {
    // Only entries whose publication has completed (the shared table may
    // be mid-update).
    const RsIomap* hit = nullptr;
    for (const RsIomap& m : peer_iomaps_)
      if (m.sge.length && off >= m.offset && off - m.offset < m.sge.length) {
        hit = &m;
        break;
      }
    if (hit) e = *hit;
    if (!hit) {
      if (left == count) return -EINVAL;
      break;
    }
    if (!can_send()) {
      int rc = wait_for(
          lk, nonblock, [this] { return can_send() || !(state_ & kWritable); }, Deadline::max(),
          /*quiet=*/true);
      if (!(state_ & kWritable) || (state_ & kError) || rc == -EAGAIN || rc == -EINTR) {
        if (left == count) return rc == -EAGAIN || rc == -EINTR ? rc : data_error(true);
        break;
      }
      continue;
    }
    uint32_t xfer = static_cast<uint32_t>(
        std::min<uint64_t>({left, olap, sbuf_bytes_avail_, e.offset + e.sge.length - off}));
    if (olap < kMaxTransfer) olap *= 2;
    int rc =
        post_data(kOpWrite, 0, src, xfer, true, e.sge.addr + (off - e.offset), e.sge.key, false);
    if (rc) {
      if (left == count) return data_error(true);
      break;
    }
    src += xfer;
    off += xfer;
    left -= xfer;
  }
  return static_cast<ssize_t>(count - left);
}

}  // namespace ss::rs
