// What XdpQueue and JoinedQueue both take from the kernel's AF_XDP
// interface: Linux 6.6's multi-buffer flags past older headers, the bound
// on a packet's frames, and the socket's own drop counters.
#pragma once
#include <linux/if_xdp.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <xdp/xsk.h>

#include <cstdint>

#include "core/prov/ring.h"

#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4)
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif

namespace ss::prov::xdp {

// Linux bounds a packet at MAX_SKB_FRAGS + 1 buffers (17 + 1 by default,
// 45 + 1 at most); a longer chain is a broken kernel's, dropped.
constexpr uint32_t kMaxFramesPerPacket = 46;

inline bool pow2(uint32_t n) { return n && !(n & (n - 1)); }

// A producer ring that other processes also fill (the family's lock
// held): libxdp's cached indices are this process's, so both are read
// again (cached_cons is the consumer plus the size, as libxdp keeps it).
inline void resync_producer(xsk_ring_prod* r) {
  r->cached_prod = __atomic_load_n(r->producer, __ATOMIC_RELAXED);
  r->cached_cons = __atomic_load_n(r->consumer, __ATOMIC_ACQUIRE) + r->size;
}

// A ring's mapping, from its producer index at `producer_off` in it, kept
// out of fork children: a child's copy would hold the socket, and its
// queue, after this process is gone (a daemon's child could not take the
// queue over then).
inline void keep_from_forks(const void* producer, uint64_t producer_off, uint64_t desc_off,
                            uint32_t entries, size_t entry_bytes) {
  const auto* base = static_cast<const uint8_t*>(producer) - producer_off;
  (void)madvise(const_cast<uint8_t*>(base), desc_off + entries * entry_bytes, MADV_DONTFORK);
}

// The drops the kernel counted on socket fd, into s.
inline void add_kernel_drops(int fd, RingStats* s) {
  xdp_statistics ks{};
  socklen_t len = sizeof ks;
  if (getsockopt(fd, SOL_XDP, XDP_STATISTICS, &ks, &len) == 0) {
    s->rx_dropped_rx_full = ks.rx_ring_full;
    s->rx_dropped_no_fill = ks.rx_fill_ring_empty_descs;
  }
}

}  // namespace ss::prov::xdp
