// The packets the Extra API lends a program (vma_extra(7)): a datagram
// handed out by recvfrom_zcopy, or kept by a receive callback's
// VMA_PACKET_HOLD, stays in its UMEM frame, held here under its packet_id
// until free_packets gives it back (the frame then recycles into its fill
// ring). An id not held here (foreign, made up, freed already) is refused
// without touching anything; a socket's table dies with the socket,
// releasing what the program never freed. Ids are a counter, never the
// frame's address, so a late second free of a recycled frame's old id
// cannot free the frame's next datagram.
#pragma once
#include "core/base/api.h"
#include <mellanox/vma_extra.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <unordered_map>

#include "core/net/udp_stack.h"

namespace ss::vma {

class HeldPackets {
 public:
  // A packet_id never given before (for a datagram about to be held).
  SS_API void* new_id();
  // Keeps d (its buffer non-empty) under id (from new_id()).
  SS_API void hold(void* id, net::Datagram&& d);
  // Releases the packets of ids (free_packets read them from the
  // program's records): all of them, or none when one is not held or
  // appears twice: -ENOENT. 0 and *bytes (their payload, when asked).
  SS_API int release(std::span<const void* const> ids, size_t* bytes = nullptr);
  SS_API size_t size() const;

 private:
  std::atomic<uintptr_t> next_id_{1};
  mutable std::mutex mu_;
  std::unordered_map<const void*, net::Datagram> held_;
};

// Bytes a recvfrom_zcopy buffer needs for one UDP packet: the
// vma_packets_t header, one vma_packet_t and its one iovec.
constexpr size_t kZcopyOnePacket = sizeof(vma_packets_t) + sizeof(vma_packet_t) + sizeof(iovec);

// Writes the one-packet vma_packets_t for `id` whose payload is d's view
// into buf (kZcopyOnePacket bytes at least). Returns the payload size.
SS_API ssize_t write_one_packet(void* buf, void* id, const net::Datagram& d);

}  // namespace ss::vma
