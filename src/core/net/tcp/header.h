// TCP header (RFC 9293 §3.1): the fixed 20 bytes, then options up to the
// data offset (32-bit words, header included, 5..15).
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/mem/buffer.h"
#include "core/net/byte_order.h"
#include "core/net/ipv4.h"  // kIpProtoTcp

namespace ss::net::tcp {

constexpr size_t kHeaderLen = 20, kMaxHeaderLen = 60, kMaxOptionsLen = 40;
constexpr size_t kSeqOffset = 4, kAckOffset = 8, kDataOffsetOffset = 12, kFlagsOffset = 13,
                 kWindowOffset = 14, kChecksumOffset = 16, kUrgentOffset = 18;

// The flags byte (CWR and ECE are RFC 3168's).
enum Flag : uint8_t {
  kFin = 0x01,
  kSyn = 0x02,
  kRst = 0x04,
  kPsh = 0x08,
  kAck = 0x10,
  kUrg = 0x20,
  kEce = 0x40,
  kCwr = 0x80,
};

// p: at least kHeaderLen bytes.
struct HeaderView {
  const uint8_t* p;
  uint16_t src_port() const { return load_be16(p); }
  uint16_t dst_port() const { return load_be16(p + 2); }
  uint32_t seq() const { return load_be32(p + kSeqOffset); }
  uint32_t ack() const { return load_be32(p + kAckOffset); }
  size_t header_len() const { return static_cast<size_t>(p[kDataOffsetOffset] >> 4) * 4; }
  uint8_t flags() const { return p[kFlagsOffset]; }
  uint16_t window() const { return load_be16(p + kWindowOffset); }
  uint16_t checksum() const { return load_be16(p + kChecksumOffset); }
  uint16_t urgent() const { return load_be16(p + kUrgentOffset); }
};

// What a received segment's header says, in host order.
struct Header {
  uint16_t src_port = 0, dst_port = 0;
  uint32_t seq = 0, ack = 0;
  uint8_t flags = 0;
  uint16_t window = 0, urgent = 0;
  std::span<const uint8_t> options;  // inside the segment
};

// Why a segment's header is refused (counted by the caller, the segment
// dropped), or kOk.
enum class HeaderVerdict : uint8_t { kOk, kShort, kBadDataOffset };

// Reads the header of `segment` (the IP payload: header, options, data)
// into *out and the data into *data; reads only inside `segment`. The
// checksum is the caller's (it needs the pseudo-header).
HeaderVerdict parse_header(std::span<const uint8_t> segment, Header* out,
                           std::span<const uint8_t>* data);

// The checksum of a whole segment (header, options, data) between src and
// dst (4- or 16-byte addresses by ip_version): checksum_ok() on a received
// one, fill_checksum() on one to send (its checksum field is overwritten).
bool checksum_ok(uint8_t ip_version, const uint8_t* src, const uint8_t* dst,
                 std::span<const uint8_t> segment);
// The same over a segment that may span linked frames (Buffer::next).
bool checksum_ok(uint8_t ip_version, const uint8_t* src, const uint8_t* dst,
                 const mem::Buffer& segment);
void fill_checksum(uint8_t ip_version, const uint8_t* src, const uint8_t* dst,
                   std::span<uint8_t> segment);

// Writes a header (data offset from options_len, a multiple of 4 up to
// kMaxOptionsLen; checksum zero) into out[0, kHeaderLen).
void write_header(uint8_t* out, const Header& h, size_t options_len);

}  // namespace ss::net::tcp
