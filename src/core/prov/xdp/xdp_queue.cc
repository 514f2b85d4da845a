#include "core/prov/xdp/xdp_queue.h"

#include <linux/if_xdp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/base/log.h"
#include "core/mem/region.h"
#include "core/prov/xdp/xdp_family.h"
#include "core/prov/xdp/xsk_kernel.h"

namespace ss::prov::xdp {

using mem::Buffer;

namespace {

bool valid(const RingQueueConfig& c) {
  if (!c.pool || !c.ifname || strlen(c.ifname) >= 16) return false;
  if (!pow2(c.fill_size) || !pow2(c.rx_size) || !pow2(c.tx_size) || !pow2(c.completion_size))
    return false;
  // Aligned UMEM mode: one area, frames of 2048 bytes up to a page.
  const size_t fs = c.pool->frame_size();
  return c.pool->max_chunks() == 1 && (fs == 2048 || fs == 4096);
}

}  // namespace

XdpQueue::XdpQueue(const RingQueueConfig& cfg) : cfg_(cfg) {
  memcpy(ifname_, cfg.ifname, strlen(cfg.ifname));
  shift_ = static_cast<uint32_t>(__builtin_ctzll(cfg.pool->frame_size()));
  in_fill_.resize(cfg.pool->frame_count());
  in_tx_.resize(cfg.pool->frame_count());
}

int XdpQueue::create(const RingQueueConfig& cfg, std::unique_ptr<RingQueue>* out) {
  if (!out || !valid(cfg)) return -EINVAL;
  std::unique_ptr<XdpQueue> q(new XdpQueue(cfg));
  int err = Device::open(q->ifname_, &q->dev_);  // logs its own failure
  if (err) return err;
  err = cfg.pool->add_registrar(q.get());
  if (err < 0) return err;
  q->reg_index_ = err;
  // Zero-copy first, then multi-buffer (jumbo frames span frames; Linux
  // 6.6): a driver with zero-copy but without it keeps zero-copy, the MSS
  // then bounded by a frame. Each falls back where the kernel or the
  // driver lacks it.
  struct Mode {
    bool zero_copy, multi_buffer;
  };
  for (const Mode m :
       {Mode{true, true}, Mode{true, false}, Mode{false, true}, Mode{false, false}}) {
    err = q->bind(m.zero_copy, m.multi_buffer);
    if (err != -EOPNOTSUPP && err != -EINVAL) break;
  }
  if (err) {
    SS_WARN(
        "xdp: %s queue %u: cannot bind an AF_XDP socket: %s (its traffic "
        "stays with the kernel)",
        q->ifname_, cfg.queue_id, strerror(-err));
    return err;
  }
  SS_DEBUG("xdp: %s queue %u: bound, %s, %s", q->ifname_, cfg.queue_id,
           q->zero_copy_ ? "zero-copy" : "copying",
           q->multi_buffer_ ? "multi-buffer" : "one frame a packet");
  // Where the kernel writes a frame: past its headroom and ours. Known to
  // the program before a frame can reach the socket.
  const size_t room =
      cfg.pool->frame_size() - std::max<size_t>(cfg.pool->headroom(), XDP_PACKET_HEADROOM);
  q->dev_->set_frame_room(static_cast<uint32_t>(room));
  err = q->dev_->set_socket(cfg.queue_id, xsk_socket__fd(q->xsk_));
  if (err) {
    SS_WARN("xdp: %s queue %u: cannot steer to the socket: %s", q->ifname_, cfg.queue_id,
            strerror(-err));
    return err;
  }
  q->steered_ = true;
  if (cfg.recycle_into_fill) {
    cfg.pool->set_recycler(q.get());
    q->recycling_ = true;
  }
  *out = std::move(q);
  return 0;
}

int XdpQueue::bind(bool zero_copy, bool multi_buffer) {
  const size_t headroom = cfg_.pool->headroom();
  xsk_umem_config ucfg{};
  ucfg.fill_size = cfg_.fill_size;
  ucfg.comp_size = cfg_.completion_size;
  ucfg.frame_size = static_cast<uint32_t>(cfg_.pool->frame_size());
  // The kernel leaves XDP_PACKET_HEADROOM in front anyway; ask for more
  // only where the pool wants more.
  ucfg.frame_headroom =
      headroom > XDP_PACKET_HEADROOM ? static_cast<uint32_t>(headroom - XDP_PACKET_HEADROOM) : 0;
  int err = xsk_umem__create(&umem_, cfg_.pool->chunk_base(0), cfg_.pool->chunk_bytes(), &fill_,
                             &comp_, &ucfg);
  if (err) {
    umem_ = nullptr;
    return err;
  }
  xsk_socket_config scfg{};
  scfg.rx_size = cfg_.rx_size;
  scfg.tx_size = cfg_.tx_size;
  scfg.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;  // our program, our XSKMAP
  // No XDP_USE_NEED_WAKEUP: the kernel reads the fill ring without a kick,
  // so a frame recycled into it needs no system call.
  scfg.bind_flags = static_cast<uint16_t>((zero_copy ? XDP_ZEROCOPY : XDP_COPY) |
                                          (multi_buffer ? XDP_USE_SG : 0));
  err = xsk_socket__create(&xsk_, ifname_, cfg_.queue_id, umem_, &rx_, &tx_, &scfg);
  if (err) {
    xsk_ = nullptr;
    unbind();  // a failed bind leaves the UMEM's socket unusable: start again
    return err;
  }
  xdp_options opts{};
  socklen_t len = sizeof opts;
  const int fd = xsk_socket__fd(xsk_);
  zero_copy_ =
      getsockopt(fd, SOL_XDP, XDP_OPTIONS, &opts, &len) == 0 && (opts.flags & XDP_OPTIONS_ZEROCOPY);
  xdp_mmap_offsets off{};
  len = sizeof off;
  if (getsockopt(fd, SOL_XDP, XDP_MMAP_OFFSETS, &off, &len) == 0) {
    keep_from_forks(rx_.producer, off.rx.producer, off.rx.desc, rx_.size, sizeof(xdp_desc));
    keep_from_forks(tx_.producer, off.tx.producer, off.tx.desc, tx_.size, sizeof(xdp_desc));
    keep_from_forks(fill_.producer, off.fr.producer, off.fr.desc, fill_.size, sizeof(uint64_t));
    keep_from_forks(comp_.producer, off.cr.producer, off.cr.desc, comp_.size, sizeof(uint64_t));
  }
  multi_buffer_ = multi_buffer;
  return 0;
}

void XdpQueue::unbind() {
  if (xsk_) xsk_socket__delete(xsk_);
  if (umem_) xsk_umem__delete(umem_);
  xsk_ = nullptr;
  umem_ = nullptr;
}

void XdpQueue::mark_ring_frames(std::vector<uint8_t>* by_index) const {
  // mu_ held (hold_for_fork).
  by_index->assign(in_fill_.size(), 0);
  for (size_t i = 0; i < in_fill_.size(); i++) (*by_index)[i] = in_fill_[i] || in_tx_[i] ? 1 : 0;
}

XdpQueue::~XdpQueue() {
  if (recycling_) cfg_.pool->set_recycler(nullptr);
  if (steered_) dev_->clear_socket(cfg_.queue_id);
  unbind();  // the kernel lets go of every frame here
  std::vector<Buffer> frames;
  {
    std::lock_guard lock(mu_);
    for (auto& b : in_fill_)
      if (b) frames.push_back(std::move(b));
    for (auto& b : in_tx_)
      if (b) frames.push_back(std::move(b));
    if (partial_) frames.push_back(std::move(partial_));
  }
  frames.clear();  // released outside the lock
  if (reg_index_ >= 0) cfg_.pool->remove_registrar(this);
}

int XdpQueue::reg(void* addr, size_t len, mem::RegHandle* out) {
  if (addr != cfg_.pool->chunk_base(0)) return -EINVAL;  // one area only
  out->offset = 0;
  return 0;
}

int XdpQueue::share(QueueShare* out) const {
  int fd = -1;
  uint64_t off = 0;
  if (!out || !dev_->family() ||
      !mem::find_backing(cfg_.pool->chunk_base(0), cfg_.pool->chunk_bytes(), &fd, &off) || off)
    return -EOPNOTSUPP;
  out->queue_id = cfg_.queue_id;
  out->xsk = xsk_socket__fd(xsk_);
  out->umem = fd;
  out->umem_len = cfg_.pool->chunk_bytes();
  out->frame_size = static_cast<uint32_t>(cfg_.pool->frame_size());
  out->fill_size = cfg_.fill_size;
  out->multi_buffer = multi_buffer_;
  return 0;
}

uint32_t XdpQueue::caps() const {
  uint32_t caps = kRingCapHeadroom | kRingCapNeedsKick;
  if (zero_copy_) caps |= kRingCapZeroCopy;
  if (multi_buffer_) caps |= kRingCapRxChained;
  return caps;
}

int XdpQueue::fill_locked(Buffer* frames, int n) {
  FamilyPage* fam = dev_->family();
  if (fam) {
    family_lock_fill(fam, cfg_.queue_id);
    resync_producer(&fill_);  // a joined child may have filled since our last turn
  }
  const uint32_t room = xsk_prod_nb_free(&fill_, static_cast<uint32_t>(n));
  const uint32_t take = room < static_cast<uint32_t>(n) ? room : static_cast<uint32_t>(n);
  uint32_t idx = 0;
  if (!take || xsk_ring_prod__reserve(&fill_, take, &idx) != take) {
    if (fam) family_unlock_fill(fam, cfg_.queue_id);
    return 0;
  }
  for (uint32_t i = 0; i < take; i++) {
    const uint64_t addr = frame_addr(frames[i]);
    in_fill_[index_of(addr)] = std::move(frames[i]);
    *xsk_ring_prod__fill_addr(&fill_, idx + i) = addr;
  }
  xsk_ring_prod__submit(&fill_, take);
  if (fam) family_unlock_fill(fam, cfg_.queue_id);
  fill_level_.fetch_add(take, std::memory_order_relaxed);
  return static_cast<int>(take);
}

int XdpQueue::fill(Buffer* frames, int n) {
  if (!frames || n < 0) return -EINVAL;
  for (int i = 0; i < n; i++) {
    if (!frames[i] || frames[i].pool() != cfg_.pool) return -EINVAL;
    if (frames[i].use_count() != 1) return -EBUSY;
  }
  std::lock_guard lock(mu_);
  const int took = fill_locked(frames, n);
  stats_.fill_full += static_cast<uint64_t>(n - took);
  return took;
}

uint32_t XdpQueue::fill_level() const {
  if (!dev_->family_active()) return fill_level_.load(std::memory_order_relaxed);
  const auto load = [](const uint32_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); };
  return (load(fill_.producer) - load(fill_.consumer)) + (load(rx_.producer) - load(rx_.consumer));
}

void XdpQueue::recycle(Buffer& frame) {
  std::lock_guard lock(mu_);
  if (fill_locked(&frame, 1) != 1) stats_.fill_full++;  // left to the free list
}

int XdpQueue::rx(Buffer* out, int max) {
  if (!out || max < 0) return -EINVAL;
  for (int i = 0; i < max; i++) out[i].reset();  // never release under the lock
  // Bad descriptors' frames the fill ring had no room for: released after
  // the lock (declared before it), to the free list.
  std::vector<Buffer> refused;
  std::lock_guard lock(mu_);
  uint32_t idx = 0;
  const uint32_t got = xsk_ring_cons__peek(&rx_, static_cast<uint32_t>(max), &idx);
  fill_level_.fetch_sub(got, std::memory_order_relaxed);  // a bad one's refill adds it back
  int n = 0;
  for (uint32_t i = 0; i < got; i++) {
    const xdp_desc* d = xsk_ring_cons__rx_desc(&rx_, idx + i);
    // A multi-buffer packet's descriptors, all but its last "continued",
    // link into one chain; a packet may straddle two calls.
    const bool continued = multi_buffer_ && (d->options & XDP_PKT_CONTD);
    Buffer& slot = in_fill_[index_of(d->addr)];
    const uint64_t in_frame = d->addr & ((uint64_t{1} << shift_) - 1);
    if (!slot || slot.set_view(in_frame, d->len) ||
        (partial_ &&
         (++partial_frames_ > kMaxFramesPerPacket || partial_.append(std::move(slot))))) {
      // A descriptor outside its frame, or a frame we never gave (neither
      // happens with a sane kernel): its packet is dropped, the frame
      // straight back to the fill ring (parked, it would shrink the fill
      // supply for good).
      stats_.rx_dropped_bad_desc++;
      partial_bad_ = true;
      if (slot) {
        Buffer back = std::move(slot);
        if (fill_locked(&back, 1) != 1) {
          stats_.fill_full++;
          refused.push_back(std::move(back));
        }
      }
    } else if (!partial_) {
      partial_ = std::move(slot);
      partial_frames_ = 1;
    }
    if (continued) continue;
    if (partial_bad_) {
      if (partial_) refused.push_back(std::move(partial_));  // released after the lock
    } else {
      out[n++] = std::move(partial_);
    }
    partial_.reset();
    partial_frames_ = 0;
    partial_bad_ = false;
  }
  xsk_ring_cons__release(&rx_, got);
  stats_.rx_packets += static_cast<uint64_t>(n);
  return n;
}

int XdpQueue::tx(Buffer* pkts, int n) {
  if (!pkts || n < 0) return -EINVAL;
  for (int i = 0; i < n; i++)
    if (!pkts[i] || pkts[i].pool() != cfg_.pool || pkts[i].next()) return -EINVAL;
  std::lock_guard lock(mu_);
  // Every queued packet must find room on the completion ring.
  uint32_t room = xsk_prod_nb_free(&tx_, static_cast<uint32_t>(n));
  const uint32_t comp_room = cfg_.completion_size - tx_inflight_;
  if (room > comp_room) room = comp_room;
  uint32_t take = 0;
  while (take < room && take < static_cast<uint32_t>(n) &&
         !in_tx_[index_of(frame_addr(pkts[take]))])
    take++;  // a frame already in flight ends the batch
  if (!take && n && room && in_tx_[index_of(frame_addr(pkts[0]))]) return -EBUSY;
  uint32_t idx = 0;
  if (!take || xsk_ring_prod__reserve(&tx_, take, &idx) != take) return 0;
  for (uint32_t i = 0; i < take; i++) {
    xdp_desc* d = xsk_ring_prod__tx_desc(&tx_, idx + i);
    d->addr = pkts[i].reg(reg_index_).offset + pkts[i].chunk_offset();
    d->len = static_cast<uint32_t>(pkts[i].size());
    d->options = 0;
    in_tx_[index_of(d->addr)] = std::move(pkts[i]);
  }
  xsk_ring_prod__submit(&tx_, take);
  tx_inflight_ += take;
  return static_cast<int>(take);
}

int XdpQueue::kick() {
  // In copy mode one call sends at most a batch (32 frames) and says EAGAIN
  // while more wait: call again until the kernel took them all, or a bound.
  for (uint32_t calls = 0; calls <= cfg_.tx_size / 32 + 1; calls++) {
    if (sendto(xsk_socket__fd(xsk_), nullptr, 0, MSG_DONTWAIT, nullptr, 0) >= 0) return 0;
    // The kernel is busy or out of buffers for now: the frames stay queued.
    if (errno == EBUSY || errno == ENOBUFS) return 0;
    if (errno != EAGAIN) return -errno;
    if (tx_unsent() == 0) return 0;
  }
  return 0;
}

uint32_t XdpQueue::tx_unsent() {
  std::lock_guard lock(mu_);
  return tx_.cached_prod - __atomic_load_n(tx_.consumer, __ATOMIC_ACQUIRE);
}

int XdpQueue::complete(Buffer* out, int max) {
  if (!out || max < 0) return -EINVAL;
  for (int i = 0; i < max; i++) out[i].reset();
  std::lock_guard lock(mu_);
  uint32_t idx = 0;
  const uint32_t got = xsk_ring_cons__peek(&comp_, static_cast<uint32_t>(max), &idx);
  int n = 0;
  for (uint32_t i = 0; i < got; i++) {
    Buffer& slot = in_tx_[index_of(*xsk_ring_cons__comp_addr(&comp_, idx + i))];
    if (slot) out[n++] = std::move(slot);
  }
  xsk_ring_cons__release(&comp_, got);
  tx_inflight_ -= got;
  stats_.tx_packets += got;
  return n;
}

int XdpQueue::poll_fd(Ring r, short* events) const {
  if (!events) return -EINVAL;
  if (r == Ring::kRx) {
    *events = POLLIN;
    return xsk_socket__fd(xsk_);
  }
  if (r == Ring::kTx) {
    *events = POLLOUT;
    return xsk_socket__fd(xsk_);
  }
  return -EOPNOTSUPP;  // the fill and completion rings have no wake-up
}

RingStats XdpQueue::stats() const {
  RingStats s;
  {
    std::lock_guard lock(mu_);
    s = stats_;
  }
  add_kernel_drops(xsk_socket__fd(xsk_), &s);
  return s;
}

}  // namespace ss::prov::xdp
