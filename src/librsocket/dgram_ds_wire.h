// Upstream librdmacm's datagram wire formats (docs/protocol.md, "Datagram
// rsockets over verbs"), spoken where a datagram rsocket runs over a UD
// queue pair: the header in front of a datagram sent over the rsocket's
// UDP socket (it carries the sender's UD QPN, so the receiver can answer
// over verbs), and the header in front of every UD SEND (the sender's port
// and address, given back as the source). Layouts and constants carry over
// from upstream; both are checked before any payload byte is used.
#pragma once
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>

#include "librsocket/dgram_wire.h"

namespace ss::rs {

constexpr uint32_t kDsUdpTag = 0x55555555;
constexpr uint8_t kDsOpData = 0;  // payload follows
constexpr uint8_t kDsOpCtrl = 7;  // header only: "this is my QPN"
constexpr uint8_t kDsUdpLen4 = 16, kDsUdpLen6 = 28;
constexpr uint8_t kDsLen4 = 8, kDsLen6 = 24;
constexpr uint32_t kDsQkey = 0x01234567;  // every UD send and QP
constexpr size_t kDsGrh = 40;             // the GRH a UD receive starts with

// Over the UDP socket: 16 bytes (IPv4) or 28 (IPv6).
struct DsUdpHeader {
  uint32_t tag;      // kDsUdpTag, big-endian
  uint8_t version;   // 4 or 6: the family of addr
  uint8_t op;        // kDsOpData or kDsOpCtrl
  uint8_t length;    // kDsUdpLen4 or kDsUdpLen6
  uint8_t reserved;  // 0
  uint32_t qpn;      // big-endian; the sender's UD QPN in the low 24 bits
  uint8_t addr[16];  // the sender QP's address (4 bytes used for IPv4)
};
static_assert(sizeof(DsUdpHeader) == kDsUdpLen6, "wire layout");

// In front of every UD SEND: 8 bytes (IPv4) or 24 (IPv6).
struct DsHeader {
  uint8_t version;          // 4 or 6
  uint8_t length;           // kDsLen4 or kDsLen6
  uint16_t port;            // the sender's UDP port, big-endian
  uint32_t v4_or_flowinfo;  // IPv4: the address; IPv6: sin6_flowinfo
  uint8_t addr6[16];        // IPv6 only
};
static_assert(sizeof(DsHeader) == kDsLen6, "wire layout");

// What a good DsUdpHeader says.
struct DsUdpInfo {
  uint8_t op;
  uint8_t length;            // where the payload starts
  uint32_t qpn;              // host order
  sockaddr_storage qp_addr;  // the sender QP's address, port 0
};

// Fills `h` for a sender whose QP has address `qp_addr` (AF_INET or
// AF_INET6); the header's length, or 0 for another family or a QPN wider
// than 24 bits.
size_t ds_udp_header_make(DsUdpHeader* h, uint8_t op, uint32_t qpn, const sockaddr* qp_addr);
// `received`: the datagram's whole length; `src`: where the kernel says it
// came from (its family must match the header's version, v4-mapped counting
// as 4). kNone and *out filled, or why it is dropped.
DgramFault ds_udp_header_check(const void* buf, size_t received, const sockaddr* src,
                               DsUdpInfo* out);

// Fills `h` with our port and address `self` (AF_INET or AF_INET6); the
// header's length, or 0 for another family.
size_t ds_header_make(DsHeader* h, const sockaddr* self);
// `received`: the bytes after the GRH. On kNone, *hdr_len is where the
// payload starts and `src` (of `src_len` bytes room, set to the length
// used) the sender's address: an IPv4 sender given to an AF_INET6 socket
// (`domain`) as v4-mapped; an IPv6 one to an AF_INET socket is kFamily.
DgramFault ds_header_check(const void* buf, size_t received, int domain, size_t* hdr_len,
                           sockaddr_storage* src, socklen_t* src_len);

}  // namespace ss::rs
