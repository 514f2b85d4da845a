// Fuzz target: core/net's UdpStack as a hostile link feeds it: frames sent
// by the peer queue of the test loopback ring provider (tests/core/
// loopback_ring.h; copied into the stack's fill-ring frames, chained when
// longer than one) are parsed and demuxed into bound endpoints' queues.
// Each input builds a fresh stack, so every input starts alike.
//
// Input: u8 queue limit (1 + b % 8), u8 initial fill, then records, each an
// op byte (% 10) and its bytes (address index 3 is a group):
//   0  raw frame: u16 length (% 3500), that many bytes
//   1  built frame: u8 flags (bit 0 IPv6, bits 1-2 source, 3-4 dest,
//      5-6 source port), u8 dest port, u8 payload length (* 6), u8 n
//      mutations of (u16 offset, u8 value), u8 fix-ups (bit 0 IP length,
//      bit 1 UDP length, bit 2 checksums, the checksum helper's; bits 4-7
//      bytes of padding appended first); payload bytes follow the
//      pattern of its first input byte, so frames cost little input
//   2  copying receive: u8 slot, u8 buffer size (0, 1, 7, 64 or 2048)
//   3  zero-copy receive: u8 slot; the datagram is held
//   4  release a held datagram: u8 index
//   5  unbind: u8 slot
//   6  bind: u8 slot, u8 kind (bits 0-2 % 5: v4 exact, v4 any, v6 exact,
//      v6 any, dual; bits 3-4 the exact address; bit 5 shared), u8 port
//   7  connect: u8 slot, u8 peer (bit 7: disconnect)
//   8  poll_rx: u8 budget (% 70)
//   9  membership: u8 slot, u8 op (bit 7 leave, else join with a filter:
//      bit 4 one source (bits 0-1), bit 6 including it, else excluding;
//      bit 5 the IPv4 group on an IPv6 endpoint)
// Properties (abort on violation): a delivered payload lies inside its
// frame, one frame, at the offset and size of the UDP payload of a frame
// that was sent, from its source, to the endpoint's address and port; a
// connected endpoint gets only its peer's datagrams (those queued before
// connect excepted); a group's datagram only to a member whose filter
// admitted its source at some point since the bind; every frame sent is
// counted once: by the ring (no fill, rx full) or the stack (a parse
// reason or chained; an accepted one as delivered, no endpoint, not from
// peer, queue full or source filtered, a group's once per member it
// reached: delivered + ... = accepted + group copies), and every
// delivered one is received or dropped with its endpoint; at the end every
// frame of both pools is free again.
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "core/mem/buffer.h"
#include "core/mem/pool.h"
#include "core/net/byte_order.h"
#include "core/net/ethernet.h"
#include "core/net/frame_build.h"
#include "core/net/frame_parse.h"
#include "core/net/ipv4.h"
#include "core/net/ipv6.h"
#include "core/net/udp.h"
#include "core/net/udp_stack.h"
#include "tests/core/loopback_ring.h"

namespace {

using namespace ss::net;
using ss::mem::Buffer;
using ss::mem::Pool;
using Bytes = std::vector<uint8_t>;

void check(bool ok) {
  if (!ok) abort();
}

// Reads the input front to back; past its end every read is zero.
class Reader {
 public:
  Reader(const uint8_t* d, size_t n) : d_(d), n_(n) {}
  bool done() const { return at_ >= n_; }
  uint8_t u8() { return at_ < n_ ? d_[at_++] : 0; }
  uint16_t u16() {
    const uint8_t hi = u8();
    return static_cast<uint16_t>(hi << 8 | u8());
  }
  Bytes bytes(size_t n) {
    const size_t k = n < n_ - at_ ? n : n_ - at_;
    Bytes b(d_ + at_, d_ + at_ + k);
    at_ += k;
    return b;
  }

 private:
  const uint8_t* d_;
  size_t n_, at_ = 0;
};

IpAddr addr(int family, int i) {
  static const char* const v4[] = {"10.0.0.1", "10.0.0.2", "10.0.0.3", "239.0.0.1"};
  static const char* const v6[] = {"fd00::1", "fd00::2", "fd00::3", "ff0e::1"};
  return IpAddr::parse(family == AF_INET ? v4[i & 3] : v6[i & 3]);
}
const uint16_t kPorts[] = {9000, 9001, 5000, 53};

// The flow's address as the stack's IpAddr (UDP flows only).
IpAddr addr_of(const ss::prov::SteeredFlow& f) {
  if (f.proto != IPPROTO_UDP) abort();
  return IpAddr::raw(f.family, f.ip, f.family == AF_INET ? 4 : 16);
}

class AllSteering : public ss::prov::FlowSteering {
 public:
  int add(const ss::prov::SteeredFlow& f) override {
    const IpAddr a = addr_of(f);
    const uint16_t port = f.port;
    return flows.insert({a, port}).second ? 0 : -EEXIST;
  }
  int remove(const ss::prov::SteeredFlow& f) override {
    const IpAddr a = addr_of(f);
    const uint16_t port = f.port;
    return flows.erase({a, port}) ? 0 : -ENOENT;
  }
  std::set<std::pair<IpAddr, uint16_t>> flows;
};

// A frame that was sent and parses: what a datagram of it must be.
struct Sent {
  Bytes frame;
  size_t payload_at, payload_len;
  UdpAddr src, dst;
};

struct Slot {
  std::unique_ptr<UdpEndpoint> ep;
  std::vector<std::pair<IpAddr, McastFilter>> filters;  // every one joined with since bind
  std::set<IpAddr> joined;                              // groups it is a member of
  UdpAddr peer;                                         // as connected (family AF_UNSPEC: none)
  size_t exempt = 0;  // queued before the last connect: from anyone
};

// Makes a mutated frame's lengths and checksums right again, as far as its
// bytes say where they are.
void fix_up(Bytes& f, uint8_t how) {
  if (f.size() < kEthHeaderLen + kIpv4MinHeaderLen) return;
  uint8_t* ip = f.data() + kEthHeaderLen;
  const size_t ip_room = f.size() - kEthHeaderLen;
  const bool v4 = load_be16(f.data() + kEthTypeOffset) == kEtherTypeIpv4;
  const size_t ihl = v4 ? (ip[0] & 0xfu) * 4u : kIpv6HeaderLen;
  if (ihl < kIpv4MinHeaderLen || ihl > ip_room) return;
  if (how & 1) {
    if (v4)
      store_be16(ip + kIpv4TotalLenOffset, static_cast<uint16_t>(ip_room));
    else
      store_be16(ip + kIpv6PayloadLenOffset, static_cast<uint16_t>(ip_room - ihl));
  }
  const size_t ip_len =
      v4 ? load_be16(ip + kIpv4TotalLenOffset) : load_be16(ip + kIpv6PayloadLenOffset) + ihl;
  if ((how & 4) && v4) {
    store_be16(ip + kIpv4ChecksumOffset, 0);
    Checksum c;
    c.add(ip, ihl);
    store_be16(ip + kIpv4ChecksumOffset, c.result());
  }
  if (ihl + kUdpHeaderLen > ip_room) return;
  uint8_t* u = ip + ihl;
  if ((how & 2) && ip_len >= ihl)
    store_be16(u + kUdpLenOffset, static_cast<uint16_t>(ip_len - ihl));
  if (how & 4) {
    const uint16_t ulen = load_be16(u + kUdpLenOffset);
    const size_t covered = ulen < ip_room - ihl ? ulen : ip_room - ihl;
    store_be16(u + kUdpChecksumOffset, 0);
    Checksum c = v4 ? udp_pseudo_header_sum(4, ip + kIpv4SrcOffset, ip + kIpv4DstOffset, ulen)
                    : udp_pseudo_header_sum(6, ip + 8, ip + 24, ulen);
    c.add(u, covered);
    const uint16_t r = c.result();
    store_be16(u + kUdpChecksumOffset, r ? r : 0xffff);
  }
}

Bytes built_frame(Reader& in) {
  const uint8_t fl = in.u8(), dport = in.u8(), plen = in.u8(), nmut = in.u8() % 4;
  FrameFields f;
  f.ip_version = fl & 1 ? 6 : 4;
  const int fam = f.ip_version == 4 ? AF_INET : AF_INET6;
  const IpAddr s = addr(fam, fl >> 1), d = addr(fam, fl >> 3);
  memcpy(f.src_ip, s.bytes, s.size());
  memcpy(f.dst_ip, d.bytes, d.size());
  f.src_port = kPorts[(fl >> 5) & 3];
  f.dst_port = kPorts[dport & 3];
  const size_t n = plen * 6u, h = frame_header_len(f.ip_version);
  Bytes b(h + n);
  for (size_t i = 0; i < n; i++) b[h + i] = static_cast<uint8_t>(plen + i);
  if (build_frame(b, f, n, 4096) != static_cast<ssize_t>(b.size())) abort();
  std::vector<std::pair<uint16_t, uint8_t>> muts;
  for (int i = 0; i < nmut; i++) {
    const uint16_t at = in.u16();
    muts.push_back({at, in.u8()});
  }
  const uint8_t fix = in.u8();
  b.resize(b.size() + (fix >> 4));
  for (auto [at, v] : muts) b[at % b.size()] = v;
  fix_up(b, fix);
  return b;
}

class Harness {
 public:
  bool setup(size_t queue_limit, uint32_t initial_fill) {
    if (!make_pool(4096, 0, &pp_) || !make_pool(2048, 256, &ps_)) return false;
    ss::prov::RingQueueConfig cp, cs;
    cp.pool = pp_.get();
    cs.pool = ps_.get();
    cp.fill_size = cs.fill_size = 128;
    cs.rx_size = 64;
    if (sstest::LoopbackQueue::create_pair(cp, cs, false, &peer_, &ring_)) return false;
    UdpStack::Config cfg;
    cfg.rings = {UdpRing{ring_.get(), ps_.get()}};
    cfg.steering = &steer_;
    cfg.initial_fill = initial_fill;
    cfg.queue_limit = queue_limit;
    return UdpStack::create(cfg, &stack_) == 0;
  }

  void send(const Bytes& frame) {
    Buffer b = pp_->get();
    if (!b || frame.size() > b.capacity()) return;
    if (!frame.empty()) memcpy(b.data(), frame.data(), frame.size());
    b.set_size(frame.size());
    check(peer_->tx(&b, 1) == 1);
    sent_++;
    Buffer done[4];
    while (peer_->complete(done, 4) > 0) {
    }
    ParsedFrame p;
    if (parse_frame(frame, &p) != FrameReason::kAccepted) return;
    const int fam = p.fields.ip_version == 4 ? AF_INET : AF_INET6;
    const size_t alen = fam == AF_INET ? 4 : 16;
    frames_.push_back(Sent{frame, static_cast<size_t>(p.payload.data() - frame.data()),
                           p.payload.size(),
                           UdpAddr{IpAddr::raw(fam, p.fields.src_ip, alen), p.fields.src_port},
                           UdpAddr{IpAddr::raw(fam, p.fields.dst_ip, alen), p.fields.dst_port}});
  }

  void bind(Slot& s, uint8_t kind, uint8_t port) {
    unbind(s);
    const int type = (kind & 7) % 5;  // v4 exact, v4 any, v6 exact, v6 any, dual
    const int fam = type < 2 ? AF_INET : AF_INET6;
    const bool wild = type == 1 || type >= 3, dual = type == 4;
    UdpAddr a{wild ? IpAddr{} : addr(fam, kind >> 3), kPorts[port & 3]};
    a.ip.family = static_cast<sa_family_t>(fam);
    const int r = stack_->bind(a, dual, &s.ep, kind & 0x20);
    check(r == 0 || r == -EADDRINUSE);
    check((r == 0) == static_cast<bool>(s.ep));
  }

  void unbind(Slot& s) {
    if (s.ep) dropped_ += s.ep->queued();
    s = Slot{};
  }

  void connect(Slot& s, uint8_t b) {
    if (!s.ep) return;
    UdpAddr peer;
    if (!(b & 0x80)) {
      const bool v4 = s.ep->local().ip.family == AF_INET || (b & 0x40);
      peer = UdpAddr{addr(v4 ? AF_INET : AF_INET6, b), kPorts[(b >> 2) & 3]};
    }
    s.ep->connect(peer);
    s.peer = peer;
    s.exempt = s.ep->queued();
  }

  void membership(Slot& s, uint8_t b) {
    if (!s.ep) return;
    const IpAddr& l = s.ep->local().ip;
    const IpAddr group = addr((b & 0x20) ? AF_INET : l.family, 3);
    if (b & 0x80) {
      // A left group's earlier filters still explain what was queued.
      check(s.ep->leave(group) == (s.joined.erase(group) ? 0 : -ENOENT));
      return;
    }
    McastFilter f;
    if (b & 0x10) {
      f.include = b & 0x40;
      f.sources.push_back(addr(group.family, b));
    }
    const int r = s.ep->join(group, f);
    check(r == 0 || r == -EINVAL);
    if (r == 0) {
      s.filters.push_back({group, f});
      s.joined.insert(group);
    }
  }

  // The datagram's source against the endpoint's peer.
  void check_peer(Slot& s, const UdpAddr& src) {
    if (s.exempt) {
      s.exempt--;
      return;
    }
    check(s.peer.ip.empty() || s.peer == src);
  }

  // Whether the endpoint takes the frame's destination: its own address,
  // or it is its family's wildcard (a dual one's is steered for IPv4 too);
  // a group's only as a member that admitted the source.
  static bool to_endpoint(const Slot& s, const Sent& f) {
    const UdpEndpoint& ep = *s.ep;
    const UdpAddr& l = ep.local();
    if (f.dst.port != l.port) return false;
    if (is_multicast(f.dst.ip)) {
      for (const auto& [g, filter] : s.filters)
        if (g == f.dst.ip && filter.admits(f.src.ip)) return true;
      return false;
    }
    if (f.dst.ip == l.ip) return true;
    IpAddr any;
    any.family = l.ip.family;
    return l.ip == any && (l.ip.family == f.dst.ip.family || ep.steered(f.dst.ip.family));
  }

  void recv_copy(Slot& s, uint8_t size) {
    if (!s.ep) return;
    static const size_t kSizes[] = {0, 1, 7, 64, 2048};
    const size_t len = kSizes[size % 5];
    uint8_t buf[2048 + 16];
    memset(buf, 0xa5, sizeof buf);
    UdpAddr src;
    size_t full = 0;
    const ssize_t n = s.ep->recv(buf, len, &src, &full);
    if (n == -EAGAIN) return;
    check(n >= 0 && static_cast<size_t>(n) == (full < len ? full : len));
    for (size_t i = static_cast<size_t>(n); i < sizeof buf; i++) check(buf[i] == 0xa5);
    received_++;
    bool found = false;
    for (const Sent& f : frames_)
      if (f.payload_len == full && f.src == src && to_endpoint(s, f) &&
          !memcmp(buf, f.frame.data() + f.payload_at, static_cast<size_t>(n)))
        found = true;
    check(found);
    check_peer(s, src);
  }

  void recv_zcopy(Slot& s) {
    if (!s.ep) return;
    Datagram d;
    const int r = s.ep->recv_zcopy(&d);
    check(r == 0 || r == 1);
    if (!r) return;
    received_++;
    check(d.buf && !d.buf.next());
    // The frame as it arrived: from the pool's headroom on.
    const size_t head = ps_->headroom();
    const auto* base = static_cast<const uint8_t*>(d.buf.frame()) + head;
    const size_t room = d.buf.frame_size() - head;
    check(d.buf.offset() >= head && d.buf.offset() + d.buf.size() <= d.buf.frame_size());
    const size_t at = d.buf.offset() - head;
    bool found = false;
    for (const Sent& f : frames_)
      if (f.frame.size() <= room && !memcmp(base, f.frame.data(), f.frame.size()) &&
          f.payload_at == at && f.payload_len == d.buf.size() && f.src == d.src &&
          to_endpoint(s, f))
        found = true;
    check(found);
    check_peer(s, d.src);
    held_.push_back(std::move(d));
  }

  void release(uint8_t i) {
    if (held_.empty()) return;
    held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(i % held_.size()));
  }

  void poll(uint8_t budget) { check(stack_->poll_rx(budget % 70) >= 0); }

  // Drains the ring, unbinds everything and checks the counts and pools.
  void finish(Slot* slots, size_t n) {
    while (stack_->poll_rx(64) > 0) {
    }
    held_.clear();
    for (size_t i = 0; i < n; i++) unbind(slots[i]);
    const UdpRxCounters c = stack_->rx_counters();
    const ss::prov::RingStats st = ring_->stats();
    check(sent_ == st.rx_packets + st.rx_dropped_no_fill + st.rx_dropped_rx_full);
    uint64_t parsed = 0, to_kernel = 0;
    for (size_t r = 0; r < kFrameReasonCount; r++) {
      parsed += c.frames.by_reason[r];
      if (frame_verdict(static_cast<FrameReason>(r)) == FrameVerdict::kToKernel)
        to_kernel += c.frames.by_reason[r];
    }
    check(st.rx_packets == parsed + c.chained);
    check(c.frames[FrameReason::kAccepted] + c.group_copies ==
          c.delivered + c.no_endpoint + c.not_from_peer + c.queue_full + c.source_filtered);
    check(c.to_kernel_lost == to_kernel);
    check(c.delivered == received_ + dropped_);
    check(steer_.flows.empty());
    stack_.reset();
    peer_.reset();
    ring_.reset();
    for (Pool* p : {pp_.get(), ps_.get()}) check(p->free_count() == p->frame_count());
  }

 private:
  static bool make_pool(size_t frame, size_t headroom, std::unique_ptr<Pool>* out) {
    ss::mem::PoolOptions o;
    o.frame_size = frame;
    o.headroom = headroom;
    o.frames_per_chunk = 256;
    o.backing = ss::mem::Backing::kPrivate;
    return Pool::create(o, out) == 0;
  }

  // Declared so that they go in this order: held frames, stack, queues, pools.
  std::unique_ptr<Pool> pp_, ps_;
  std::unique_ptr<sstest::LoopbackQueue> peer_, ring_;
  AllSteering steer_;
  std::unique_ptr<UdpStack> stack_;
  std::vector<Datagram> held_;
  std::vector<Sent> frames_;
  uint64_t sent_ = 0, received_ = 0, dropped_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in(data, size);
  const size_t queue_limit = 1 + in.u8() % 8;
  const uint8_t fill = in.u8();
  Harness h;
  if (!h.setup(queue_limit, fill % 4 ? 64 : fill % 16)) abort();
  constexpr size_t kSlots = 4;
  Slot slots[kSlots];
  while (!in.done()) {
    switch (in.u8() % 10) {
      case 0: {
        const size_t n = in.u16() % 3500;
        h.send(in.bytes(n));
        break;
      }
      case 1:
        h.send(built_frame(in));
        break;
      case 2: {
        Slot& s = slots[in.u8() % kSlots];
        h.recv_copy(s, in.u8());
        break;
      }
      case 3:
        h.recv_zcopy(slots[in.u8() % kSlots]);
        break;
      case 4:
        h.release(in.u8());
        break;
      case 5:
        h.unbind(slots[in.u8() % kSlots]);
        break;
      case 6: {
        Slot& s = slots[in.u8() % kSlots];
        const uint8_t kind = in.u8();
        h.bind(s, kind, in.u8());
        break;
      }
      case 7: {
        Slot& s = slots[in.u8() % kSlots];
        h.connect(s, in.u8());
        break;
      }
      case 8:
        h.poll(in.u8());
        break;
      case 9: {
        Slot& s = slots[in.u8() % kSlots];
        h.membership(s, in.u8());
        break;
      }
    }
  }
  h.finish(slots, kSlots);
  return 0;
}
