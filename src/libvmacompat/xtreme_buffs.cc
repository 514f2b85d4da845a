#include "libvmacompat/xtreme_buffs.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <algorithm>
#include <new>
#include <vector>

#include "core/base/log.h"

namespace ss::vma {

// At the frame's start: what the program reads first, then ours.
struct XtremeBuffs::Lent {
  vma_buff_t pub;
  std::atomic<uint64_t> tag;
  std::atomic<int32_t> refs;
  LentOwner* owner;  // told pub.len at the last unref
};

namespace {
// Where a copied payload starts in its fresh frame (after the descriptor,
// cache-line aligned).
constexpr size_t kCopyAt = 64;
}  // namespace

size_t XtremeBuffs::header_size() { return sizeof(Lent); }

XtremeBuffs::XtremeBuffs()
    : tag_(0x5853747265656dULL ^ reinterpret_cast<uintptr_t>(this)) {  // per object
  static_assert(sizeof(Lent) <= kCopyAt);
}

bool XtremeBuffs::add_pool(mem::Pool* p) {
  const size_t n = npools_.load(std::memory_order_acquire);
  for (size_t i = 0; i < n; i++)
    if (pools_[i].load(std::memory_order_relaxed) == p) return true;
  std::lock_guard lock(add_mu_);
  const size_t m = npools_.load(std::memory_order_relaxed);
  for (size_t i = n; i < m; i++)
    if (pools_[i].load(std::memory_order_relaxed) == p) return true;
  if (m == kMaxPools) return false;
  pools_[m].store(p, std::memory_order_relaxed);
  npools_.store(m + 1, std::memory_order_release);
  return true;
}

XtremeBuffs::Lent* XtremeBuffs::find(const void* b) const {
  const auto a = reinterpret_cast<uintptr_t>(b);
  const size_t n = npools_.load(std::memory_order_acquire);
  for (size_t i = 0; i < n; i++) {
    const mem::Pool* p = pools_[i].load(std::memory_order_relaxed);
    for (size_t c = 0, nc = p->chunk_count(); c < nc; c++) {
      const auto base = reinterpret_cast<uintptr_t>(p->chunk_base(c));
      if (a < base || a - base >= p->chunk_bytes()) continue;
      if ((a - base) & (p->frame_size() - 1)) return nullptr;  // not a frame's start
      auto* l = reinterpret_cast<Lent*>(a);
      return l->tag.load(std::memory_order_acquire) == tag_ ? l : nullptr;
    }
  }
  return nullptr;
}

int XtremeBuffs::lend(net::Datagram& d, vma_buff_t** out, LentOwner* owner) {
  mem::Pool* pool = d.buf.pool();
  if (!pool || !add_pool(pool)) return -ENOBUFS;
  mem::Buffer b;
  if (d.buf.use_count() != 1 || d.buf.offset() < sizeof(Lent)) {
    b = pool->get();
    if (!b || b.set_view(kCopyAt, d.buf.size()) < 0) return -ENOBUFS;
    std::memcpy(b.data(), d.buf.data(), d.buf.size());
    d.buf.reset();
  } else {
    b = std::move(d.buf);
  }
  *out = lend_frame(std::move(b), owner);
  return 0;
}

ssize_t XtremeBuffs::lend_read(mem::Pool* pool, size_t most,
                               const std::function<ssize_t(void*, size_t)>& read, vma_buff_t** out,
                               LentOwner* owner) {
  if (!pool || !add_pool(pool)) return -ENOBUFS;
  mem::Buffer b = pool->get();
  if (!b || b.frame_size() <= kCopyAt) return -ENOBUFS;
  const size_t room = std::min<size_t>({most, b.frame_size() - kCopyAt, UINT16_MAX});
  if (room == 0 || b.set_view(kCopyAt, room) < 0) return -ENOBUFS;
  const ssize_t n = read(b.data(), room);
  if (n <= 0) return n;  // the frame goes back
  b.set_view(kCopyAt, static_cast<size_t>(n));
  *out = lend_frame(std::move(b), owner);
  return n;
}

vma_buff_t* XtremeBuffs::lend_frame(mem::Buffer b, LentOwner* owner) {
  auto* l = new (b.frame()) Lent;
  l->pub.next = nullptr;
  l->pub.payload = b.data();
  l->pub.len = static_cast<uint16_t>(b.size());
  l->refs.store(1, std::memory_order_relaxed);
  l->owner = owner;
  if (owner) owner->lent();
  l->tag.store(tag_, std::memory_order_release);
  b.into_raw();  // the frame's reference is the program's now
  return &l->pub;
}

int XtremeBuffs::ref(vma_buff_t* b) {
  Lent* l = find(b);
  if (!l) return -EINVAL;
  int32_t n = l->refs.load(std::memory_order_acquire);
  do {
    if (n <= 0) return -EINVAL;
    if (n == INT32_MAX) return -EOVERFLOW;
  } while (!l->refs.compare_exchange_weak(n, n + 1, std::memory_order_acq_rel));
  return n + 1;
}

int XtremeBuffs::unref(vma_buff_t* b) {
  Lent* l = find(b);
  if (!l) return -EINVAL;
  int32_t n = l->refs.load(std::memory_order_acquire);
  do {
    if (n <= 0) return -EINVAL;
  } while (!l->refs.compare_exchange_weak(n, n - 1, std::memory_order_acq_rel));
  if (n > 1) return n - 1;
  // The last reference: untagged first, so a late pointer finds nothing.
  l->tag.store(0, std::memory_order_release);
  if (LentOwner* o = l->owner) o->returned(l->pub.len);
  mem::Buffer back;
  for (size_t i = 0, np = npools_.load(std::memory_order_acquire); i < np; i++)
    if (pools_[i].load(std::memory_order_relaxed)->from_raw(b, &back) == 0) break;
  if (!back)
    SS_WARN("socketXtreme: buffer %p was not lent by its pool (kept)", static_cast<void*>(b));
  return 0;  // back's release recycles the frame into its fill ring
}

int XtremeBuffs::free_packets(const vma_packet_desc_t* pkts, int num) {
  if (!pkts || num < 0) return -EINVAL;
  // Every buffer is checked before any is freed.
  std::vector<vma_buff_t*> all;
  for (int i = 0; i < num; i++) {
    vma_buff_t* b = pkts[i].buff_lst;
    if (!b) return -EINVAL;
    for (size_t k = 0; b; k++, b = b->next) {
      if (k >= pkts[i].num_bufs || !find(b)) return -EINVAL;
      all.push_back(b);
    }
  }
  std::vector<vma_buff_t*> sorted(all);
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return -EINVAL;
  int err = 0;
  for (vma_buff_t* b : all)
    if (unref(b) < 0) err = -EINVAL;  // another thread freed it meanwhile
  return err;
}

}  // namespace ss::vma
