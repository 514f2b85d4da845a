#include "core/net/frame_build.h"

#include <pthread.h>
#include <sys/random.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>

#include "core/net/checksum.h"
#include "core/net/ethernet.h"
#include "core/net/ipv4.h"
#include "core/net/ipv6.h"
#include "core/net/udp.h"

namespace ss::net {
namespace {

constexpr size_t kIpMaxLen = 0xffff;  // a 16-bit length field (no jumbograms)

void write_ipv4(uint8_t* p, const FrameFields& f, uint8_t proto, size_t total) {
  p[0] = 0x45;  // version 4, IHL 5
  p[kIpv4TosOffset] = f.tos;
  store_be16(p + kIpv4TotalLenOffset, static_cast<uint16_t>(total));
  store_be16(p + kIpv4IdOffset, f.ip_id);
  store_be16(p + kIpv4FragOffset, f.dont_fragment ? kIpv4FlagDf : 0);
  p[kIpv4TtlOffset] = f.ttl;
  p[kIpv4ProtoOffset] = proto;
  store_be16(p + kIpv4ChecksumOffset, 0);
  memcpy(p + kIpv4SrcOffset, f.src_ip, kIpv4AddrLen);
  memcpy(p + kIpv4DstOffset, f.dst_ip, kIpv4AddrLen);
  Checksum c;
  c.add(p, kIpv4MinHeaderLen);
  store_be16(p + kIpv4ChecksumOffset, c.result());
}

void write_ipv6(uint8_t* p, const FrameFields& f, uint8_t proto, size_t payload_len) {
  store_be32(p,
             6u << 28 | static_cast<uint32_t>(f.tos) << 20 | (f.flow_label & kIpv6FlowLabelMask));
  store_be16(p + kIpv6PayloadLenOffset, static_cast<uint16_t>(payload_len));
  p[kIpv6NextHeaderOffset] = proto;
  p[kIpv6HopLimitOffset] = f.ttl;
  memcpy(p + kIpv6SrcOffset, f.src_ip, kIpv6AddrLen);
  memcpy(p + kIpv6DstOffset, f.dst_ip, kIpv6AddrLen);
}

// u: the UDP header, the payload right after it.
void write_udp(uint8_t* u, const FrameFields& f, size_t udp_len) {
  store_be16(u, f.src_port);
  store_be16(u + 2, f.dst_port);
  store_be16(u + kUdpLenOffset, static_cast<uint16_t>(udp_len));
  store_be16(u + kUdpChecksumOffset, 0);
  Checksum c =
      udp_pseudo_header_sum(f.ip_version, f.src_ip, f.dst_ip, static_cast<uint32_t>(udp_len));
  c.add(u, kUdpHeaderLen);
  c.add(u + kUdpHeaderLen, udp_len - kUdpHeaderLen);
  const uint16_t sum = c.result();
  store_be16(u + kUdpChecksumOffset, sum ? sum : 0xffff);  // zero means "none"
}

}  // namespace

size_t ip_frame_header_len(uint8_t ip_version) {
  const size_t ip = ip_version == 4 ? kIpv4MinHeaderLen : ip_version == 6 ? kIpv6HeaderLen : 0;
  return ip ? kEthHeaderLen + ip : 0;
}

size_t frame_header_len(uint8_t ip_version) {
  const size_t ip = ip_frame_header_len(ip_version);
  return ip ? ip + kUdpHeaderLen : 0;
}

ssize_t build_ip_frame(std::span<uint8_t> buf, const FrameFields& f, uint8_t proto, size_t l4_len,
                       size_t mtu) {
  const size_t hlen = ip_frame_header_len(f.ip_version);
  if (!hlen) return -EINVAL;
  if (buf.size() < hlen || l4_len > buf.size() - hlen) return -ENOBUFS;
  const ssize_t n = build_ip_headers(buf.first(hlen), f, proto, l4_len, mtu);
  return n < 0 ? n : static_cast<ssize_t>(hlen + l4_len);
}

ssize_t build_ip_headers(std::span<uint8_t> head, const FrameFields& f, uint8_t proto,
                         size_t l4_len, size_t mtu) {
  const size_t hlen = ip_frame_header_len(f.ip_version);
  if (!hlen) return -EINVAL;
  if (head.size() < hlen) return -ENOBUFS;
  const size_t ip_len = hlen - kEthHeaderLen + l4_len;
  // IPv4's total length counts its header, IPv6's payload length does not.
  const size_t length_field = f.ip_version == 4 ? ip_len : l4_len;
  if (ip_len > mtu || length_field > kIpMaxLen) return -EMSGSIZE;
  uint8_t* p = head.data();
  memcpy(p, f.dst_mac, kMacLen);
  memcpy(p + kMacLen, f.src_mac, kMacLen);
  store_be16(p + kEthTypeOffset, f.ip_version == 4 ? kEtherTypeIpv4 : kEtherTypeIpv6);
  if (f.ip_version == 4)
    write_ipv4(p + kEthHeaderLen, f, proto, ip_len);
  else
    write_ipv6(p + kEthHeaderLen, f, proto, l4_len);
  return static_cast<ssize_t>(hlen);
}

ssize_t build_frame(std::span<uint8_t> buf, const FrameFields& f, size_t payload_len, size_t mtu) {
  const size_t ip_hlen = ip_frame_header_len(f.ip_version);
  if (ip_hlen && payload_len > SIZE_MAX - kUdpHeaderLen) return -ENOBUFS;
  const size_t udp_len = kUdpHeaderLen + payload_len;
  const ssize_t len = build_ip_frame(buf, f, kIpProtoUdp, udp_len, mtu);
  if (len < 0) return len;
  write_udp(buf.data() + ip_hlen, f, udp_len);
  return len;
}

namespace {

// Forks so far, as a fork child counts them: a generator seeded before
// the last fork seeds again, so parent and child draw different starts.
std::atomic<unsigned> g_forks{0};

uint32_t random_seed() {
  uint32_t seed = 1;
  if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof seed)) seed = 1;
  return seed ? seed : 1;
}

}  // namespace

Ipv4IdSequence::Ipv4IdSequence() {
  // A generator per thread, seeded once (and once after each fork): a
  // connection a second would otherwise cost a system call each. Best
  // effort: a fixed seed only makes IDs guessable, as they were before
  // Linux randomised them.
  static const bool counting = [] {
    pthread_atfork(nullptr, nullptr, [] { g_forks.fetch_add(1, std::memory_order_relaxed); });
    return true;
  }();
  (void)counting;
  thread_local std::minstd_rand gen(random_seed());
  thread_local unsigned seeded_at = g_forks.load(std::memory_order_relaxed);
  if (const unsigned forks = g_forks.load(std::memory_order_relaxed); forks != seeded_at) {
    gen.seed(random_seed());
    seeded_at = forks;
  }
  last_ = static_cast<uint16_t>(gen() >> 8);
}

}  // namespace ss::net
