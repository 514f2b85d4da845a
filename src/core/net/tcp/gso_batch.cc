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
// A packet's place in the area: its virtio-net header, Ethernet and IP
// headers (IPv6's the longest) and TCP header with options.
constexpr size_t kStride = kVnetLen + kEthHeaderLen + 40 + kMaxHeaderLen;

size_t addr_len(const FrameFields& f) { return f.ip_version == 4 ? 4 : 16; }

bool same_path(const FrameFields& a, const FrameFields& b) {
  return a.ip_version == b.ip_version && !memcmp(a.dst_mac, b.dst_mac, 6) &&
         !memcmp(a.src_mac, b.src_mac, 6) && !memcmp(a.src_ip, b.src_ip, addr_len(a)) &&
         !memcmp(a.dst_ip, b.dst_ip, addr_len(a)) && a.ttl == b.ttl && a.tos == b.tos &&
         a.flow_label == b.flow_label && a.dont_fragment == b.dont_fragment;
}

}  // namespace

GsoBatch::GsoBatch(size_t max_packets) : area_(max_packets * kStride), max_packets_(max_packets) {
  // Nothing allocates after this: packets() runs where nothing may throw.
  packets_.reserve(max_packets);
  parts_.reserve(max_packets * kParts);
  msgs_.reserve(max_packets);
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

bool GsoBatch::gather(Packet& p, const SegmentData& data) {
  iovec piece[2];
  const size_t n = data.spans(piece);
  // Consecutive bytes of one queue: the piece before grows, unless it is
  // the headers.
  iovec& last = parts_.back();
  const bool grows =
      n && p.parts > 1 && static_cast<uint8_t*>(last.iov_base) + last.iov_len == piece[0].iov_base;
  if (p.parts + n - (grows ? 1 : 0) > kParts) return false;
  size_t i = 0;
  if (grows) last.iov_len += piece[i++].iov_len;
  for (; i < n; i++, p.parts++) parts_.push_back(piece[i]);
  return true;
}

int GsoBatch::add(const void* owner, const FrameFields& f, size_t mtu,
                  std::span<const uint8_t> header, const SegmentData& data) {
  const size_t hlen = ip_frame_header_len(f.ip_version);
  if (!hlen || header.size() < kHeaderLen || header.size() > kMaxHeaderLen || header.size() % 4)
    return -EMSGSIZE;
  if (hlen - kEthHeaderLen + header.size() + data.len > mtu) return -EMSGSIZE;
  if (!packets_.empty()) {
    Packet& p = packets_.back();
    if (joins(p, owner, f, header, data.len) && gather(p, data)) {
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
  if (packets_.size() == max_packets_) return -ENOBUFS;
  Packet p;
  p.owner = owner;
  p.f = f;
  p.off = packets_.size() * kStride;
  p.part = parts_.size();
  p.parts = 1;
  p.tcp_hlen = header.size();
  p.data = p.seg_size = data.len;
  p.segs = 1;
  p.next_seq = load_be32(header.data() + kSeqOffset) + static_cast<uint32_t>(data.len);
  p.open = data.len > 0 && header[kFlagsOffset] == kAck;
  uint8_t* vnet = area_.data() + p.off;
  memcpy(vnet + kVnetLen + hlen, header.data(), header.size());
  parts_.push_back({vnet, kVnetLen + hlen + header.size()});
  gather(p, data);  // two pieces at most: they fit
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
  build_ip_headers({frame, hlen}, p.f, kIpProtoTcp, l4, hlen - kEthHeaderLen + l4);
  uint8_t* tcp = frame + hlen;
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
  mmsghdr m{};
  m.msg_hdr.msg_iov = &parts_[p.part];
  m.msg_hdr.msg_iovlen = p.parts;
  msgs_.push_back(m);
}

std::span<mmsghdr> GsoBatch::packets() {
  for (; finished_ < packets_.size(); finished_++) {
    packets_[finished_].open = false;
    finish(finished_);
  }
  return msgs_;
}

void GsoBatch::clear() {
  packets_.clear();
  parts_.clear();
  msgs_.clear();
  finished_ = 0;
  segments_ = 0;
}

}  // namespace ss::net::tcp
