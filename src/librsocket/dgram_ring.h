// A datagram rsocket's receive ring in shared memory: slots of one
// datagram each, filled by any number of same-host senders (each claims a
// slot with a compare-and-swap on the tail, writes it, then publishes its
// sequence number) and emptied by the owner alone. A full ring drops the
// datagram and counts it; the sender never waits. Senders are other
// processes of our user (the rendezvous checks): what they write is
// checked by the owner before any byte reaches its caller.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "librsocket/dgram_wire.h"

namespace ss::rs {

struct DgramRingHeader {
  uint32_t magic;  // kDgramRingMagic
  uint32_t slots;  // a power of two (senders derive it from the size instead)
  alignas(64) std::atomic<uint64_t> tail;      // next slot senders claim
  alignas(64) std::atomic<uint32_t> sleepers;  // 1: owner threads are about to sleep: wake them
  std::atomic<uint64_t> overflow;              // datagrams dropped because the ring was full
  std::atomic<uint32_t> closed;                // the owner closed its socket: senders let go
};

struct DgramSlot {
  std::atomic<uint64_t> seq;  // pos + 1: published for position pos; pos + slots: free again
  uint32_t len;               // payload bytes
  uint16_t port;              // the sender's port, network order
  uint8_t version;            // 4 or 6: which address follows
  uint8_t reserved;
  uint8_t addr[16];  // the sender's address (IPv4: the first 4 bytes)
  uint8_t data[kDgramMaxPayload];
};

constexpr uint32_t kDgramRingMagic = 0x53534452;  // "SSDR"

inline size_t dgram_ring_bytes(uint32_t slots) {
  return sizeof(DgramRingHeader) + size_t(slots) * sizeof(DgramSlot);
}
// The slot count a mapping of `bytes` holds (a power of two), 0 if none.
uint32_t dgram_ring_slots(size_t bytes);

// Sender side: claims a slot and fills it. False when the ring was full
// (counted in overflow) or a hostile owner's counters never let a claim
// succeed. `wake` is set when the owner may be asleep.
bool dgram_ring_push(void* ring, uint32_t slots, const uint8_t* src_addr, uint8_t version,
                     uint16_t port_be, const struct iovec* iov, size_t iovcnt, size_t len,
                     bool* wake);

// Owner side: the slot at `head` when a sender has published it, else null.
inline DgramSlot* dgram_ring_peek(void* ring, uint32_t slots, uint64_t head) {
  auto* s = reinterpret_cast<DgramSlot*>(static_cast<uint8_t*>(ring) + sizeof(DgramRingHeader)) +
            (head & (slots - 1));
  return s->seq.load(std::memory_order_acquire) == head + 1 ? s : nullptr;
}
// Gives the slot at `head` back to the senders.
inline void dgram_ring_release(DgramSlot* s, uint32_t slots, uint64_t head) {
  s->seq.store(head + slots, std::memory_order_release);
}
// Initialises a fresh ring of `slots`.
void dgram_ring_init(void* ring, uint32_t slots);

}  // namespace ss::rs
