#include "core/net/tcp/gso_batch.h"

#include <cerrno>
#include <cstring>

#include "core/net/byte_order.h"
#include "core/net/ethernet.h"
#include "core/net/frame_build.h"
#include "core/net/tcp/header.h"
#include "core/net/udp.h"

namespace ss::net::tcp {

namespace {

// struct virtio_net_hdr (the virtio spec; <linux/virtio_net.h> is not
// C++), in host order as packet sockets read it.
struct VnetHeader {
  uint8_t flags;
  uint8_t gso_type;
  uint16_t hdr_len;      // headers up to the data
  uint16_t gso_size;     // data per segment
  uint16_t csum_start;   // where the checksummed bytes start
  uint16_t csum_offset;  // the checksum field, from csum_start
};
static_assert(sizeof(VnetHeader) == 10);
constexpr uint8_t kNeedsCsum = 1, kGsoTcpV4 = 1, kGsoTcpV6 = 4;
constexpr size_t kVnetLen = sizeof(VnetHeader);

size_t addr_len(const FrameFields& f) { return f.ip_version == 4 ? 4 : 16; }

bool same_path(const FrameFields& a, const FrameFields& b) {
  return a.ip_version == b.ip_version && !memcmp(a.dst_mac, b.dst_mac, 6) &&
         !memcmp(a.src_mac, b.src_mac, 6) && !memcmp(a.src_ip, b.src_ip, addr_len(a)) &&
         !memcmp(a.dst_ip, b.dst_ip, addr_len(a)) && a.ttl == b.ttl && a.tos == b.tos &&
         a.flow_label == b.flow_label && a.dont_fragment == b.dont_fragment;
}

}  // namespace

GsoBatch::GsoBatch(size_t area_bytes, size_t max_packets)
    : area_(area_bytes), max_packets_(max_packets) {
  // Nothing allocates after this: packets() runs where nothing may throw.
  packets_.reserve(max_packets);
  iov_.reserve(max_packets);
}

bool GsoBatch::joins(const Packet& p, const void* owner, const FrameFields& f,
                     std::span<const uint8_t> header, size_t len) const {
  if (!p.open || p.owner != owner || header.size() != p.tcp_hlen) return false;
  if (len == 0 || len > p.seg_size || p.data + len > kMaxData) return false;
  if (!same_path(p.f, f)) return false;
  const uint8_t* t = area_.data() + p.off + kVnetLen + ip_frame_header_len(p.f.ip_version);
  const uint8_t flags = header[kFlagsOffset];
  if ((flags & ~(kPsh | kFin)) != kAck) return false;
  if (load_be32(header.data() + kSeqOffset) != p.next_seq) return false;
  // The rest of the header as the first segment's: ports, ACK number,
  // data offset, window, urgent pointer and options (the checksum is
  // zero in both).
  return !memcmp(t, header.data(), kSeqOffset) &&
         !memcmp(t + kAckOffset, header.data() + kAckOffset, kFlagsOffset - kAckOffset) &&
         !memcmp(t + kWindowOffset, header.data() + kWindowOffset, header.size() - kWindowOffset);
}

int GsoBatch::add(const void* owner, const FrameFields& f, size_t mtu,
                  std::span<const uint8_t> header, const SegmentData& data) {
  const size_t hlen = ip_frame_header_len(f.ip_version);
  if (!hlen || header.size() < kHeaderLen || header.size() > kMaxHeaderLen || header.size() % 4)
    return -EMSGSIZE;
  if (hlen - kEthHeaderLen + header.size() + data.len > mtu) return -EMSGSIZE;
  if (!packets_.empty()) {
    Packet& p = packets_.back();
    if (joins(p, owner, f, header, data.len)) {
      if (area_.size() - used_ < data.len) return -ENOBUFS;
      data.copy_to(area_.data() + used_);
      used_ += data.len;
      p.data += data.len;
      p.next_seq += static_cast<uint32_t>(data.len);
      p.segs++;
      segments_++;
      const uint8_t flags = header[kFlagsOffset];
      if (flags != kAck || data.len < p.seg_size) {
        // GSO puts these flags on the last segment only.
        area_[p.off + kVnetLen + hlen + kFlagsOffset] = flags;
        p.open = false;
      }
      return 0;
    }
    p.open = false;
  }
  const size_t need = kVnetLen + hlen + header.size() + data.len;
  if (packets_.size() == max_packets_ || area_.size() - used_ < need) return -ENOBUFS;
  Packet p;
  p.owner = owner;
  p.f = f;
  p.off = used_;
  p.tcp_hlen = header.size();
  p.data = p.seg_size = data.len;
  p.segs = 1;
  p.next_seq = load_be32(header.data() + kSeqOffset) + static_cast<uint32_t>(data.len);
  p.open = data.len > 0 && header[kFlagsOffset] == kAck;
  uint8_t* tcp = area_.data() + used_ + kVnetLen + hlen;
  memcpy(tcp, header.data(), header.size());
  data.copy_to(tcp + header.size());
  used_ += need;
  packets_.push_back(p);
  segments_++;
  return 0;
}

void GsoBatch::finish(size_t i) {
  const Packet& p = packets_[i];
  uint8_t* frame = area_.data() + p.off + kVnetLen;
  const size_t hlen = ip_frame_header_len(p.f.ip_version);
  const size_t l4 = p.tcp_hlen + p.data;
  // The IP header over the whole (GSO rewrites each segment's length, ID
  // and checksum), the pseudo-header's sum in the TCP checksum.
  build_ip_frame({frame, hlen + l4}, p.f, kIpProtoTcp, l4, hlen - kEthHeaderLen + l4);
  uint8_t* tcp = frame + hlen;
  store_be16(tcp + kChecksumOffset, 0);
  const Checksum c = pseudo_header_sum(p.f.ip_version, kIpProtoTcp, p.f.src_ip, p.f.dst_ip,
                                       static_cast<uint32_t>(l4));
  store_be16(tcp + kChecksumOffset, c.sum());
  VnetHeader vh{};
  vh.flags = kNeedsCsum;
  vh.csum_start = static_cast<uint16_t>(hlen);
  vh.csum_offset = kChecksumOffset;
  if (p.segs > 1) {
    vh.gso_type = p.f.ip_version == 4 ? kGsoTcpV4 : kGsoTcpV6;
    vh.gso_size = static_cast<uint16_t>(p.seg_size);
    vh.hdr_len = static_cast<uint16_t>(hlen + p.tcp_hlen);
  }
  memcpy(area_.data() + p.off, &vh, kVnetLen);
  iov_.push_back({area_.data() + p.off, kVnetLen + hlen + l4});
}

std::span<const iovec> GsoBatch::packets() {
  for (; finished_ < packets_.size(); finished_++) {
    packets_[finished_].open = false;
    finish(finished_);
  }
  return iov_;
}

void GsoBatch::clear() {
  used_ = 0;
  packets_.clear();
  iov_.clear();
  finished_ = 0;
  segments_ = 0;
}

}  // namespace ss::net::tcp
