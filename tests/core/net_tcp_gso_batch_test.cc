// GsoBatch (core/net/tcp/gso_batch.h): segments merged into packets for
// GSO, each packet cut again here as Linux's GSO cuts it (gso_size data
// per segment, the sequence number stepped, PSH and FIN on the last
// segment only) and its TCP segments compared byte by byte with those that
// went in: the merge loses, reorders and changes nothing. Per packet: the
// virtio-net header, the IP header (lengths over the whole, checksum, DF)
// and the partial TCP checksum (the pseudo-header's sum over the whole).
// What may not merge stands alone; a full batch says so; data is gathered
// from the send queue where it is.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/net/checksum.h"
#include "core/net/tcp/gso_batch.h"
#include "core/net/tcp/header.h"
#include "core/net/tcp/options.h"
#include "core/net/udp.h"
#include "tests/core/net_frame_util.h"

namespace ss::net::tcp {
namespace {

using test::Bytes;
using test::get16;
using test::kL3;
using test::put16;

constexpr size_t kMss = 1448;

struct Vnet {  // struct virtio_net_hdr, as the batch writes it
  uint8_t flags, gso_type;
  uint16_t hdr_len, gso_size, csum_start, csum_offset;
};

// The segments one connection sends: a send queue of numbered bytes and
// the headers the connection would write (timestamps on).
class Segments {
 public:
  explicit Segments(uint8_t version = 4, size_t queue_bytes = 1 << 20) : q_(queue_bytes) {
    refill();
    f.ip_version = version;
    const uint8_t a[16] = {10, 0, 0, 1}, b[16] = {10, 0, 0, 2};
    const uint8_t a6[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    const uint8_t b6[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
    memcpy(f.src_ip, version == 4 ? a : a6, 16);
    memcpy(f.dst_ip, version == 4 ? b : b6, 16);
    const uint8_t sm[6] = {2, 0, 0, 0, 0, 1}, dm[6] = {2, 0, 0, 0, 0, 2};
    memcpy(f.src_mac, sm, 6);
    memcpy(f.dst_mac, dm, 6);
    f.ip_id = 100;
  }
  // The segment at offset off of len bytes: its TCP header and options
  // in header, its data; remembered whole (checksum zero) in sent.
  SegmentData next(size_t off, size_t len, uint8_t flags = kAck, uint16_t window = 500) {
    Header h;
    h.src_port = 40000;
    h.dst_port = 5201;
    h.seq = kIss + static_cast<uint32_t>(off);
    h.ack = 77;
    h.flags = flags;
    h.window = window;
    Options o;
    o.has_ts = true;
    o.ts_val = 1000;
    o.ts_ecr = 2000;
    uint8_t opts[kMaxOptionsLen];
    const size_t opts_len = write_options(o, opts);
    header.assign(kHeaderLen + opts_len, 0);
    write_header(header.data(), h, opts_len);
    memcpy(header.data() + kHeaderLen, opts, opts_len);
    Bytes whole = header;
    whole.resize(header.size() + len);
    q_.copy_out(off, len, whole.data() + header.size());
    sent.push_back(whole);
    return {&q_, off, len};
  }
  // Adds the segment at off to batch with the next IPv4 ID.
  int add(GsoBatch& batch, size_t off, size_t len, uint8_t flags = kAck, uint16_t window = 500,
          const void* owner = nullptr) {
    const SegmentData d = next(off, len, flags, window);
    const int r = batch.add(owner ? owner : this, f, 1500, header, d);
    f.ip_id++;
    if (r != 0) sent.pop_back();
    return r;
  }
  // The oldest n bytes acknowledged, as many new ones taken: the queue's
  // ring starts n bytes further on.
  void advance(size_t n) {
    q_.consume(n);
    refill();
  }
  static constexpr uint32_t kIss = 0xfffff000;  // the sequence number wraps inside the burst
  FrameFields f;
  Bytes header;
  std::vector<Bytes> sent;

 private:
  void refill() {
    Bytes data(q_.space());
    for (size_t i = 0; i < data.size(); i++, made_++)
      data[i] = static_cast<uint8_t>(made_ * 7 + made_ / 251);
    q_.append(data);
  }
  SendBuffer q_;
  size_t made_ = 0;
};

// One packet cut as Linux's GSO does; each segment's TCP bytes (checksum
// checked against the pseudo-header, then zeroed) appended to out, each
// frame's IP header checked.
Bytes gathered(const mmsghdr& m) {
  Bytes b;
  for (size_t i = 0; i < m.msg_hdr.msg_iovlen; i++) {
    const auto* p = static_cast<const uint8_t*>(m.msg_hdr.msg_iov[i].iov_base);
    b.insert(b.end(), p, p + m.msg_hdr.msg_iov[i].iov_len);
  }
  return b;
}

void cut(const mmsghdr& m, uint8_t version, std::vector<Bytes>* out) {
  const Bytes pkt = gathered(m);
  ASSERT_GE(pkt.size(), sizeof(Vnet));
  Vnet vh;
  memcpy(&vh, pkt.data(), sizeof vh);
  const Bytes frame(pkt.begin() + sizeof vh, pkt.end());
  const size_t ip_hlen = version == 4 ? 20 : 40, l4 = kL3 + ip_hlen;
  ASSERT_EQ(get16(frame, 12), version == 4 ? 0x0800 : 0x86dd);
  ASSERT_EQ(vh.flags, 1);  // VIRTIO_NET_HDR_F_NEEDS_CSUM
  ASSERT_EQ(vh.csum_start, l4);
  ASSERT_EQ(vh.csum_offset, kChecksumOffset);
  const size_t tcp_hlen = (frame[l4 + kDataOffsetOffset] >> 4) * 4u;
  const size_t data = frame.size() - l4 - tcp_hlen;
  // The IP lengths cover the whole packet; the TCP checksum holds the
  // pseudo-header's sum over it, which GSO steps per segment.
  EXPECT_EQ(test::ip_payload_len(frame), tcp_hlen + data);
  const Checksum whole = pseudo_header_sum(
      version, kIpProtoTcp, &frame[kL3 + (version == 4 ? 12 : 8)],
      &frame[kL3 + (version == 4 ? 16 : 24)], static_cast<uint32_t>(tcp_hlen + data));
  EXPECT_EQ(get16(frame, l4 + kChecksumOffset), whole.sum());
  size_t seg = data, n = 1;
  if (vh.gso_type) {
    ASSERT_EQ(vh.gso_type, version == 4 ? 1 : 4);  // VIRTIO_NET_HDR_GSO_TCPV4, _TCPV6
    ASSERT_EQ(vh.hdr_len, l4 + tcp_hlen);
    seg = vh.gso_size;
    n = (data + seg - 1) / seg;
    ASSERT_GT(n, 1u);
  }
  const uint32_t seq0 = load_be32(&frame[l4 + kSeqOffset]);
  const uint8_t flags = frame[l4 + kFlagsOffset];
  for (size_t k = 0; k < n; k++) {
    const size_t len = std::min(seg, data - k * seg);
    Bytes s(frame.begin() + static_cast<long>(l4),
            frame.begin() + static_cast<long>(l4 + tcp_hlen));
    s.insert(s.end(), frame.begin() + static_cast<long>(l4 + tcp_hlen + k * seg),
             frame.begin() + static_cast<long>(l4 + tcp_hlen + k * seg + len));
    store_be32(&s[kSeqOffset], seq0 + static_cast<uint32_t>(k * seg));
    if (k + 1 < n) s[kFlagsOffset] = flags & ~(kPsh | kFin);
    Checksum c =
        pseudo_header_sum(version, kIpProtoTcp, &frame[kL3 + (version == 4 ? 12 : 8)],
                          &frame[kL3 + (version == 4 ? 16 : 24)], static_cast<uint32_t>(s.size()));
    put16(s, kChecksumOffset, 0);
    c.add(s.data(), s.size());
    put16(s, kChecksumOffset, c.result());
    Checksum check =
        pseudo_header_sum(version, kIpProtoTcp, &frame[kL3 + (version == 4 ? 12 : 8)],
                          &frame[kL3 + (version == 4 ? 16 : 24)], static_cast<uint32_t>(s.size()));
    check.add(s.data(), s.size());
    EXPECT_EQ(check.sum(), 0xffff);
    put16(s, kChecksumOffset, 0);
    out->push_back(s);
  }
  if (version == 4) {
    EXPECT_EQ(test::ref_sum(&frame[kL3], 20), 0xffff) << "IPv4 header checksum";
    EXPECT_EQ(frame[kL3 + 6] & 0x40, 0x40) << "DF";
  }
}

std::vector<Bytes> cut_all(GsoBatch& batch, uint8_t version = 4) {
  std::vector<Bytes> out;
  for (const mmsghdr& p : batch.packets()) cut(p, version, &out);
  return out;
}

TEST(GsoBatch, ABurstIsOnePacketCutBackIntoItsSegments) {
  Segments c;
  GsoBatch batch;
  for (size_t i = 0; i < 6; i++) ASSERT_EQ(c.add(batch, i * kMss, kMss), 0);
  ASSERT_EQ(c.add(batch, 6 * kMss, 100, kAck | kPsh), 0);  // the tail ends it
  ASSERT_EQ(c.add(batch, 6 * kMss + 100, kMss), 0);        // a packet of its own
  EXPECT_EQ(batch.packets().size(), 2u);
  EXPECT_EQ(batch.segments(), 8u);
  EXPECT_EQ(cut_all(batch), c.sent);
}

TEST(GsoBatch, IPv6BurstsMergeToo) {
  Segments c(6);
  GsoBatch batch;
  constexpr size_t kMss6 = 1428;  // IPv6's 40-byte header
  for (size_t i = 0; i < 4; i++) ASSERT_EQ(c.add(batch, i * kMss6, kMss6), 0);
  ASSERT_EQ(c.add(batch, 4 * kMss6, kMss6, kAck | kFin), 0);
  EXPECT_EQ(batch.packets().size(), 1u);
  EXPECT_EQ(cut_all(batch, 6), c.sent);
}

TEST(GsoBatch, WhatGsoWouldChangeStandsAlone) {
  Segments c;
  GsoBatch batch;
  const void* other = &batch;                                    // another connection's sink
  ASSERT_EQ(c.add(batch, 0, 0), 0);                              // a pure ACK
  ASSERT_EQ(c.add(batch, 0, kMss), 0);                           // data after it: a new packet
  ASSERT_EQ(c.add(batch, kMss, kMss, kAck, 501), 0);             // another window
  ASSERT_EQ(c.add(batch, 4 * kMss, kMss, kAck, 501), 0);         // a gap in the sequence
  ASSERT_EQ(c.add(batch, 5 * kMss, kMss, kAck, 501, other), 0);  // another connection
  ASSERT_EQ(c.add(batch, 6 * kMss, 1000, kAck, 501, other), 0);  // shorter: joins, ends it
  ASSERT_EQ(c.add(batch, 6 * kMss + 1000, kMss, kAck, 501, other), 0);
  ASSERT_EQ(c.add(batch, 7 * kMss + 1000, kMss, kAck | kPsh, 501, other), 0);  // joins, ends it
  ASSERT_EQ(c.add(batch, 8 * kMss + 1000, 500, kAck, 501, other), 0);
  ASSERT_EQ(c.add(batch, 8 * kMss + 1500, kMss, kAck, 501, other), 0);  // longer than the first
  EXPECT_EQ(batch.packets().size(), 8u);
  EXPECT_EQ(batch.segments(), 10u);
  EXPECT_EQ(cut_all(batch), c.sent);
}

TEST(GsoBatch, AFullBatchSaysSoAndTakesMoreOnceCleared) {
  Segments c;
  GsoBatch batch(2);
  ASSERT_EQ(c.add(batch, 0, kMss), 0);
  ASSERT_EQ(c.add(batch, kMss, kMss), 0);                 // joins
  ASSERT_EQ(c.add(batch, 2 * kMss, kMss, kAck, 501), 0);  // another window: a packet of its own
  EXPECT_EQ(c.add(batch, 3 * kMss, kMss, kAck, 502), -ENOBUFS) << "the packet table is full";
  EXPECT_EQ(cut_all(batch), c.sent);
  batch.clear();
  c.sent.clear();
  ASSERT_EQ(c.add(batch, 2 * kMss, 0, kAck | kFin), 0);
  ASSERT_EQ(c.add(batch, 0, 0), 0);
  EXPECT_EQ(c.add(batch, 0, 0), -ENOBUFS) << "the packet table is full";
  EXPECT_EQ(cut_all(batch), c.sent);
}

// The data stays where the send queue holds it: a burst across the end of
// its ring is one packet gathering both pieces, in order.
TEST(GsoBatch, DataAcrossTheQueuesWrapIsGatheredInOrder) {
  Segments c(4, 10 * kMss);
  c.advance(7 * kMss + 100);  // the ring ends 4244 bytes into the burst
  GsoBatch batch;
  for (size_t i = 0; i < 6; i++) ASSERT_EQ(c.add(batch, i * kMss, kMss), 0);
  const auto pk = batch.packets();
  ASSERT_EQ(pk.size(), 1u);
  EXPECT_EQ(pk[0].msg_hdr.msg_iovlen, 3u) << "the headers, then the data in two pieces";
  EXPECT_EQ(cut_all(batch), c.sent);
}

TEST(GsoBatch, APacketStaysUnder64KiB) {
  Segments c;
  GsoBatch batch;
  for (size_t i = 0; i < 100; i++) ASSERT_EQ(c.add(batch, i * kMss, kMss), 0);
  const auto pk = batch.packets();
  ASSERT_EQ(pk.size(), 3u);
  for (const mmsghdr& p : pk)
    EXPECT_LE(gathered(p).size(), sizeof(Vnet) + 14 + 20 + 32 + GsoBatch::kMaxData);
  EXPECT_EQ(cut_all(batch), c.sent);
}

TEST(GsoBatch, RefusesWhatNoWireTakes) {
  Segments c;
  GsoBatch batch;
  const SegmentData d = c.next(0, 1500);  // over an MTU of 1500 with its headers
  EXPECT_EQ(batch.add(&c, c.f, 1500, c.header, d), -EMSGSIZE);
  Bytes odd(kHeaderLen + 2, 0);  // no TCP header is this long
  EXPECT_EQ(batch.add(&c, c.f, 1500, odd, {}), -EMSGSIZE);
  EXPECT_TRUE(batch.empty());
}

}  // namespace
}  // namespace ss::net::tcp
