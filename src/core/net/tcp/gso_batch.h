// Consecutive segments of a connection merged into packets for GSO
// (net/packet_tx.h): a packet is its first segment's headers with the data
// of all, behind a virtio-net header asking for segments of the first
// one's data length (gso_size), so the netdev's TSO or the kernel's GSO
// sends exactly the segments the connection made. A segment joins the
// packet before it where GSO gives it back unchanged: the same owner,
// addresses and TCP header but for sequence number and flags, the next
// sequence number, data no longer than the first's (a shorter one ends
// the packet), the packet so far ACK-only (a PSH or FIN ends it: GSO puts
// them on the last segment). Anything else starts a packet of its own.
// The TCP checksum is left partial (the pseudo-header's sum), for the
// netdev or the kernel to finish per segment. The IPv4 ID of a segment
// that joins is the first's plus its place (GSO's numbering).
//
// The batch holds the headers; the data stays in the send queues, and the
// packet socket's send gathers it from there (the copy into the packet is
// the kernel's): the batch is sent before a queue moves or frees what it
// refers to (SegmentSink::release_data).
//
// Not thread-safe: the TCP stack's lock guards it.
#pragma once
#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/net/frame_fields.h"
#include "core/net/tcp/connection.h"

namespace ss::net::tcp {

class GsoBatch {
 public:
  // A packet's TCP data at most: its IP length stays within 64 KiB.
  static constexpr size_t kMaxData = 63 * 1024;
  explicit GsoBatch(size_t max_packets = 256);

  // Adds a segment (header: the TCP header and options, checksum zero)
  // behind f's Ethernet and IP headers: 0; -ENOBUFS when the batch is full
  // (send it, clear, add again); -EMSGSIZE for a segment beyond mtu or a
  // header that is no TCP header's length (dropped).
  int add(const void* owner, const FrameFields& f, size_t mtu, std::span<const uint8_t> header,
          const SegmentData& data);
  // The packets, finished: each a message whose iovecs gather its
  // virtio_net_hdr and headers, then its data where the queues hold it.
  std::span<mmsghdr> packets();
  bool empty() const { return packets_.empty(); }
  // Segments in the packets, each merged one counted.
  size_t segments() const { return segments_; }
  void clear();

 private:
  // A packet's parts: its headers, then its data in one piece, or two
  // where the send queue's ring wraps (once at most: a packet's data is
  // no more than the queue holds).
  static constexpr size_t kParts = 3;
  struct Packet {
    const void* owner = nullptr;
    FrameFields f;
    size_t off = 0;   // in area_: the virtio-net header, then the headers
    size_t part = 0;  // in parts_: the first of its parts (its headers)
    size_t parts = 0;
    size_t tcp_hlen = 0, data = 0, seg_size = 0, segs = 0;
    uint32_t next_seq = 0;
    bool open = false;  // a next segment may join
  };
  bool joins(const Packet& p, const void* owner, const FrameFields& f,
             std::span<const uint8_t> header, size_t len) const;
  // Appends data's pieces to p, the last packet: false (nothing changed)
  // when they would be more than kParts.
  bool gather(Packet& p, const SegmentData& data);
  void finish(size_t i);

  std::vector<uint8_t> area_;  // each packet's headers, at a fixed stride
  const size_t max_packets_;
  std::vector<Packet> packets_;
  std::vector<iovec> parts_;
  std::vector<mmsghdr> msgs_;
  size_t finished_ = 0;  // packets_[0, finished_) are in msgs_
  size_t segments_ = 0;
};

}  // namespace ss::net::tcp
