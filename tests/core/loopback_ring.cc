#include "tests/core/loopback_ring.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sstest {

using ss::mem::Buffer;
using ss::prov::Ring;
using ss::prov::RingQueueConfig;

namespace {

bool pow2(uint32_t n) { return n && !(n & (n - 1)); }

bool valid(const RingQueueConfig& c) {
  return c.pool && pow2(c.fill_size) && pow2(c.rx_size) && pow2(c.tx_size) &&
         pow2(c.completion_size);
}

}  // namespace

LoopbackQueue::LoopbackQueue(const RingQueueConfig& cfg, bool needs_kick,
                             std::shared_ptr<std::mutex> mu)
    : cfg_(cfg),
      needs_kick_(needs_kick),
      mu_(std::move(mu)),
      fill_(cfg.fill_size),
      rx_(cfg.rx_size),
      tx_(cfg.tx_size),
      comp_(cfg.completion_size) {}

int LoopbackQueue::open_fds() {
  rx_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  comp_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  return rx_fd_ < 0 || comp_fd_ < 0 ? -errno : 0;
}

int LoopbackQueue::create_pair(const RingQueueConfig& a, const RingQueueConfig& b, bool needs_kick,
                               std::unique_ptr<LoopbackQueue>* qa,
                               std::unique_ptr<LoopbackQueue>* qb) {
  if (!valid(a) || !valid(b) || !qa || !qb) return -EINVAL;
  auto mu = std::make_shared<std::mutex>();
  std::unique_ptr<LoopbackQueue> x(new LoopbackQueue(a, needs_kick, mu));
  std::unique_ptr<LoopbackQueue> y(new LoopbackQueue(b, needs_kick, mu));
  int err = x->open_fds();
  if (!err) err = y->open_fds();
  if (err) return err;
  x->peer_ = y.get();
  y->peer_ = x.get();
  if (a.recycle_into_fill) a.pool->set_recycler(x.get());
  if (b.recycle_into_fill) b.pool->set_recycler(y.get());
  *qa = std::move(x);
  *qb = std::move(y);
  return 0;
}

LoopbackQueue::~LoopbackQueue() {
  if (cfg_.recycle_into_fill) cfg_.pool->set_recycler(nullptr);
  std::vector<Buffer> frames;  // released once the lock is dropped
  {
    std::lock_guard lock(*mu_);
    if (peer_) peer_->peer_ = nullptr;
    fill_.drain(&frames);
    rx_.drain(&frames);
    tx_.drain(&frames);
    comp_.drain(&frames);
  }
  frames.clear();
  if (rx_fd_ >= 0) close(rx_fd_);
  if (comp_fd_ >= 0) close(comp_fd_);
}

uint32_t LoopbackQueue::caps() const {
  uint32_t caps = ss::prov::kRingCapChained | ss::prov::kRingCapHeadroom;
  if (needs_kick_) caps |= ss::prov::kRingCapNeedsKick;
  return caps;
}

void LoopbackQueue::signal(int fd, bool ready) {
  uint64_t v = 1;
  if (ready) {
    if (write(fd, &v, sizeof v) < 0) {  // counter cannot overflow here
    }
  } else if (read(fd, &v, sizeof v) < 0) {  // EAGAIN: already clear
  }
}

int LoopbackQueue::fill(Buffer* frames, int n) {
  if (!frames || n < 0) return -EINVAL;
  for (int i = 0; i < n; i++) {
    if (!frames[i] || frames[i].pool() != cfg_.pool) return -EINVAL;
    if (frames[i].use_count() != 1) return -EBUSY;
  }
  std::lock_guard lock(*mu_);
  int took = 0;
  for (; took < n && !fill_.full(); took++) fill_.push(std::move(frames[took]));
  stats_.fill_full += static_cast<uint64_t>(n - took);
  return took;
}

void LoopbackQueue::recycle(Buffer& frame) {
  std::lock_guard lock(*mu_);
  if (fill_.full()) {
    stats_.fill_full++;  // left to the pool's free list
    return;
  }
  fill_.push(std::move(frame));
}

int LoopbackQueue::take(FrameRing* ring, int fd, Buffer* out, int max) {
  if (!out || max < 0) return -EINVAL;
  for (int i = 0; i < max; i++) out[i].reset();  // never release under the lock
  std::lock_guard lock(*mu_);
  int n = 0;
  for (; n < max && ring->count(); n++) out[n] = ring->pop();
  if (n && !ring->count()) signal(fd, false);
  return n;
}

uint32_t LoopbackQueue::fill_level() const {
  std::lock_guard lock(*mu_);  // a test provider: a lock is fine here
  return static_cast<uint32_t>(fill_.count() + rx_.count());
}

int LoopbackQueue::rx(Buffer* out, int max) { return take(&rx_, rx_fd_, out, max); }

int LoopbackQueue::complete(Buffer* out, int max) { return take(&comp_, comp_fd_, out, max); }

int LoopbackQueue::tx(Buffer* pkts, int n) {
  if (!pkts || n < 0) return -EINVAL;
  for (int i = 0; i < n; i++)
    for (Buffer f = pkts[i].share(); f; f = f.next())
      if (f.pool() != cfg_.pool) return -EINVAL;
  for (int i = 0; i < n; i++)
    if (!pkts[i]) return -EINVAL;
  std::lock_guard lock(*mu_);
  int took = 0;
  // Every queued packet must find room on the completion ring.
  while (took < n && !tx_.full() && tx_.count() + comp_.count() < cfg_.completion_size)
    tx_.push(std::move(pkts[took++]));
  if (!needs_kick_) flush_locked();
  return took;
}

int LoopbackQueue::kick() {
  std::lock_guard lock(*mu_);
  flush_locked();
  return 0;
}

void LoopbackQueue::flush_locked() {
  if (!tx_.count()) return;
  while (tx_.count()) {
    Buffer pkt = tx_.pop();
    if (peer_) deliver_locked(pkt);
    stats_.tx_packets++;
    comp_.push(std::move(pkt));  // sent (or lost on the wire): back to its owner
  }
  signal(comp_fd_, true);
}

void LoopbackQueue::deliver_locked(const Buffer& pkt) {
  LoopbackQueue& to = *peer_;
  const size_t headroom = to.cfg_.pool->headroom();
  const size_t room = to.cfg_.pool->frame_size() - headroom;
  const size_t total = pkt.chain_size();
  const size_t nframes = total ? (total + room - 1) / room : 1;
  if (to.rx_.full()) {
    to.stats_.rx_dropped_rx_full++;
    return;
  }
  if (to.fill_.count() < nframes) {
    to.stats_.rx_dropped_no_fill++;
    return;
  }
  Buffer head;
  size_t left = total;
  Buffer src = pkt.share();  // walks the sender's chain; the chain keeps each frame
  size_t src_pos = 0;
  for (size_t i = 0; i < nframes; i++) {
    Buffer f = to.fill_.pop();
    const size_t len = left < room ? left : room;
    f.set_view(headroom, len);
    for (size_t done = 0; done < len;) {
      while (src_pos == src.size()) {
        src = src.next();
        src_pos = 0;
      }
      size_t k = src.size() - src_pos;
      if (k > len - done) k = len - done;
      std::memcpy(static_cast<char*>(f.data()) + done,
                  static_cast<const char*>(src.data()) + src_pos, k);
      done += k;
      src_pos += k;
    }
    left -= len;
    if (!head) {
      head = std::move(f);
    } else {
      head.append(std::move(f));  // both have one holder: cannot fail
    }
  }
  to.stats_.rx_packets++;
  const bool was_empty = !to.rx_.count();
  to.rx_.push(std::move(head));
  if (was_empty) signal(to.rx_fd_, true);
}

int LoopbackQueue::poll_fd(Ring r, short* events) const {
  if (!events) return -EINVAL;
  *events = POLLIN;
  if (r == Ring::kRx) return rx_fd_;
  if (r == Ring::kCompletion) return comp_fd_;
  return -EOPNOTSUPP;
}

ss::prov::RingStats LoopbackQueue::stats() const {
  std::lock_guard lock(*mu_);
  return stats_;
}

}  // namespace sstest
