// The UDP endpoint layer (core/net/udp_stack.h, udp_tx.h) on the xdp
// provider's rings over a veth pair between two namespaces: the offloaded
// endpoint in a, kernel sockets in b, IPv4 and IPv6. Datagrams from b arrive through the
// rings (the program's redirect counter moves, a's kernel socket on the
// same port gets none); the endpoint's sends reach b's kernel socket (whose
// kernel verified the checksums), the next hop resolved through NetlinkView;
// a local destination is "use the kernel"; malformed frames injected from b
// are dropped by reason; zero-copy frames stay held until released. Needs
// root: without it the binary exits 77 (skipped) and says why.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/mem/pool.h"
#include "core/net/frame_build.h"
#include "core/net/netlink_view.h"
#include "core/net/udp_route.h"
#include "core/net/udp_stack.h"
#include "core/net/udp_tx.h"
#include "core/prov/xdp/xdp_device.h"
#include "tests/common/netns_pair.h"
#include "tests/xdp/ring_rig.h"

namespace {

using ss::mem::Buffer;
using ss::mem::Pool;
using ss::net::Datagram;
using ss::net::FrameReason;
using ss::net::IpAddr;
using ss::net::SendStatus;
using ss::net::ToKernel;
using ss::net::UdpAddr;
using ss::net::UdpEndpoint;
using sstest::NetnsPair;
namespace xdp = ss::prov::xdp;

constexpr uint16_t kPort = 9000, kPeerPort = 9100;

std::span<const uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// A payload of n bytes that tells datagram i apart.
std::string payload(int i, size_t n) {
  std::string s(n, '\0');
  for (size_t k = 0; k < n; k++) s[k] = static_cast<char>('a' + (i * 7 + k) % 26);
  return s;
}

class UdpRing : public sstest::RingRig {
 protected:
  void SetUp() override { start("ssudp", 1024); }
  void TearDown() override {
    ep_.reset();
    RingRig::TearDown();
  }

  void bind_ep(const char* ip, uint16_t port) {
    ASSERT_EQ(stack_->bind(UdpAddr{IpAddr::parse(ip), port}, false, &ep_), 0);
  }
  // The next datagram for ep_ (false if none came in time).
  bool next(Datagram* d) {
    const auto end = std::chrono::steady_clock::now() + kWait;
    while (std::chrono::steady_clock::now() < end) {
      if (ep_->recv_zcopy(d) == 1) return true;
      wait_rings();
    }
    return false;
  }

  std::unique_ptr<UdpEndpoint> ep_;
};

int bound_socket(int fd, const char* ip, uint16_t port) {
  const sockaddr_in sa = sstest::inet(ip, port);
  return bind(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa);
}

TEST_F(UdpRing, DatagramsFromAKernelPeerArriveThroughTheRings) {
  bind_ep("0.0.0.0", kPort);
  EXPECT_TRUE(ep_->steered(AF_INET));
  // The face's kernel socket on the same port: it must get none.
  const int shadow = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(bound_socket(shadow, "0.0.0.0", kPort), 0);
  const int tx = ns_->socket_in_b(SOCK_DGRAM);
  ASSERT_EQ(bound_socket(tx, NetnsPair::kIpB, kPeerPort), 0);
  const uint64_t before = redirected();
  constexpr int kCount = 40;
  const sockaddr_in to = sstest::inet(NetnsPair::kIpA, kPort);
  for (int i = 0; i < kCount; i++) {
    const std::string p = payload(i, static_cast<size_t>(i * 37 % 1473));  // 0 to 1472 bytes
    ASSERT_EQ(sendto(tx, p.data(), p.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to),
              static_cast<ssize_t>(p.size()));
  }
  // One flow: one rx queue, in order.
  for (int i = 0; i < kCount; i++) {
    char buf[2048];
    UdpAddr src;
    size_t full = 0;
    ssize_t n = -EAGAIN;
    const auto end = std::chrono::steady_clock::now() + kWait;
    while ((n = ep_->recv(buf, sizeof buf, &src, &full)) == -EAGAIN &&
           std::chrono::steady_clock::now() < end)
      wait_rings();
    ASSERT_GE(n, 0) << "datagram " << i;
    EXPECT_EQ(std::string(buf, static_cast<size_t>(n)),
              payload(i, static_cast<size_t>(i * 37 % 1473)));
    EXPECT_EQ(src, (UdpAddr{IpAddr::parse(NetnsPair::kIpB), kPeerPort}));
  }
  EXPECT_EQ(redirected() - before, static_cast<uint64_t>(kCount));
  EXPECT_EQ(stack_->rx_counters().delivered, static_cast<uint64_t>(kCount));
  char c;
  EXPECT_EQ(recv(shadow, &c, 1, MSG_DONTWAIT), -1) << "the kernel socket got a datagram";
  close(tx);
  close(shadow);
}

// A wildcard IPv6 endpoint without IPV6_V6ONLY takes both families
// through the rings; a kernel socket on the port gets neither.
TEST_F(UdpRing, DualEndpointReceivesIpv4AndIpv6) {
  ASSERT_EQ(stack_->bind(UdpAddr{IpAddr::parse("::"), kPort}, true, &ep_), 0);
  EXPECT_TRUE(ep_->steered(AF_INET));
  EXPECT_TRUE(ep_->steered(AF_INET6));
  const int shadow = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);  // takes v4 too
  sockaddr_storage ss;
  socklen_t len = IpAddr::parse("::").to_sockaddr(kPort, 0, &ss);
  ASSERT_EQ(::bind(shadow, reinterpret_cast<const sockaddr*>(&ss), len), 0);
  const uint64_t before = redirected();
  for (const char* peer : {NetnsPair::kIpB, NetnsPair::kIp6B}) {
    const IpAddr from = IpAddr::parse(peer);
    const int tx = ns_->socket_in_b(SOCK_DGRAM, from.family);
    ASSERT_GE(tx, 0);
    len = from.to_sockaddr(kPeerPort, 0, &ss);
    ASSERT_EQ(::bind(tx, reinterpret_cast<const sockaddr*>(&ss), len), 0);
    len = IpAddr::parse(from.family == AF_INET ? NetnsPair::kIpA : NetnsPair::kIp6A)
              .to_sockaddr(kPort, 0, &ss);
    const std::string msg = std::string("from ") + peer;
    ASSERT_EQ(sendto(tx, msg.data(), msg.size(), 0, reinterpret_cast<const sockaddr*>(&ss), len),
              static_cast<ssize_t>(msg.size()));
    Datagram d;
    ASSERT_TRUE(next(&d)) << peer;
    EXPECT_EQ(std::string(static_cast<const char*>(d.buf.data()), d.buf.size()), msg);
    EXPECT_EQ(d.src, (UdpAddr{from, kPeerPort}));
    close(tx);
  }
  EXPECT_EQ(redirected() - before, 2u);
  char c;
  EXPECT_EQ(recv(shadow, &c, 1, MSG_DONTWAIT), -1) << "the kernel socket got a datagram";
  close(shadow);
}

// The endpoint sends to a kernel socket in b, IPv4 and IPv6: the
// first datagram waits for the next hop (sent through a kernel socket, as
// the face does), the rest go over the ring; b's kernel delivers them all
// (it verified their checksums).
class UdpRingSend : public UdpRing, public ::testing::WithParamInterface<const char*> {};

TEST_P(UdpRingSend, SendsReachAKernelPeerOverTheRing) {
  const bool v4 = std::string(GetParam()) == "v4";
  bind_ep(v4 ? NetnsPair::kIpA : NetnsPair::kIp6A, kPort);
  const IpAddr peer = IpAddr::parse(v4 ? NetnsPair::kIpB : NetnsPair::kIp6B);
  const IpAddr local = ep_->local().ip;
  sockaddr_storage ss;
  socklen_t len = peer.to_sockaddr(kPeerPort, 0, &ss);
  const int rx = ns_->socket_in_b(SOCK_DGRAM, peer.family);
  ASSERT_EQ(::bind(rx, reinterpret_cast<const sockaddr*>(&ss), len), 0);
  // What the face sends a "use the kernel" datagram through.
  const int shadow = socket(local.family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_storage ls;
  const socklen_t llen = local.to_sockaddr(kPort, 0, &ls);
  ASSERT_EQ(::bind(shadow, reinterpret_cast<const sockaddr*>(&ls), llen), 0);
  const UdpAddr dst{peer, kPeerPort};
  constexpr int kCount = 30;
  const size_t max = v4 ? 1472 : 1452;  // the MTU's worth
  int via_kernel = 0;
  for (int i = 0; i < kCount; i++) {
    const std::string p = payload(i, 1 + static_cast<size_t>(i * 53) % max);
    const ss::net::SendResult r = tx_->send(*ep_, dst, bytes_of(p));
    ASSERT_NE(r.status, SendStatus::kError) << strerror(r.err);
    if (r.status == SendStatus::kUseKernel) {
      ASSERT_EQ(r.why, ToKernel::kNeighbourPending);
      ASSERT_EQ(sendto(shadow, p.data(), p.size(), 0, reinterpret_cast<const sockaddr*>(&ss), len),
                static_cast<ssize_t>(p.size()));
      via_kernel++;
      // The kernel resolves b while sending; its event makes the view ready.
      follow_kernel([&] {
        ss::net::Neighbour n;
        return view_->neighbour(stack_->ifindex(), dst.ip, &n) == 0 &&
               n.state == ss::net::NeighState::kReady;
      });
    }
  }
  // A fresh namespace knows no neighbour: the first waits for b's MAC,
  // the rest go over the ring.
  EXPECT_EQ(via_kernel, 1);
  EXPECT_EQ(view_->counters().resolve_netlink, 1u);
  EXPECT_EQ(tx_->counters().sent, static_cast<uint64_t>(kCount - via_kernel));
  std::vector<std::string> got, want;
  for (int i = 0; i < kCount; i++) {
    want.push_back(payload(i, 1 + static_cast<size_t>(i * 53) % max));
    pollfd p{rx, POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, static_cast<int>(std::chrono::milliseconds(kWait).count())), 1)
        << "datagram " << i << " never arrived";
    char buf[2048];
    sockaddr_storage from{};
    socklen_t flen = sizeof from;
    const ssize_t n = recvfrom(rx, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &flen);
    ASSERT_GT(n, 0);
    got.emplace_back(buf, static_cast<size_t>(n));
    EXPECT_EQ(flen, llen);
    EXPECT_EQ(memcmp(&from, &ls, llen), 0) << "the source is the endpoint's";
  }
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
  tx_->reap();  // every frame arrived, so every completion is posted
  EXPECT_EQ(queues_[0].queue->stats().tx_packets, static_cast<uint64_t>(kCount - via_kernel));
  close(rx);
  close(shadow);
}

INSTANTIATE_TEST_SUITE_P(Families, UdpRingSend, ::testing::Values("v4", "v6"),
                         [](const auto& info) { return std::string(info.param); });

TEST_F(UdpRing, LocalDestinationsUseTheKernel) {
  ASSERT_EQ(stack_->bind(UdpAddr{IpAddr::parse("::"), kPort}, true, &ep_), 0);
  const std::string p = "same host";
  for (const char* local : {NetnsPair::kIpA, "127.0.0.1", NetnsPair::kIp6A, "::1"}) {
    const ss::net::SendResult r =
        tx_->send(*ep_, UdpAddr{IpAddr::parse(local), kPeerPort}, bytes_of(p));
    EXPECT_EQ(r.status, SendStatus::kUseKernel) << local;
    EXPECT_EQ(r.why, ToKernel::kLocal) << local;
  }
  EXPECT_EQ(tx_->counters().to_kernel[static_cast<size_t>(ToKernel::kLocal)], 4u);
  EXPECT_EQ(tx_->counters().sent, 0u);
}

// Frames written by hand in b's packet socket, towards the steered port:
// the program redirects them (it checks no checksums), the stack drops
// each by its reason; a good one after them shows the path works.
TEST_F(UdpRing, MalformedFramesAreDroppedByReason) {
  ASSERT_EQ(stack_->bind(UdpAddr{IpAddr::parse("::"), kPort}, true, &ep_), 0);
  const int pkt = ns_->socket_in_b(SOCK_RAW, AF_PACKET, htons(ETH_P_ALL));
  ASSERT_GE(pkt, 0);
  ifreq ifr{};
  strncpy(ifr.ifr_name, NetnsPair::kIfB, IFNAMSIZ - 1);
  ASSERT_EQ(ioctl(pkt, SIOCGIFINDEX, &ifr), 0);  // in b, where the socket is
  sockaddr_ll ll{};
  ll.sll_family = AF_PACKET;
  ll.sll_ifindex = ifr.ifr_ifindex;
  ll.sll_halen = 6;
  ss::net::FrameFields f4;
  ASSERT_TRUE(ns_->mac_a(f4.dst_mac));
  ASSERT_TRUE(ns_->mac_b(f4.src_mac));
  memcpy(ll.sll_addr, f4.dst_mac, 6);
  f4.src_port = kPeerPort;
  f4.dst_port = kPort;
  ss::net::FrameFields f6 = f4;
  inet_pton(AF_INET, NetnsPair::kIpB, f4.src_ip);
  inet_pton(AF_INET, NetnsPair::kIpA, f4.dst_ip);
  f6.ip_version = 6;
  inet_pton(AF_INET6, NetnsPair::kIp6B, f6.src_ip);
  inet_pton(AF_INET6, NetnsPair::kIp6A, f6.dst_ip);
  auto send = [&](const ss::net::FrameFields& f, const std::string& body, auto mangle) {
    uint8_t frame[1600] = {};
    memcpy(frame + ss::net::frame_header_len(f.ip_version), body.data(), body.size());
    ssize_t len = ss::net::build_frame(frame, f, body.size(), 1500);
    ASSERT_GT(len, 0);
    size_t n = static_cast<size_t>(len);
    mangle(frame, &n);
    ASSERT_EQ(sendto(pkt, frame, n, 0, reinterpret_cast<sockaddr*>(&ll), sizeof ll),
              static_cast<ssize_t>(n));
  };
  constexpr size_t kUdp4 = 14 + 20, kUdp6 = 14 + 40;  // where UDP starts
  const uint64_t before = redirected();
  send(f4, "bad udp checksum", [](uint8_t* p, size_t* n) { p[*n - 1] ^= 0x20; });
  send(f4, "truncated frame", [](uint8_t*, size_t* n) { *n -= 5; });
  send(f4, "bad ip checksum", [](uint8_t* p, size_t*) { p[14 + 8] ^= 1; });  // TTL
  send(f4, "udp length", [](uint8_t* p, size_t*) { p[kUdp4 + 5] += 1; });
  send(f6, "v6 bad udp checksum", [](uint8_t* p, size_t* n) { p[*n - 1] ^= 0x20; });
  send(f6, "v6 no checksum", [](uint8_t* p, size_t*) { p[kUdp6 + 6] = p[kUdp6 + 7] = 0; });
  // A fragment never reaches the ring: the program passes it to the kernel.
  send(f4, "fragment", [](uint8_t* p, size_t*) { p[14 + 6] |= 0x20; });  // MF
  send(f4, "good", [](uint8_t*, size_t*) {});
  Datagram d;
  ASSERT_TRUE(next(&d));
  EXPECT_EQ(std::string(static_cast<const char*>(d.buf.data()), d.buf.size()), "good");
  // The frames may have come on either queue: all seven parsed, at most.
  auto parsed = [&] {
    uint64_t n = 0;
    for (uint64_t k : stack_->rx_counters().frames.by_reason) n += k;
    return n;
  };
  const auto end = std::chrono::steady_clock::now() + kWait;
  while (parsed() < 7 && std::chrono::steady_clock::now() < end) {
    ASSERT_GE(stack_->poll_rx(), 0);
    wait_rings();
  }
  const ss::net::UdpRxCounters c = stack_->rx_counters();
  EXPECT_EQ(parsed(), 7u);
  EXPECT_EQ(redirected() - before, 7u) << "the program steered all but the fragment";
  EXPECT_EQ(c.frames[FrameReason::kBadUdpChecksum], 2u);
  EXPECT_EQ(c.frames[FrameReason::kIpLengthPastFrame], 1u);
  EXPECT_EQ(c.frames[FrameReason::kBadIpChecksum], 1u);
  EXPECT_EQ(c.frames[FrameReason::kBadUdpLength], 1u);
  EXPECT_EQ(c.frames[FrameReason::kZeroUdpChecksumV6], 1u);
  EXPECT_EQ(c.frames[FrameReason::kIpv4Fragment], 0u);
  EXPECT_EQ(c.delivered, 1u);
  EXPECT_EQ(ep_->queued(), 0u);
  close(pkt);
}

// Four frames per fill ring: held datagrams are never written over; past
// the fill ring's four the pool's spare frames stand in (none dropped for
// want of a fill frame), and released frames carry later datagrams.
class UdpRingFewFrames : public UdpRing {
 protected:
  void SetUp() override { start("ssudp", 4); }
};

TEST_F(UdpRingFewFrames, HeldFramesAreNotReusedUntilReleased) {
  bind_ep(NetnsPair::kIpA, kPort);
  const int tx = ns_->socket_in_b(SOCK_DGRAM);
  ASSERT_GE(tx, 0);
  const sockaddr_in to = sstest::inet(NetnsPair::kIpA, kPort);
  auto send = [&](const std::string& s) {
    ASSERT_EQ(sendto(tx, s.data(), s.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to),
              static_cast<ssize_t>(s.size()));
  };
  const uint64_t drops = no_fill_drops();
  std::vector<Datagram> held(12);
  std::set<void*> frames;
  for (size_t i = 0; i < held.size(); i++) {
    send("held " + std::to_string(i));
    ASSERT_TRUE(next(&held[i])) << i << ": a spare frame should have stood in";
    frames.insert(held[i].buf.frame());
  }
  EXPECT_EQ(frames.size(), held.size()) << "a frame lent twice";
  EXPECT_EQ(no_fill_drops(), drops);
  EXPECT_GE(stack_->rx_counters().fill_topped_up, held.size() - 4);
  for (size_t i = 0; i < held.size(); i++)
    EXPECT_EQ(std::string(static_cast<const char*>(held[i].buf.data()), held[i].buf.size()),
              "held " + std::to_string(i))
        << "a held frame was written over";
  held.clear();  // back into the fill ring, or the pool once it is full
  for (int i = 0; i < 64; i++) {
    send("after the release " + std::to_string(i));
    Datagram d;
    ASSERT_TRUE(next(&d)) << i;
    EXPECT_EQ(std::string(static_cast<const char*>(d.buf.data()), d.buf.size()),
              "after the release " + std::to_string(i));
  }
  close(tx);
}

}  // namespace

int main(int argc, char** argv) {
  return sstest::netns_test_main(argc, argv, "udp_ring_tests", "ssudp");
}
