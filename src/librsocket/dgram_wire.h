// The header a datagram rsocket puts before every datagram it sends over
// the kernel's UDP (docs/protocol.md, "Datagram rsockets"): 8 bytes,
// checked by the receiver before any payload byte reaches the caller.
#pragma once
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>

namespace ss::rs {

struct DgramHeader {
  uint32_t tag;      // kDgramTag, big-endian
  uint8_t version;   // 4 or 6: the network the datagram travels (v4-mapped is 4)
  uint8_t op;        // kDgramOpData
  uint8_t length;    // sizeof(DgramHeader)
  uint8_t reserved;  // 0
};
static_assert(sizeof(DgramHeader) == 8, "wire layout");

constexpr uint32_t kDgramTag = 0x53534447;  // "SSDG"; upstream's UDP header uses 0x55555555
constexpr uint8_t kDgramOpData = 0;
// One receive slot holds the header and the payload: a larger datagram is
// refused with EMSGSIZE by the sender and dropped by the receiver.
constexpr size_t kDgramSlot = 2048;
constexpr size_t kDgramMaxPayload = kDgramSlot - sizeof(DgramHeader);

// 4 for AF_INET and v4-mapped AF_INET6 addresses, 6 for other AF_INET6
// ones, 0 for any other family.
inline uint8_t dgram_ip_version(const sockaddr* sa) {
  if (sa->sa_family == AF_INET) return 4;
  if (sa->sa_family != AF_INET6) return 0;
  return IN6_IS_ADDR_V4MAPPED(&reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr) ? 4 : 6;
}

// Why a received datagram is dropped (kNone: it is good).
enum class DgramFault { kNone, kShort, kTag, kHeader, kFamily, kOversize };
const char* dgram_fault_name(DgramFault f);

// `received`: the datagram's whole length (header included); `src`: where
// the kernel says it came from.
DgramFault dgram_check(const DgramHeader& h, size_t received, const sockaddr* src);

}  // namespace ss::rs
