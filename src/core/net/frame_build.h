// Builds one UDP frame in place: the caller puts the payload after
// frame_header_len() bytes of headroom in its buffer, build_frame writes
// the Ethernet, IP and UDP headers in front of it, checksums included
// (IPv4 header; UDP over the pseudo-header, a zero result sent as 0xffff).
// No options, no extension headers, no fragments: a datagram that does
// not fit the MTU is refused and goes through the kernel.
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/net/frame_fields.h"

namespace ss::net {

// The headers' bytes in front of the payload: 42 for IPv4, 62 for IPv6;
// 0 for another version.
size_t frame_header_len(uint8_t ip_version);
// The Ethernet and IP headers alone: 34 for IPv4, 54 for IPv6; 0 else.
size_t ip_frame_header_len(uint8_t ip_version);

// buf: headroom, then payload_len bytes of payload at
// buf + frame_header_len(f.ip_version). mtu: the largest IP datagram
// (IP header included) the link carries. Returns the frame's length, or
// -EINVAL (ip_version neither 4 nor 6), -ENOBUFS (the payload does not fit
// in buf), -EMSGSIZE (the datagram exceeds the MTU or IP's 16-bit length).
ssize_t build_frame(std::span<uint8_t> buf, const FrameFields& f, size_t payload_len, size_t mtu);

// The Ethernet and IP headers (protocol `proto`) in front of l4_len bytes
// the caller put at buf + ip_frame_header_len(f.ip_version), its
// checksum included (f's ports are not used). Returns as build_frame.
ssize_t build_ip_frame(std::span<uint8_t> buf, const FrameFields& f, uint8_t proto, size_t l4_len,
                       size_t mtu);
// The same headers in `head` (at least ip_frame_header_len bytes) for
// l4_len bytes kept elsewhere (gathered by iovecs): the headers' length.
ssize_t build_ip_headers(std::span<uint8_t> head, const FrameFields& f, uint8_t proto,
                         size_t l4_len, size_t mtu);

// IP IDs as Linux 6.x numbers its UDP (seen on the wire): DF set on every
// datagram it does not fragment, and the ID still counted up by one per
// datagram from a random start (per socket when connected, per destination
// otherwise). One sequence per socket of ours.
class Ipv4IdSequence {
 public:
  Ipv4IdSequence();  // a random start
  explicit Ipv4IdSequence(uint16_t start) : last_(start) {}
  uint16_t next() { return ++last_; }

 private:
  uint16_t last_ = 0;
};

}  // namespace ss::net
