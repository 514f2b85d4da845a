#include "libvmacompat/held_packets.h"

#include <cerrno>
#include <cstring>
#include <vector>

namespace ss::vma {

void* HeldPackets::new_id() {
  return reinterpret_cast<void*>(next_id_.fetch_add(1, std::memory_order_relaxed));
}

void HeldPackets::hold(void* id, net::Datagram&& d) {
  std::lock_guard lock(mu_);
  held_.emplace(id, std::move(d));
}

int HeldPackets::release(std::span<const void* const> ids, size_t* bytes) {
  if (bytes) *bytes = 0;
  std::vector<net::Datagram> freed;  // released after the lock
  freed.reserve(ids.size());
  std::lock_guard lock(mu_);
  // Every id is checked first: a bad one anywhere leaves them all held.
  for (size_t i = 0; i < ids.size(); i++) {
    if (!held_.count(ids[i])) return -ENOENT;
    for (size_t k = 0; k < i; k++)
      if (ids[k] == ids[i]) return -ENOENT;
  }
  for (const void* id : ids) {
    auto it = held_.find(id);
    if (bytes) *bytes += it->second.buf.size();
    freed.push_back(std::move(it->second));
    held_.erase(it);
  }
  return 0;
}

size_t HeldPackets::size() const {
  std::lock_guard lock(mu_);
  return held_.size();
}

ssize_t write_one_packet(void* buf, void* id, const net::Datagram& d) {
  // Through memcpy: the records are packed, buf need not be aligned.
  auto* out = static_cast<uint8_t*>(buf);
  const size_t one = 1;
  const iovec iov{d.buf.data(), d.buf.size()};
  std::memcpy(out + offsetof(vma_packets_t, n_packet_num), &one, sizeof one);
  uint8_t* pkt = out + offsetof(vma_packets_t, pkts);
  std::memcpy(pkt + offsetof(vma_packet_t, packet_id), &id, sizeof id);
  std::memcpy(pkt + offsetof(vma_packet_t, sz_iov), &one, sizeof one);
  std::memcpy(pkt + offsetof(vma_packet_t, iov), &iov, sizeof iov);
  return static_cast<ssize_t>(d.buf.size());
}

}  // namespace ss::vma
