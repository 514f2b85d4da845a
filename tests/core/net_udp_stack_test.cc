// The UDP endpoint layer (core/net/udp_stack.h, udp_tx.h) over the test
// loopback ring provider: the peer queue's tx lands on the stack's rx ring
// and the stack's tx on the peer's rx. Bind and steering, demux (exact,
// wildcard, dual, IPv6), malformed and unwanted frames counted by reason,
// connected filtering, zero-copy hold and release, sleepers' kicks and
// arrival counts, the send path's frames, IP IDs and its "use the kernel"
// answers; multicast: joins steer the group, every member gets each
// datagram, source filters, leave, shared binds, sends with the group's
// TTL, interface and loop. No root needed.
#include <gtest/gtest.h>
#include <poll.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/mem/pool.h"
#include "core/net/frame_build.h"
#include "core/net/frame_parse.h"
#include "core/net/udp_stack.h"
#include "core/net/udp_tx.h"
#include "tests/core/loopback_ring.h"
#include "tests/core/mem_test_pool.h"

namespace ss::net {
namespace {

using mem::Backing;
using mem::Buffer;
using mem::Pool;
using sstest::LoopbackQueue;

IpAddr ip(const char* s) { return IpAddr::parse(s); }
IpAddr any(sa_family_t f) {
  IpAddr a;
  a.family = f;
  return a;
}

// The flow's address as the stack's IpAddr (UDP flows only).
IpAddr addr_of(const ss::prov::SteeredFlow& f) {
  if (f.proto != IPPROTO_UDP) abort();
  return IpAddr::raw(f.family, f.ip, f.family == AF_INET ? 4 : 16);
}

// Records the flows; refuses IPv6 when told to (as the xdp program does).
class FakeSteering : public ss::prov::FlowSteering {
 public:
  int add(const ss::prov::SteeredFlow& f) override {
    const IpAddr a = addr_of(f);
    const uint16_t port = f.port;
    if (a.family == AF_INET6 && !v6) return -EAFNOSUPPORT;
    return flows.insert({a, port}).second ? 0 : -EEXIST;
  }
  int remove(const ss::prov::SteeredFlow& f) override {
    const IpAddr a = addr_of(f);
    const uint16_t port = f.port;
    return flows.erase({a, port}) ? 0 : -ENOENT;
  }
  bool v6 = true;
  std::set<std::pair<IpAddr, uint16_t>> flows;
};

// Answers every flow with `path`, or with `why` when kernel is set.
class FakeResolver : public TxResolver {
 public:
  int resolve(const Flow& f, TxPath* out, ToKernel* w) override {
    last = f;
    if (err) return err;
    if (kernel) {
      *w = why;
      return 1;
    }
    *out = path;
    return 0;
  }
  TxPath path;
  bool kernel = false;
  ToKernel why = ToKernel::kLocal;
  int err = 0;
  Flow last;
};

// A queue whose tx ring is full while `full` is set.
class FullTx final : public sstest::QueueWrapper {
 public:
  explicit FullTx(prov::RingQueue* q) : QueueWrapper(q) {}
  int tx(Buffer* p, int n) override { return full ? 0 : q_->tx(p, n); }
  bool full = false;
};

const uint8_t kMacPeer[6] = {2, 0, 0, 0, 0, 0xa}, kMacUs[6] = {2, 0, 0, 0, 0, 0xb};

class UdpStackTest : public ::testing::Test {
 protected:
  void SetUp() override { make(64); }
  void make(uint32_t initial_fill, size_t queue_limit = 4096) {
    pp_ = mem::make_pool(2048, 256, 1, 256, Backing::kPrivate);
    ps_ = mem::make_pool(2048, 256, 1, 256, Backing::kPrivate);
    ASSERT_TRUE(pp_ && ps_);
    prov::RingQueueConfig cp, cs;
    cp.pool = pp_.get();
    cs.pool = ps_.get();
    cp.fill_size = cs.fill_size = 128;
    ASSERT_EQ(LoopbackQueue::create_pair(cp, cs, false, &peer_, &ring_), 0);
    std::vector<Buffer> v;
    for (int i = 0; i < 64; i++) v.push_back(pp_->get());
    ASSERT_EQ(peer_->fill(v.data(), 64), 64);
    full_ = std::make_unique<FullTx>(ring_.get());
    UdpStack::Config cfg;
    cfg.rings = {UdpRing{full_.get(), ps_.get()}};
    cfg.steering = &steer_;
    cfg.initial_fill = initial_fill;
    cfg.queue_limit = queue_limit;
    cfg.tcp = tcp_in_;
    cfg.on_watched_arrival = [this] { on_watched(); };
    ASSERT_EQ(UdpStack::create(cfg, &stack_), 0);
    frames_ = std::make_unique<ss::net::FrameTx>(cfg.rings.front().queue, cfg.rings.front().pool);
    tx_ = std::make_unique<UdpTx>(stack_.get(), &resolver_, frames_.get());
    resolver_.path.src = ip("10.0.0.2");
    memcpy(resolver_.path.src_mac, kMacUs, 6);
    memcpy(resolver_.path.dst_mac, kMacPeer, 6);
    resolver_.path.mtu = 1500;
  }
  void TearDown() override {
    tx_.reset();
    frames_.reset();
    stack_.reset();
    full_.reset();
    peer_.reset();
    ring_.reset();
    for (Pool* p : {pp_.get(), ps_.get()}) {
      if (p) {
        EXPECT_EQ(p->free_count(), p->frame_count()) << "a frame leaked";
      }
    }
  }

  // A frame from the peer (src:sport) to dst:dport carrying payload, as
  // the kernel would send it; `mangle` changes its bytes before it goes.
  template <typename F>
  void inject(const char* src, uint16_t sport, const char* dst, uint16_t dport,
              const std::string& payload, F mangle) {
    FrameFields f;
    const IpAddr s = ip(src), d = ip(dst);
    f.ip_version = s.family == AF_INET ? 4 : 6;
    memcpy(f.src_ip, s.bytes, s.size());
    memcpy(f.dst_ip, d.bytes, d.size());
    memcpy(f.src_mac, kMacPeer, 6);
    memcpy(f.dst_mac, kMacUs, 6);
    f.src_port = sport;
    f.dst_port = dport;
    Buffer b = pp_->get();
    ASSERT_TRUE(b);
    auto* p = static_cast<uint8_t*>(b.data());
    memcpy(p + frame_header_len(f.ip_version), payload.data(), payload.size());
    const ssize_t len = build_frame({p, b.capacity()}, f, payload.size(), 1500);
    ASSERT_GT(len, 0);
    size_t n = static_cast<size_t>(len);
    mangle(p, &n);
    b.set_size(n);
    ASSERT_EQ(peer_->tx(&b, 1), 1);
    Buffer done[4];
    while (peer_->complete(done, 4) > 0) {
    }
  }
  void inject(const char* src, uint16_t sport, const char* dst, uint16_t dport,
              const std::string& payload) {
    inject(src, sport, dst, dport, payload, [](uint8_t*, size_t*) {});
  }
  std::unique_ptr<UdpEndpoint> bind(const char* addr, uint16_t port, bool dual = false,
                                    bool shared = false) {
    std::unique_ptr<UdpEndpoint> ep;
    EXPECT_EQ(stack_->bind(UdpAddr{ip(addr), port}, dual, &ep, shared), 0);
    return ep;
  }
  std::string recv(UdpEndpoint& ep, UdpAddr* src = nullptr) {
    char buf[2048];
    size_t full = 0;
    const ssize_t n = ep.recv(buf, sizeof buf, src, &full);
    if (n < 0) return "<" + std::to_string(-n) + ">";
    EXPECT_EQ(static_cast<size_t>(n), full);
    return std::string(buf, static_cast<size_t>(n));
  }
  // The next frame the stack sent, parsed ("" payload and false if none).
  bool sent(ParsedFrame* out, std::string* payload) {
    Buffer b;
    if (peer_->rx(&b, 1) != 1) return false;
    const auto* d = static_cast<const uint8_t*>(b.data());
    if (parse_frame({d, b.size()}, out) != FrameReason::kAccepted) return false;
    payload->assign(reinterpret_cast<const char*>(out->payload.data()), out->payload.size());
    return true;
  }

  std::unique_ptr<Pool> pp_, ps_;
  std::unique_ptr<LoopbackQueue> peer_, ring_;
  std::unique_ptr<FullTx> full_;
  FakeSteering steer_;
  FakeResolver resolver_;
  ss::net::SegmentInput* tcp_in_ = nullptr;  // make()'s Config::tcp
  std::function<void()> on_watched = [] {};  // make()'s Config::on_watched_arrival
  std::unique_ptr<UdpStack> stack_;
  std::unique_ptr<ss::net::FrameTx> frames_;
  std::unique_ptr<UdpTx> tx_;
};

// TCP segments: to the TCP stack when there is one, enqueued in ring
// order under the stack's lock and drained after it (its drain may call
// back in); without one, lost to the kernel and counted so.
class TakeSegments : public ss::net::SegmentInput {
 public:
  void enqueue(ss::net::RxSegment&& s) override {
    got.emplace_back(static_cast<const char*>(s.frame.data()), s.frame.size());
  }
  void drain() override {
    if (stack) stack->rx_counters();  // takes the lock: a deadlock if still held
    drains++;
  }
  UdpStack* stack = nullptr;
  std::vector<std::string> got;
  int drains = 0;
};

TEST_F(UdpStackTest, TcpSegmentsGoToTheTcpStack) {
  const auto to_tcp = [](uint8_t* p, size_t*) { p[14 + 6] = 6; };  // IPv6 next header
  inject("fd00::1", 5000, "fd00::2", 9000, "a segment", to_tcp);
  EXPECT_EQ(stack_->poll_rx(), 1);
  EXPECT_EQ(stack_->rx_counters().to_kernel_lost, 1u);
  EXPECT_EQ(stack_->rx_counters().frames[FrameReason::kNotUdp], 1u);
  TakeSegments tcp;
  stack_.reset();
  tx_.reset();
  TearDown();
  tcp_in_ = &tcp;
  make(64);
  tcp.stack = stack_.get();
  inject("fd00::1", 5000, "fd00::2", 9000, "a segment", to_tcp);
  inject("fd00::1", 5000, "fd00::2", 9000, "a datagram");
  auto ep = bind("fd00::2", 9000);
  EXPECT_EQ(stack_->poll_rx(), 2);
  ASSERT_EQ(tcp.got.size(), 1u);
  EXPECT_EQ(tcp.drains, 1);
  EXPECT_EQ(tcp.got[0].substr(8), "a segment") << "the view starts at the segment";
  EXPECT_EQ(stack_->rx_counters().tcp, 1u);
  EXPECT_EQ(stack_->rx_counters().to_kernel_lost, 0u);
  EXPECT_EQ(recv(*ep), "a datagram");
  ep.reset();
  tcp_in_ = nullptr;
}

TEST_F(UdpStackTest, BindSteersAndUnbindRemoves) {
  auto ep = bind("10.0.0.2", 9000);
  EXPECT_TRUE(steer_.flows.count({ip("10.0.0.2"), 9000}));
  EXPECT_TRUE(ep->steered(AF_INET));
  std::unique_ptr<UdpEndpoint> dup;
  EXPECT_EQ(stack_->bind(UdpAddr{ip("10.0.0.2"), 9000}, false, &dup), -EADDRINUSE);
  EXPECT_FALSE(dup);
  // The refused bind left the first one's entry and flow alone.
  inject("10.0.0.1", 5000, "10.0.0.2", 9000, "still mine");
  EXPECT_EQ(recv(*ep), "still mine");
  EXPECT_EQ(steer_.flows.size(), 1u);
  ep.reset();
  EXPECT_TRUE(steer_.flows.empty());
  inject("10.0.0.1", 5000, "10.0.0.2", 9000, "nobody");
  EXPECT_EQ(stack_->poll_rx(), 1);
  EXPECT_EQ(stack_->rx_counters().no_endpoint, 1u);
}

// Lent to the kernel (a fork child shares the socket): the bind's flows go,
// dual ones too, what was queued stays; taken back they return. Another
// endpoint's hold on a shared flow keeps it; a lent endpoint's unbind
// removes nothing twice.
TEST_F(UdpStackTest, LendToKernelRemovesTheBindsFlowsUntilTakenBack) {
  auto ep = bind("10.0.0.2", 9000);
  auto dual = bind("::", 9001, true);
  inject("10.0.0.1", 5000, "10.0.0.2", 9000, "queued before");
  EXPECT_EQ(stack_->poll_rx(), 1);
  EXPECT_EQ(ep->lend_to_kernel(true), 1);
  EXPECT_EQ(dual->lend_to_kernel(true), 2);
  EXPECT_EQ(ep->lend_to_kernel(true), 0) << "twice: nothing more";
  EXPECT_TRUE(steer_.flows.empty());
  EXPECT_FALSE(ep->steered(AF_INET));
  EXPECT_FALSE(dual->steered(AF_INET6));
  EXPECT_EQ(recv(*ep), "queued before");
  EXPECT_EQ(ep->lend_to_kernel(false), 1);
  EXPECT_EQ(dual->lend_to_kernel(false), 2);
  EXPECT_EQ(ep->lend_to_kernel(false), 0) << "taken back already";
  EXPECT_EQ(steer_.flows.size(), 3u);
  EXPECT_TRUE(ep->steered(AF_INET));
  EXPECT_TRUE(dual->steered(AF_INET) && dual->steered(AF_INET6));
  inject("10.0.0.1", 5000, "10.0.0.2", 9000, "back");
  EXPECT_EQ(recv(*ep), "back");
  dual.reset();

  auto a = bind("10.0.0.3", 9002, false, true), b = bind("10.0.0.3", 9002, false, true);
  EXPECT_EQ(a->lend_to_kernel(true), 0) << "b still holds it";
  EXPECT_TRUE(steer_.flows.count({ip("10.0.0.3"), 9002}));
  a.reset();  // lent: gives nothing back
  EXPECT_TRUE(steer_.flows.count({ip("10.0.0.3"), 9002}));
  EXPECT_EQ(b->lend_to_kernel(true), 1);
  EXPECT_FALSE(steer_.flows.count({ip("10.0.0.3"), 9002}));
  b.reset();
  ep->lend_to_kernel(true);
  ep.reset();
  EXPECT_TRUE(steer_.flows.empty());
}

// Groups lend too: a group's flow leaves the steering once every member
// here is lent, and comes back when one is not (taken back, or another
// member joins); a group joined while lent starts with the kernel. An
// endpoint bound to the group's own address lends its joins alone.
TEST_F(UdpStackTest, LendToKernelMovesTheGroupsOnlyLentMembersHold) {
  const std::pair<IpAddr, uint16_t> g1{ip("239.1.2.3"), 9100}, g2{ip("239.1.2.4"), 9100};
  auto a = bind("0.0.0.0", 9100, false, true);
  ASSERT_EQ(a->join(ip("239.1.2.3"), {}), 0);
  EXPECT_EQ(a->lend_to_kernel(true), 2) << "its bind's flow and its group's";
  EXPECT_FALSE(steer_.flows.count(g1));
  ASSERT_EQ(a->join(ip("239.1.2.4"), {}), 0);
  EXPECT_FALSE(steer_.flows.count(g2)) << "joined while lent: the kernel's";
  auto b = bind("0.0.0.0", 9100, false, true);
  ASSERT_EQ(b->join(ip("239.1.2.3"), {}), 0);
  EXPECT_TRUE(steer_.flows.count(g1)) << "b is not lent: its group is steered";
  inject("10.0.0.1", 5000, "239.1.2.3", 9100, "to both");
  EXPECT_EQ(recv(*b), "to both");
  EXPECT_EQ(recv(*a), "to both") << "a lent member still gets what the rings take";
  EXPECT_EQ(b->leave(ip("239.1.2.3")), 0);
  EXPECT_FALSE(steer_.flows.count(g1)) << "only the lent member left";
  EXPECT_EQ(a->lend_to_kernel(false), 2) << "its groups; b's bind held the port's flow";
  EXPECT_TRUE(steer_.flows.count(g1) && steer_.flows.count(g2));
  EXPECT_TRUE(steer_.flows.count({any(AF_INET), 9100}));
  EXPECT_EQ(a->lend_to_kernel(true), 2) << "its groups; b's bind keeps the port's flow";
  EXPECT_TRUE(steer_.flows.count({any(AF_INET), 9100}));
  b.reset();
  a.reset();  // lent: gives back nothing twice
  EXPECT_TRUE(steer_.flows.empty());

  auto on_group = bind("239.1.2.5", 9102);
  ASSERT_EQ(on_group->join(ip("239.1.2.5"), {}), 0);
  EXPECT_EQ(on_group->lend_to_kernel(true), 1);
  EXPECT_TRUE(steer_.flows.empty());
  EXPECT_EQ(on_group->lend_to_kernel(false), 1);
  EXPECT_TRUE(steer_.flows.count({ip("239.1.2.5"), 9102}));
  on_group.reset();
  EXPECT_TRUE(steer_.flows.empty());
}

TEST_F(UdpStackTest, BadBindsAreRefused) {
  std::unique_ptr<UdpEndpoint> ep;
  EXPECT_EQ(stack_->bind(UdpAddr{IpAddr{}, 9000}, false, &ep), -EINVAL) << "no family";
  EXPECT_EQ(stack_->bind(UdpAddr{ip("0.0.0.0"), 9000}, true, &ep), -EINVAL) << "dual v4";
  EXPECT_EQ(stack_->bind(UdpAddr{ip("fd00::2"), 9000}, true, &ep), -EINVAL) << "dual, not any";
  auto v4 = bind("0.0.0.0", 9000);
  EXPECT_EQ(stack_->bind(UdpAddr{ip("::"), 9000}, true, &ep), -EADDRINUSE) << "v4 taken";
  EXPECT_FALSE(ep);
  EXPECT_EQ(steer_.flows.size(), 1u) << "the refused binds steered nothing";
  auto v6only = bind("::", 9000);  // without v4: no conflict
  EXPECT_EQ(steer_.flows.size(), 2u);
}

TEST_F(UdpStackTest, DemuxExactBeforeWildcardAndDualTakesV4) {
  auto exact = bind("10.0.0.2", 9000);
  auto wild = bind("0.0.0.0", 9000);
  auto dual = bind("::", 9001, true);
  auto v6 = bind("fd00::2", 9002);
  EXPECT_TRUE(steer_.flows.count({any(AF_INET), 9001}));
  EXPECT_TRUE(steer_.flows.count({any(AF_INET6), 9001}));
  inject("10.0.0.1", 5000, "10.0.0.2", 9000, "exact");
  inject("10.0.0.1", 5001, "10.0.0.3", 9000, "wild");
  inject("10.0.0.1", 5002, "10.0.0.2", 9001, "dual v4");
  inject("fd00::1", 5003, "fd00::2", 9001, "dual v6");
  inject("fd00::1", 5004, "fd00::2", 9002, std::string(1400, 'x'));
  UdpAddr src;
  EXPECT_EQ(recv(*exact, &src), "exact");
  EXPECT_EQ(src, (UdpAddr{ip("10.0.0.1"), 5000}));
  EXPECT_EQ(recv(*wild, &src), "wild");
  EXPECT_EQ(src.port, 5001);
  EXPECT_EQ(recv(*dual, &src), "dual v4");
  EXPECT_EQ(src, (UdpAddr{ip("10.0.0.1"), 5002}));
  EXPECT_EQ(recv(*dual, &src), "dual v6");
  EXPECT_EQ(src, (UdpAddr{ip("fd00::1"), 5003}));
  EXPECT_EQ(recv(*v6), std::string(1400, 'x'));
  EXPECT_EQ(recv(*exact), "<" + std::to_string(EAGAIN) + ">");
  const UdpRxCounters c = stack_->rx_counters();
  EXPECT_EQ(c.delivered, 5u);
  EXPECT_EQ(c.frames[FrameReason::kAccepted], 5u);
}

TEST_F(UdpStackTest, UnsteerableFamilyIsLeftToTheKernel) {
  steer_.v6 = false;
  std::unique_ptr<UdpEndpoint> ep;
  EXPECT_EQ(stack_->bind(UdpAddr{ip("fd00::2"), 9000}, false, &ep), -EAFNOSUPPORT);
  EXPECT_FALSE(ep);
  auto dual = bind("::", 9000, true);
  EXPECT_TRUE(dual->steered(AF_INET));
  EXPECT_FALSE(dual->steered(AF_INET6));
  dual.reset();
  EXPECT_TRUE(steer_.flows.empty());
}

TEST_F(UdpStackTest, MalformedAndKernelFramesAreCountedNeverDelivered) {
  auto ep = bind("0.0.0.0", 9000);
  auto flip_payload = [](uint8_t* p, size_t* n) { p[*n - 1] ^= 0x40; };
  auto truncate = [](uint8_t*, size_t* n) { *n = 14 + 20 + 4; };
  auto bad_ip_sum = [](uint8_t* p, size_t*) { p[14 + 8] ^= 1; };  // TTL, sum kept
  auto arp = [](uint8_t* p, size_t*) { p[12] = 0x08, p[13] = 0x06; };
  inject("10.0.0.1", 5000, "10.0.0.2", 9000, "bad udp sum", flip_payload);
  inject("10.0.0.1", 5000, "10.0.0.2", 9000, "truncated", truncate);
  inject("10.0.0.1", 5000, "10.0.0.2", 9000, "bad ip sum", bad_ip_sum);
  inject("10.0.0.1", 5000, "10.0.0.2", 9000, "not ip", arp);
  inject("10.0.0.1", 5000, "10.0.0.2", 9000, "good");
  EXPECT_EQ(recv(*ep), "good");
  EXPECT_EQ(recv(*ep), "<" + std::to_string(EAGAIN) + ">");
  const UdpRxCounters c = stack_->rx_counters();
  EXPECT_EQ(c.frames[FrameReason::kBadUdpChecksum], 1u);
  EXPECT_EQ(c.frames[FrameReason::kIpLengthPastFrame], 1u);
  EXPECT_EQ(c.frames[FrameReason::kBadIpChecksum], 1u);
  EXPECT_EQ(c.frames[FrameReason::kNotIp], 1u);
  EXPECT_EQ(c.to_kernel_lost, 1u);
  EXPECT_EQ(c.delivered, 1u);
}

TEST_F(UdpStackTest, ConnectedEndpointTakesOnlyItsPeer) {
  auto ep = bind("10.0.0.2", 9000);
  ep->connect(UdpAddr{ip("10.0.0.1"), 5000});
  inject("10.0.0.1", 5001, "10.0.0.2", 9000, "other port");
  inject("10.0.0.9", 5000, "10.0.0.2", 9000, "other host");
  inject("10.0.0.1", 5000, "10.0.0.2", 9000, "peer");
  EXPECT_EQ(recv(*ep), "peer");
  EXPECT_EQ(stack_->rx_counters().not_from_peer, 2u);
  ep->connect(UdpAddr{});
  inject("10.0.0.9", 5000, "10.0.0.2", 9000, "anyone");
  EXPECT_EQ(recv(*ep), "anyone");
}

// A sleeper's kick: readable once another poll of the rings queues a
// datagram on the endpoint (not for another endpoint's), and arrivals()
// counts what was queued, dropped ones not.
TEST_F(UdpStackTest, QueuedDatagramsKickWaitersAndCount) {
  auto ep = bind("10.0.0.2", 9000);
  auto other = bind("10.0.0.2", 9001);
  const int kick = ep->join_waiters();
  ASSERT_GE(kick, 0);
  auto readable = [&] {
    pollfd p{kick, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
  };
  EXPECT_FALSE(readable());
  inject("10.0.0.1", 5000, "10.0.0.2", 9001, "not ours");
  EXPECT_EQ(stack_->poll_rx(), 1);
  EXPECT_FALSE(readable());
  EXPECT_EQ(ep->arrivals(), 0u);
  inject("10.0.0.1", 5000, "10.0.0.2", 9000, "ours");
  EXPECT_EQ(stack_->poll_rx(), 1);  // another thread's poll, in a real program
  EXPECT_TRUE(readable());
  EXPECT_EQ(ep->arrivals(), 1u);
  ep->leave_waiters(true);  // the last waiter saw it: drained
  EXPECT_FALSE(readable());
  // No waiter: a datagram writes nothing (one test of a count).
  inject("10.0.0.1", 5000, "10.0.0.2", 9000, "again");
  EXPECT_EQ(stack_->poll_rx(), 1);
  EXPECT_FALSE(readable());
  EXPECT_EQ(ep->arrivals(), 2u);
  EXPECT_EQ(recv(*ep), "ours");
  EXPECT_EQ(recv(*ep), "again");
  EXPECT_EQ(recv(*other), "not ours");
}

// socketXtreme's members sleep on the rings' descriptor, not on their
// endpoint: a poll that queued a datagram for a watched endpoint calls the
// hook once, after its lock (the hook may look at the endpoint), and no
// other poll does.
TEST_F(UdpStackTest, WatchedArrivalsCallTheHookOncePerPoll) {
  auto ep = bind("10.0.0.2", 9000);
  auto other = bind("10.0.0.2", 9001);
  std::vector<size_t> calls;  // ep's queue at each call
  on_watched = [&] { calls.push_back(ep->queued()); };
  inject("10.0.0.1", 5000, "10.0.0.2", 9000, "before the watch");
  EXPECT_EQ(stack_->poll_rx(), 1);
  EXPECT_TRUE(calls.empty());
  ep->watch(true);
  inject("10.0.0.1", 5000, "10.0.0.2", 9001, "another's");
  EXPECT_EQ(stack_->poll_rx(), 1);
  EXPECT_TRUE(calls.empty());
  inject("10.0.0.1", 5000, "10.0.0.2", 9000, "one");
  inject("10.0.0.1", 5000, "10.0.0.2", 9000, "two");
  EXPECT_EQ(stack_->poll_rx(), 2);
  EXPECT_EQ(calls, std::vector<size_t>{3});
  // A receive that reads the rings for another endpoint is a poll too.
  inject("10.0.0.1", 5000, "10.0.0.2", 9000, "three");
  EXPECT_EQ(recv(*other), "another's");  // queued: the rings not read
  EXPECT_EQ(calls.size(), 1u);
  EXPECT_EQ(recv(*other), "<" + std::to_string(EAGAIN) + ">");
  EXPECT_EQ(calls, (std::vector<size_t>{3, 4}));
  ep->watch(false);
  inject("10.0.0.1", 5000, "10.0.0.2", 9000, "unwatched");
  EXPECT_EQ(stack_->poll_rx(), 1);
  EXPECT_EQ(calls.size(), 2u);
  for (const char* want : {"before the watch", "one", "two", "three", "unwatched"})
    EXPECT_EQ(recv(*ep), want);
}

TEST_F(UdpStackTest, FullQueueDropsAndCounts) {
  stack_.reset();
  tx_.reset();
  TearDown();
  make(64, 2);
  auto ep = bind("10.0.0.2", 9000);
  for (int i = 0; i < 3; i++) inject("10.0.0.1", 5000, "10.0.0.2", 9000, std::to_string(i));
  EXPECT_EQ(stack_->poll_rx(), 3);
  EXPECT_EQ(stack_->rx_counters().queue_full, 1u);
  EXPECT_EQ(ep->arrivals(), 2u);  // the dropped one not
  EXPECT_EQ(recv(*ep), "0");
  EXPECT_EQ(recv(*ep), "1");
}

// Nothing to put in the fill ring at create (initial_fill 0, or a pool
// with no free frame) is no error: frames arrive once a release refills
// it. Found by fuzz_udp_stack (create gave the provider's -EINVAL).
TEST_F(UdpStackTest, CreatesWithNothingToFill) {
  stack_.reset();
  tx_.reset();
  TearDown();
  make(0);
  auto ep = bind("10.0.0.2", 9000);
  inject("10.0.0.1", 5000, "10.0.0.2", 9000, "lost: no fill frame");
  EXPECT_EQ(stack_->poll_rx(), 0);
  EXPECT_EQ(ring_->stats().rx_dropped_no_fill, 1u);
  ps_->get().reset();  // a release recycles into the fill ring
  inject("10.0.0.1", 5000, "10.0.0.2", 9000, "arrives");
  EXPECT_EQ(recv(*ep), "arrives");
}

// The payload stays in the ring's frame; a held frame is not refilled, and
// its release puts it back in the fill ring.
TEST_F(UdpStackTest, ZeroCopyFramesAreHeldUntilReleased) {
  stack_.reset();
  tx_.reset();
  TearDown();
  make(2);  // two frames in the stack's fill ring
  auto ep = bind("10.0.0.2", 9000);
  inject("10.0.0.1", 5000, "10.0.0.2", 9000, "first");
  inject("10.0.0.1", 5000, "10.0.0.2", 9000, "second");
  Datagram a, b;
  ASSERT_EQ(ep->recv_zcopy(&a), 1);
  ASSERT_EQ(ep->recv_zcopy(&b), 1);
  EXPECT_EQ(a.buf.pool(), ps_.get()) << "the ring's own frame";
  EXPECT_EQ(std::string(static_cast<const char*>(a.buf.data()), a.buf.size()), "first");
  inject("10.0.0.1", 5000, "10.0.0.2", 9000, "lost: no fill frame");
  EXPECT_EQ(ring_->stats().rx_dropped_no_fill, 1u);
  EXPECT_EQ(ep->recv_zcopy(&b), 0) << "b keeps its datagram when none waits";
  EXPECT_EQ(std::string(static_cast<const char*>(b.buf.data()), b.buf.size()), "second");
  void* frame_a = a.buf.frame();
  a.buf.reset();  // back into the fill ring
  inject("10.0.0.1", 5000, "10.0.0.2", 9000, "third");
  Datagram c;
  ASSERT_EQ(ep->recv_zcopy(&c), 1);
  EXPECT_EQ(c.buf.frame(), frame_a) << "the released frame, recycled";
  EXPECT_EQ(std::string(static_cast<const char*>(c.buf.data()), c.buf.size()), "third");
  EXPECT_EQ(std::string(static_cast<const char*>(b.buf.data()), b.buf.size()), "second");
}

// A program holding every frame of the fill ring (zero-copy receives
// never freed) must not starve the netdev: the pool's spare frames stand
// in, down to a reserve for sends, then one warning and drops counted;
// freed frames make the ring whole again.
TEST_F(UdpStackTest, HeldFramesAreReplacedFromThePoolsSpares) {
  auto ep = bind("10.0.0.2", 9000);  // 64 frames in the fill ring, 256 in the pool
  std::vector<Datagram> held;
  int sent = 0;
  for (int round = 0; round < 12; round++) {
    for (int i = 0; i < 32; i++)
      inject("10.0.0.1", 5000, "10.0.0.2", 9000, "d" + std::to_string(sent++));
    for (Datagram d; ep->recv_zcopy(&d) == 1;) held.push_back(std::move(d));
  }
  for (size_t i = 0; i < held.size(); i++)
    ASSERT_EQ(std::string(static_cast<const char*>(held[i].buf.data()), held[i].buf.size()),
              "d" + std::to_string(i))
        << "in order, none skipped until the ring ran dry";
  const UdpRxCounters c = stack_->rx_counters();
  EXPECT_GT(held.size(), 64u) << "more than the fill ring's own frames";
  EXPECT_GE(held.size(), 256u - 64 / 8 - 64 / 2) << "the spares, but for the reserve";
  EXPECT_LE(held.size(), 256u - 64 / 8) << "the reserve stays in the pool";
  EXPECT_EQ(c.fill_topped_up, held.size() - 64);
  EXPECT_GT(c.fill_dry, 0u);
  EXPECT_EQ(ring_->stats().rx_dropped_no_fill, static_cast<uint64_t>(sent) - held.size());
  held.clear();  // every frame back: the fill ring first, then the pool
  inject("10.0.0.1", 5000, "10.0.0.2", 9000, "after");
  EXPECT_EQ(recv(*ep), "after");
}

TEST_F(UdpStackTest, SendBuildsTheFrameWithCountingIds) {
  auto ep = bind("0.0.0.0", 9000);
  const std::string msg = "to the peer";
  const std::span<const uint8_t> span(reinterpret_cast<const uint8_t*>(msg.data()), msg.size());
  const UdpAddr dst{ip("10.0.0.1"), 7000};
  ASSERT_EQ(tx_->send(*ep, dst, span).status, SendStatus::kSent);
  ASSERT_EQ(tx_->send(*ep, dst, span).status, SendStatus::kSent);
  EXPECT_TRUE(resolver_.last.src.empty()) << "a wildcard bind: the route picks";
  EXPECT_EQ(resolver_.last.sport, 9000);
  EXPECT_EQ(resolver_.last.dport, 7000);
  ParsedFrame p1, p2;
  std::string got;
  ASSERT_TRUE(sent(&p1, &got));
  EXPECT_EQ(got, msg);
  ASSERT_TRUE(sent(&p2, &got));
  EXPECT_EQ(memcmp(p1.fields.src_ip, resolver_.path.src.bytes, 4), 0);
  EXPECT_EQ(memcmp(p1.fields.dst_ip, dst.ip.bytes, 4), 0);
  EXPECT_EQ(memcmp(p1.fields.dst_mac, kMacPeer, 6), 0);
  EXPECT_EQ(p1.fields.src_port, 9000);
  EXPECT_EQ(p1.fields.dst_port, 7000);
  EXPECT_TRUE(p1.fields.dont_fragment);
  EXPECT_EQ(static_cast<uint16_t>(p1.fields.ip_id + 1), p2.fields.ip_id);
  EXPECT_EQ(tx_->counters().sent, 2u);

  // Connected: no destination needed; none at all is EDESTADDRREQ.
  EXPECT_EQ(tx_->send(*ep, UdpAddr{}, span).err, EDESTADDRREQ);
  ep->connect(dst);
  EXPECT_EQ(tx_->send(*ep, UdpAddr{}, span).status, SendStatus::kSent);
  EXPECT_EQ(tx_->send(*ep, UdpAddr{ip("fd00::1"), 7000}, span).err, EAFNOSUPPORT);
}

TEST_F(UdpStackTest, SendAnswersUseTheKernel) {
  auto ep = bind("10.0.0.2", 9000);
  const std::string big(1500 - 28 + 1, 'b'), fits(1500 - 28, 'f');
  auto span = [](const std::string& s) {
    return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  const UdpAddr dst{ip("10.0.0.1"), 7000};
  SendResult r = tx_->send(*ep, dst, span(big));
  EXPECT_EQ(r.status, SendStatus::kUseKernel);
  EXPECT_EQ(r.why, ToKernel::kOverMtu);
  EXPECT_EQ(tx_->send(*ep, dst, span(fits)).status, SendStatus::kSent);
  EXPECT_EQ(resolver_.last.src, ip("10.0.0.2")) << "the bound address";
  resolver_.kernel = true;
  resolver_.why = ToKernel::kNeighbourPending;
  r = tx_->send(*ep, dst, span(fits));
  EXPECT_EQ(r.status, SendStatus::kUseKernel);
  EXPECT_EQ(r.why, ToKernel::kNeighbourPending);
  resolver_.kernel = false;
  resolver_.err = -ENETUNREACH;
  EXPECT_EQ(tx_->send(*ep, dst, span(fits)).err, ENETUNREACH);
  const UdpTxCounters c = tx_->counters();
  EXPECT_EQ(c.to_kernel[static_cast<size_t>(ToKernel::kOverMtu)], 1u);
  EXPECT_EQ(c.to_kernel[static_cast<size_t>(ToKernel::kNeighbourPending)], 1u);
  EXPECT_EQ(c.sent, 1u);
}

TEST_F(UdpStackTest, FullTxRingIsEagain) {
  auto ep = bind("10.0.0.2", 9000);
  full_->full = true;
  const uint8_t x = 'x';
  const SendResult r = tx_->send(*ep, UdpAddr{ip("10.0.0.1"), 7000}, {&x, 1});
  EXPECT_EQ(r.status, SendStatus::kError);
  EXPECT_EQ(r.err, EAGAIN);
  EXPECT_EQ(tx_->counters().ring_full, 1u);
  full_->full = false;
  EXPECT_EQ(tx_->send(*ep, UdpAddr{ip("10.0.0.1"), 7000}, {&x, 1}).status, SendStatus::kSent);
}

// VMA_SND_FLAGS_DUMMY: the whole path walked, the frame built and kept,
// nothing on the tx ring (a full one does not matter); a path the rings
// do not take is still answered as for a real send.
TEST_F(UdpStackTest, DummySendPutsNothingOnTheWire) {
  auto ep = bind("10.0.0.2", 9000);
  const uint8_t x[8] = {'d', 'u', 'm', 'm', 'y'};
  const UdpAddr dst{ip("10.0.0.1"), 7000};
  for (int i = 0; i < 5; i++) ASSERT_EQ(tx_->send(*ep, dst, x, true).status, SendStatus::kSent);
  EXPECT_EQ(resolver_.last.dport, 7000) << "the route was asked";
  full_->full = true;
  EXPECT_EQ(tx_->send(*ep, dst, x, true).status, SendStatus::kSent) << "the tx ring is not used";
  full_->full = false;
  ParsedFrame p;
  std::string got;
  EXPECT_FALSE(sent(&p, &got)) << "a dummy reached the wire";
  UdpTxCounters c = tx_->counters();
  EXPECT_EQ(c.dummy, 6u);
  EXPECT_EQ(c.sent, 0u);
  EXPECT_EQ(c.ring_full, 0u);

  // The real send after them is the only frame out.
  ASSERT_EQ(tx_->send(*ep, dst, x).status, SendStatus::kSent);
  ASSERT_TRUE(sent(&p, &got));
  EXPECT_EQ(got, std::string(reinterpret_cast<const char*>(x), sizeof x));
  EXPECT_FALSE(sent(&p, &got));
  EXPECT_EQ(tx_->counters().sent, 1u);

  resolver_.kernel = true;
  resolver_.why = ToKernel::kLocal;
  const SendResult r = tx_->send(*ep, dst, x, true);
  EXPECT_EQ(r.status, SendStatus::kUseKernel);
  EXPECT_EQ(r.why, ToKernel::kLocal);
  EXPECT_EQ(tx_->counters().dummy, 6u);
}

std::string again() { return "<" + std::to_string(EAGAIN) + ">"; }

TEST_F(UdpStackTest, GroupMembersEachGetEveryDatagram) {
  auto a = bind("0.0.0.0", 9100, false, true);
  auto b = bind("0.0.0.0", 9100, false, true);
  auto other_port = bind("0.0.0.0", 9101);
  EXPECT_EQ(steer_.flows.size(), 2u) << "one flow per wildcard port, counted";
  inject("10.0.0.1", 5000, "239.1.2.3", 9100, "before the join");
  EXPECT_EQ(stack_->poll_rx(), 1);
  EXPECT_EQ(stack_->rx_counters().no_endpoint, 1u) << "a wildcard bind takes no group";
  ASSERT_EQ(a->join(ip("239.1.2.3"), {}), 0);
  ASSERT_EQ(b->join(ip("239.1.2.3"), {}), 0);
  ASSERT_EQ(other_port->join(ip("239.1.2.3"), {}), 0);
  EXPECT_TRUE(steer_.flows.count({ip("239.1.2.3"), 9100}));
  EXPECT_TRUE(steer_.flows.count({ip("239.1.2.3"), 9101}));
  inject("10.0.0.1", 5000, "239.1.2.3", 9100, "one");
  inject("10.0.0.1", 5000, "239.1.2.3", 9100, "two");
  inject("10.0.0.1", 5000, "239.1.2.4", 9100, "another group");
  UdpAddr src;
  EXPECT_EQ(recv(*a, &src), "one");
  EXPECT_EQ(src, (UdpAddr{ip("10.0.0.1"), 5000}));
  EXPECT_EQ(recv(*b), "one");
  EXPECT_EQ(recv(*a), "two");
  EXPECT_EQ(recv(*b), "two");
  EXPECT_EQ(recv(*a), again());
  EXPECT_EQ(recv(*other_port), again()) << "its port only";
  // Unicast to the shared port: the newest bind, once.
  inject("10.0.0.1", 5000, "10.0.0.2", 9100, "unicast");
  EXPECT_EQ(recv(*b), "unicast");
  EXPECT_EQ(recv(*a), again());
  // Leaving: the flow stays while a member remains, then goes.
  EXPECT_EQ(a->leave(ip("239.1.2.3")), 0);
  EXPECT_EQ(a->leave(ip("239.1.2.3")), -ENOENT);
  EXPECT_TRUE(steer_.flows.count({ip("239.1.2.3"), 9100}));
  inject("10.0.0.1", 5000, "239.1.2.3", 9100, "three");
  EXPECT_EQ(recv(*b), "three");
  EXPECT_EQ(recv(*a), again());
  b.reset();  // close: its membership goes with it
  EXPECT_FALSE(steer_.flows.count({ip("239.1.2.3"), 9100}));
  EXPECT_TRUE(steer_.flows.count({any(AF_INET), 9100})) << "a's bind still holds its flow";
  a.reset();
  other_port.reset();
  EXPECT_TRUE(steer_.flows.empty());
}

TEST_F(UdpStackTest, SharedBindsOnlyWhenEveryOneShares) {
  auto a = bind("0.0.0.0", 9100);
  std::unique_ptr<UdpEndpoint> b;
  EXPECT_EQ(stack_->bind(UdpAddr{ip("0.0.0.0"), 9100}, false, &b, true), -EADDRINUSE);
  a.reset();
  a = bind("0.0.0.0", 9100, false, true);
  EXPECT_EQ(stack_->bind(UdpAddr{ip("0.0.0.0"), 9100}, false, &b, false), -EADDRINUSE);
  EXPECT_EQ(stack_->bind(UdpAddr{ip("0.0.0.0"), 9100}, false, &b, true), 0);
  b.reset();
  EXPECT_TRUE(steer_.flows.count({any(AF_INET), 9100})) << "still a's";
}

TEST_F(UdpStackTest, SourceFiltersAndGroupBinds) {
  auto ssm = bind("239.1.2.3", 9100, false, true);  // bound to the group itself
  EXPECT_TRUE(steer_.flows.empty()) << "a group bind steers nothing before its join";
  auto excl = bind("0.0.0.0", 9100, false, true);
  McastFilter only;
  only.include = true;
  only.sources = {ip("10.0.0.1")};
  ASSERT_EQ(ssm->join(ip("239.1.2.3"), only), 0);
  McastFilter block;
  block.sources = {ip("10.0.0.1")};
  ASSERT_EQ(excl->join(ip("239.1.2.3"), block), 0);
  inject("10.0.0.1", 5000, "239.1.2.3", 9100, "from .1");
  inject("10.0.0.9", 5000, "239.1.2.3", 9100, "from .9");
  EXPECT_EQ(recv(*ssm), "from .1");
  EXPECT_EQ(recv(*ssm), again());
  EXPECT_EQ(recv(*excl), "from .9");
  EXPECT_EQ(recv(*excl), again());
  // No member admits .5 once the exclude list names it.
  block.sources.push_back(ip("10.0.0.5"));
  ASSERT_EQ(excl->join(ip("239.1.2.3"), block), 0);
  inject("10.0.0.5", 5000, "239.1.2.3", 9100, "from .5");
  EXPECT_EQ(stack_->poll_rx(), 1);
  EXPECT_EQ(stack_->rx_counters().source_filtered, 1u);
  // What cannot be joined.
  EXPECT_EQ(ssm->join(ip("239.9.9.9"), {}), -EINVAL) << "bound to another group";
  EXPECT_EQ(excl->join(ip("10.0.0.7"), {}), -EINVAL) << "not a group";
  EXPECT_EQ(excl->join(ip("ff0e::1"), {}), -EINVAL) << "v6 group, v4 socket";
  auto dual = bind("::", 9200, true);
  EXPECT_EQ(dual->join(ip("239.1.2.3"), {}), 0) << "a dual socket takes v4 groups";
  EXPECT_EQ(dual->join(ip("ff0e::1:2"), {}), 0);
  inject("fd00::1", 5000, "ff0e::1:2", 9200, "v6 group");
  UdpAddr src;
  EXPECT_EQ(recv(*dual, &src), "v6 group");
  EXPECT_EQ(src, (UdpAddr{ip("fd00::1"), 5000}));
}

TEST_F(UdpStackTest, GroupSendUsesItsTtlInterfaceAndLoop) {
  auto tx = bind("0.0.0.0", 9100, false, true);
  auto member = bind("0.0.0.0", 9100, false, true);
  ASSERT_EQ(member->join(ip("239.1.2.3"), {}), 0);
  const std::string msg = "to the group";
  const std::span<const uint8_t> span(reinterpret_cast<const uint8_t*>(msg.data()), msg.size());
  UdpTxOptions opt;
  opt.mc_ifindex = 7;
  opt.mc_src = ip("10.0.0.2");
  opt.tos = 0x10;
  tx->set_tx_options(opt);
  ASSERT_EQ(tx_->send(*tx, UdpAddr{ip("239.1.2.3"), 9100}, span).status, SendStatus::kSent);
  EXPECT_EQ(resolver_.last.oif, 7) << "IP_MULTICAST_IF's interface";
  EXPECT_EQ(resolver_.last.src, ip("10.0.0.2")) << "... and its address";
  ParsedFrame p;
  std::string got;
  ASSERT_TRUE(sent(&p, &got));
  EXPECT_EQ(got, msg);
  EXPECT_EQ(p.fields.ttl, 1) << "a group's TTL defaults to 1";
  EXPECT_EQ(p.fields.tos, 0x10);
  UdpAddr src;
  EXPECT_EQ(recv(*member, &src), msg) << "looped to the local member";
  EXPECT_EQ(src.port, 9100);
  EXPECT_EQ(stack_->rx_counters().looped, 1u);
  EXPECT_EQ(recv(*tx), again()) << "not a member: no copy";

  opt.mc_loop = false;
  opt.mc_ttl = 32;
  tx->set_tx_options(opt);
  ASSERT_EQ(tx_->send(*tx, UdpAddr{ip("239.1.2.3"), 9100}, span).status, SendStatus::kSent);
  ASSERT_TRUE(sent(&p, &got));
  EXPECT_EQ(p.fields.ttl, 32);
  EXPECT_EQ(recv(*member), again()) << "loop off";
  // Unicast keeps the unicast TTL.
  ASSERT_EQ(tx_->send(*tx, UdpAddr{ip("10.0.0.1"), 9100}, span).status, SendStatus::kSent);
  ASSERT_TRUE(sent(&p, &got));
  EXPECT_EQ(p.fields.ttl, 64);
  EXPECT_EQ(resolver_.last.oif, 0);
}

}  // namespace
}  // namespace ss::net
