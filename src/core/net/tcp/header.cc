#include "core/net/tcp/header.h"

#include "core/net/udp.h"

namespace ss::net::tcp {

HeaderVerdict parse_header(std::span<const uint8_t> segment, Header* out,
                           std::span<const uint8_t>* data) {
  if (segment.size() < kHeaderLen) return HeaderVerdict::kShort;
  const HeaderView v{segment.data()};
  const size_t hl = v.header_len();
  if (hl < kHeaderLen || hl > segment.size()) return HeaderVerdict::kBadDataOffset;
  out->src_port = v.src_port();
  out->dst_port = v.dst_port();
  out->seq = v.seq();
  out->ack = v.ack();
  out->flags = v.flags();
  out->window = v.window();
  out->urgent = v.urgent();
  out->options = segment.subspan(kHeaderLen, hl - kHeaderLen);
  *data = segment.subspan(hl);
  return HeaderVerdict::kOk;
}

bool checksum_ok(uint8_t ip_version, const uint8_t* src, const uint8_t* dst,
                 std::span<const uint8_t> segment) {
  Checksum c =
      pseudo_header_sum(ip_version, kIpProtoTcp, src, dst, static_cast<uint32_t>(segment.size()));
  c.add(segment);
  return c.sum() == 0xffff;
}

bool checksum_ok(uint8_t ip_version, const uint8_t* src, const uint8_t* dst,
                 const mem::Buffer& segment) {
  Checksum c = pseudo_header_sum(ip_version, kIpProtoTcp, src, dst,
                                 static_cast<uint32_t>(segment.chain_size()));
  c.add(segment.data(), segment.size());
  for (mem::Buffer f = segment.next(); f; f = f.next()) c.add(f.data(), f.size());
  return c.sum() == 0xffff;
}

void fill_checksum(uint8_t ip_version, const uint8_t* src, const uint8_t* dst,
                   std::span<uint8_t> segment) {
  store_be16(segment.data() + kChecksumOffset, 0);
  Checksum c =
      pseudo_header_sum(ip_version, kIpProtoTcp, src, dst, static_cast<uint32_t>(segment.size()));
  c.add(segment.data(), segment.size());
  store_be16(segment.data() + kChecksumOffset, c.result());
}

void write_header(uint8_t* out, const Header& h, size_t options_len) {
  store_be16(out, h.src_port);
  store_be16(out + 2, h.dst_port);
  store_be32(out + kSeqOffset, h.seq);
  store_be32(out + kAckOffset, h.ack);
  out[kDataOffsetOffset] = static_cast<uint8_t>(((kHeaderLen + options_len) / 4) << 4);
  out[kFlagsOffset] = h.flags;
  store_be16(out + kWindowOffset, h.window);
  store_be16(out + kChecksumOffset, 0);
  store_be16(out + kUrgentOffset, h.urgent);
}

}  // namespace ss::net::tcp
