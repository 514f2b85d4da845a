#include "core/prov/xdp/xdp_join.h"

#include <fcntl.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/mem/region.h"
#include "core/prov/xdp/xdp_family.h"
#include "core/prov/xdp/xsk_kernel.h"

// libxdp binds a socket to a UMEM it made itself (xsk_socket__create_shared
// needs the owner's xsk_umem); a UMEM another process registered is
// reached through the kernel's interface directly: the rx ring of our own
// socket, the fill ring mapped from the owner's.

namespace ss::prov::xdp {

using mem::Buffer;

int JoinedQueue::create(const char* ifname, const QueueShare& share, std::shared_ptr<Device> dev,
                        mem::Pool* pool, uint32_t rx_size, std::unique_ptr<RingQueue>* out) {
  if (!ifname || !dev || !pool || !out || share.own < 0 || !pow2(rx_size) ||
      !pow2(share.fill_size) || pool->frame_size() != share.frame_size || !dev->family() ||
      dev->slot() == 0)
    return -EINVAL;
  const unsigned ifindex = if_nametoindex(ifname);
  if (!ifindex) return -ENODEV;
  std::unique_ptr<JoinedQueue> q(new JoinedQueue);
  q->share_ = share;
  q->dev_ = std::move(dev);
  q->pool_ = pool;
  q->rx_size_ = rx_size;
  if ((q->fd_ = fcntl(share.own, F_DUPFD_CLOEXEC, 0)) < 0) return -errno;
  if (setsockopt(q->fd_, SOL_XDP, XDP_RX_RING, &rx_size, sizeof rx_size) < 0) return -errno;
  xdp_mmap_offsets own{}, owner{};
  socklen_t len = sizeof own;
  if (getsockopt(q->fd_, SOL_XDP, XDP_MMAP_OFFSETS, &own, &len) < 0) return -errno;
  len = sizeof owner;
  if (getsockopt(share.xsk, SOL_XDP, XDP_MMAP_OFFSETS, &owner, &len) < 0) return -errno;

  q->rx_map_len_ = own.rx.desc + rx_size * sizeof(xdp_desc);
  void* m = mmap(nullptr, q->rx_map_len_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, q->fd_,
                 XDP_PGOFF_RX_RING);
  if (m == MAP_FAILED) return -errno;
  q->rx_map_ = m;
  (void)madvise(m, q->rx_map_len_, MADV_DONTFORK);  // as keep_from_forks
  auto* base = static_cast<uint8_t*>(m);
  q->rx_.mask = rx_size - 1;
  q->rx_.size = rx_size;
  q->rx_.producer = reinterpret_cast<uint32_t*>(base + own.rx.producer);
  q->rx_.consumer = reinterpret_cast<uint32_t*>(base + own.rx.consumer);
  q->rx_.flags = reinterpret_cast<uint32_t*>(base + own.rx.flags);
  q->rx_.ring = base + own.rx.desc;
  q->rx_.cached_prod = *q->rx_.producer;
  q->rx_.cached_cons = *q->rx_.consumer;

  q->fill_map_len_ = owner.fr.desc + share.fill_size * sizeof(uint64_t);
  m = mmap(nullptr, q->fill_map_len_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, share.xsk,
           XDP_UMEM_PGOFF_FILL_RING);
  if (m == MAP_FAILED) return -errno;
  q->fill_map_ = m;
  (void)madvise(m, q->fill_map_len_, MADV_DONTFORK);
  base = static_cast<uint8_t*>(m);
  q->fill_.mask = share.fill_size - 1;
  q->fill_.size = share.fill_size;
  q->fill_.producer = reinterpret_cast<uint32_t*>(base + owner.fr.producer);
  q->fill_.consumer = reinterpret_cast<uint32_t*>(base + owner.fr.consumer);
  q->fill_.flags = reinterpret_cast<uint32_t*>(base + owner.fr.flags);
  q->fill_.ring = base + owner.fr.desc;

  void* umem = nullptr;
  if (const int err = mem::Region::map_peer(share.umem, share.umem_len, PROT_READ, &umem))
    return err;
  q->umem_ = static_cast<const uint8_t*>(umem);

  sockaddr_xdp sa{};
  sa.sxdp_family = AF_XDP;
  sa.sxdp_ifindex = ifindex;
  sa.sxdp_queue_id = share.queue_id;
  sa.sxdp_flags = XDP_SHARED_UMEM;
  sa.sxdp_shared_umem_fd = static_cast<uint32_t>(share.xsk);
  if (bind(q->fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0) return -errno;
  if (const int err = q->dev_->set_socket(share.queue_id, q->fd_, q->dev_->slot())) return err;
  q->steered_ = true;
  *out = std::move(q);
  return 0;
}

int JoinedQueue::open_socket() {
  const int fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
  return fd < 0 ? -errno : fd;
}

JoinedQueue::~JoinedQueue() {
  if (steered_) dev_->clear_socket(share_.queue_id, dev_->slot());
  if (fd_ >= 0) close(fd_);
  if (rx_map_) munmap(rx_map_, rx_map_len_);
  if (fill_map_) {
    std::lock_guard lock(mu_);
    refill_locked();  // what is left goes back while the fill ring is there
    munmap(fill_map_, fill_map_len_);
  }
  if (umem_) mem::Region::unmap_peer(const_cast<uint8_t*>(umem_), share_.umem_len);
}

uint32_t JoinedQueue::caps() const {
  uint32_t caps = kRingCapHeadroom;
  if (share_.multi_buffer) caps |= kRingCapRxChained;
  return caps;
}

void JoinedQueue::refill_locked() {
  if (pending_.empty()) return;
  FamilyPage* fam = dev_->family();
  family_lock_fill(fam, share_.queue_id);
  resync_producer(&fill_);  // another process filled since our last turn
  const uint32_t n = static_cast<uint32_t>(pending_.size());
  const uint32_t take = xsk_prod_nb_free(&fill_, n) < n ? xsk_prod_nb_free(&fill_, n) : n;
  uint32_t idx = 0;
  if (take && xsk_ring_prod__reserve(&fill_, take, &idx) == take) {
    for (uint32_t i = 0; i < take; i++) *xsk_ring_prod__fill_addr(&fill_, idx + i) = pending_[i];
    xsk_ring_prod__submit(&fill_, take);
    pending_.erase(pending_.begin(), pending_.begin() + take);
  }
  family_unlock_fill(fam, share_.queue_id);
}

int JoinedQueue::rx(Buffer* out, int max) {
  if (!out || max < 0) return -EINVAL;
  for (int i = 0; i < max; i++) out[i].reset();
  std::lock_guard lock(mu_);
  uint32_t idx = 0;
  const uint32_t got = xsk_ring_cons__peek(&rx_, static_cast<uint32_t>(max), &idx);
  const uint64_t frame_mask = share_.frame_size - 1;
  int n = 0;
  for (uint32_t i = 0; i < got; i++) {
    const xdp_desc* d = xsk_ring_cons__rx_desc(&rx_, idx + i);
    const bool continued = share_.multi_buffer && (d->options & XDP_PKT_CONTD);
    const uint64_t in_frame = d->addr & frame_mask;
    pending_.push_back(d->addr & ~frame_mask);
    Buffer copy = pool_->get();
    if (d->addr + d->len > share_.umem_len || !copy || copy.set_view(in_frame, d->len)) {
      // Out of the UMEM (a broken kernel) or out of our frames: the
      // packet is lost, as on a full ring.
      stats_.rx_dropped_bad_desc++;
      partial_bad_ = true;
    } else {
      memcpy(copy.data(), umem_ + d->addr, d->len);
      if (!partial_) {
        partial_ = std::move(copy);
        partial_frames_ = 1;
      } else if (++partial_frames_ > kMaxFramesPerPacket || partial_.append(std::move(copy))) {
        partial_bad_ = true;
      }
    }
    if (continued) continue;
    if (!partial_bad_ && partial_) out[n++] = std::move(partial_);
    partial_.reset();
    partial_frames_ = 0;
    partial_bad_ = false;
  }
  xsk_ring_cons__release(&rx_, got);
  refill_locked();
  stats_.rx_packets += static_cast<uint64_t>(n);
  return n;
}

int JoinedQueue::poll_fd(Ring r, short* events) const {
  if (!events) return -EINVAL;
  if (r != Ring::kRx) return -EOPNOTSUPP;
  *events = POLLIN;
  return fd_;
}

RingStats JoinedQueue::stats() const {
  RingStats s;
  {
    std::lock_guard lock(mu_);
    s = stats_;
  }
  add_kernel_drops(fd_, &s);
  return s;
}

}  // namespace ss::prov::xdp
