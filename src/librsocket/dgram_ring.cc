#include "librsocket/dgram_ring.h"

#include <sys/uio.h>

#include <cstring>
#include <new>

namespace ss::rs {

static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared between processes");

uint32_t dgram_ring_slots(size_t bytes) {
  if (bytes < dgram_ring_bytes(1)) return 0;
  size_t n = (bytes - sizeof(DgramRingHeader)) / sizeof(DgramSlot);
  uint32_t p = 1;
  while (size_t(p) * 2 <= n && p < (1u << 20)) p *= 2;
  return p;
}

void dgram_ring_init(void* ring, uint32_t slots) {
  auto* h = new (ring) DgramRingHeader{};
  h->magic = kDgramRingMagic;
  h->slots = slots;
  auto* s = reinterpret_cast<DgramSlot*>(static_cast<uint8_t*>(ring) + sizeof(DgramRingHeader));
  for (uint32_t i = 0; i < slots; i++) new (&s[i].seq) std::atomic<uint64_t>(i);  // free for pos i
}

bool dgram_ring_push(void* ring, uint32_t slots, const uint8_t* src_addr, uint8_t version,
                     uint16_t port_be, const iovec* iov, size_t iovcnt, size_t len, bool* wake) {
  auto* h = static_cast<DgramRingHeader*>(ring);
  auto* base = reinterpret_cast<DgramSlot*>(static_cast<uint8_t*>(ring) + sizeof(DgramRingHeader));
  DgramSlot* s = nullptr;
  uint64_t pos = h->tail.load(std::memory_order_relaxed);
  // Bounded: the counters live in memory the owner (or another sender)
  // could scribble on; a claim that never succeeds is a full ring.
  for (int tries = 0; tries < 1024 && !s; tries++) {
    DgramSlot* c = &base[pos & (slots - 1)];
    int64_t diff = int64_t(c->seq.load(std::memory_order_acquire) - pos);
    if (diff == 0) {
      if (h->tail.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) s = c;
    } else if (diff < 0) {
      break;  // not yet emptied: full
    } else {
      pos = h->tail.load(std::memory_order_relaxed);  // another sender took it
    }
  }
  if (!s) {
    h->overflow.fetch_add(1, std::memory_order_relaxed);
    *wake = h->sleepers.load(std::memory_order_relaxed) != 0;
    return false;
  }
  s->len = static_cast<uint32_t>(len);
  s->port = port_be;
  s->version = version;
  s->reserved = 0;
  memcpy(s->addr, src_addr, version == 4 ? 4 : 16);
  size_t off = 0;
  for (size_t i = 0; i < iovcnt; i++) {
    if (iov[i].iov_len == 0) continue;  // its base may be null
    memcpy(s->data + off, iov[i].iov_base, iov[i].iov_len);
    off += iov[i].iov_len;
  }
  s->seq.store(pos + 1, std::memory_order_release);
  // After the publication: an owner that raised `sleepers` before looking
  // at the ring either saw the datagram or is woken.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  *wake = h->sleepers.load(std::memory_order_relaxed) != 0;
  return true;
}

}  // namespace ss::rs
