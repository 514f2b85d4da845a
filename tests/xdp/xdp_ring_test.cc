// The xdp ring provider over a veth pair between two namespaces: frames the
// kernel sends from b to a steered port arrive on a's rings, other ports
// reach a's kernel sockets, a frame sent from a ring reaches a kernel socket
// in b, a second socket on a taken queue is refused, and nothing is left
// attached afterwards. Needs root (namespaces, XDP): without it the binary
// exits 77 (skipped) and says why.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <fcntl.h>
#include <grp.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <cstring>
#include <string>
#include <vector>

#include "core/mem/pool.h"
#include "core/net/frame_build.h"
#include "core/net/frame_parse.h"
#include "core/prov/registry.h"
#include "core/prov/ring.h"
#include "core/prov/xdp/xdp_device.h"
#include "core/prov/xdp/xdp_family.h"
#include "core/prov/xdp/xdp_join.h"
#include "core/prov/xdp/xdp_queue.h"
#include "tests/common/stderr_capture.h"
#include "tests/common/child_reaper.h"
#include "tests/common/netns_pair.h"

namespace {

using ss::mem::Buffer;
using ss::mem::Pool;
using ss::prov::RingQueue;
using ss::prov::RingQueueConfig;
using sstest::NetnsPair;
namespace xdp = ss::prov::xdp;

constexpr uint16_t kSteeredPort = 9000, kKernelPort = 9001, kPeerPort = 9100;
constexpr int kFrames = 2048;                     // per queue's pool
constexpr auto kWait = std::chrono::seconds(10);  // a bound on waiting, not a check

std::unique_ptr<Pool> make_pool() {
  ss::mem::PoolOptions opt;
  opt.frame_size = 2048;
  opt.frames_per_chunk = kFrames;
  opt.max_chunks = 1;
  // Shared: a fork child maps it to join the queue (xdp_join.h).
  opt.backing = ss::mem::Backing::kShared;
  std::unique_ptr<Pool> p;
  EXPECT_EQ(Pool::create(opt, &p), 0);
  return p;
}

// A joining child's own frames (its copies of what it receives).
std::unique_ptr<Pool> make_pool_private() {
  ss::mem::PoolOptions opt;
  opt.frame_size = 2048;
  opt.frames_per_chunk = kFrames;
  opt.backing = ss::mem::Backing::kPrivate;
  std::unique_ptr<Pool> p;
  return Pool::create(opt, &p) == 0 ? std::move(p) : nullptr;
}

// One ring queue with its own pool (a pool has one recycler).
struct Served {
  std::unique_ptr<Pool> pool;
  std::unique_ptr<RingQueue> queue;
};

// Puts `fill` frames (half the pool's by default) into the fill ring.
int open_queue(uint32_t queue_id, Served* s, int fill = kFrames / 2) {
  const ss::prov::Descriptor* d = ss::prov::find_provider("xdp", ss::prov::Family::kRing);
  if (!d || !d->ring) return -ENOENT;
  s->pool = make_pool();
  RingQueueConfig cfg;
  cfg.pool = s->pool.get();
  cfg.ifname = NetnsPair::kIfA;
  cfg.queue_id = queue_id;
  cfg.fill_size = 4096;
  cfg.rx_size = cfg.tx_size = cfg.completion_size = 1024;
  int err = d->ring->create(cfg, &s->queue);
  if (err || !fill) return err;
  std::vector<Buffer> frames;
  for (int i = 0; i < fill; i++) frames.push_back(s->pool->get());
  const int n = s->queue->fill(frames.data(), static_cast<int>(frames.size()));
  return n == static_cast<int>(frames.size()) ? 0 : (n < 0 ? n : -ENOSPC);
}

// Every rx queue of xa (traffic may arrive on any), each filled with `fill`
// frames: 0 or the first error.
int open_all(int fill, std::vector<Served>* out) {
  const int nq = xdp::rx_queue_count(NetnsPair::kIfA);
  if (nq <= 0) return nq ? nq : -ENODEV;
  out->resize(static_cast<size_t>(nq));
  for (int q = 0; q < nq; q++)
    if (int err = open_queue(static_cast<uint32_t>(q), &(*out)[static_cast<size_t>(q)], fill))
      return err;
  return 0;
}

// UDP to kSteeredPort on any address of a.
xdp::Flow steered_flow() {
  xdp::Flow flow;
  flow.proto = IPPROTO_UDP;
  flow.port = htons(kSteeredPort);
  return flow;
}

// The UDP payload of an Ethernet/IP/UDP frame, or "" when it is not a
// good one for `port` (core/net's parser: checksums verified too).
std::string udp_payload(const Buffer& b, uint16_t port) {
  ss::net::ParsedFrame f;
  std::span<const uint8_t> frame(static_cast<const uint8_t*>(b.data()), b.size());
  if (ss::net::parse_frame(frame, &f) != ss::net::FrameReason::kAccepted ||
      f.fields.dst_port != port)
    return "";
  return std::string(reinterpret_cast<const char*>(f.payload.data()), f.payload.size());
}

// The payload of the next steered datagram on any of the queues ("" if
// none came); its frame is released at once (and recycles).
std::string receive_one(std::vector<Served>& served) {
  const auto end = std::chrono::steady_clock::now() + kWait;
  while (std::chrono::steady_clock::now() < end) {
    for (auto& s : served) {
      Buffer pkt;
      if (s.queue->rx(&pkt, 1) == 1) return udp_payload(pkt, kSteeredPort);
    }
    usleep(200);
  }
  return "";
}

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, static_cast<int>(std::chrono::milliseconds(kWait).count())) == 1;
}

class XdpRing : public ::testing::Test {
 protected:
  void SetUp() override {
    ns_ = std::make_unique<NetnsPair>("ssxdp");
    ASSERT_EQ(ns_->error(), "");
    ASSERT_FALSE(ns_->xdp_attached()) << "a fresh veth has no program";
    const int err = open_all(kFrames / 2, &served_);
    ASSERT_EQ(err, 0) << strerror(-err);
    ASSERT_TRUE(ns_->xdp_attached());
    // A socket on every rx queue in use (two: see NetnsPair).
    const std::string link = sstest::output("ip -n " + ns_->name_a() + " -d link show dev xa");
    const size_t at = link.find("numrxqueues ");
    ASSERT_NE(at, std::string::npos);
    EXPECT_EQ(served_.size(), std::stoul(link.substr(at + 12)));
  }
  void TearDown() override {
    served_.clear();  // queues before their pools: Served's member order
    if (ns_) {
      EXPECT_FALSE(ns_->xdp_attached()) << "the program must go with the last queue";
      const std::string a = ns_->name_a(), b = ns_->name_b();
      ns_.reset();
      EXPECT_FALSE(sstest::netns_exists(a));
      EXPECT_FALSE(sstest::netns_exists(b));
    }
  }

  // Payloads of `want` packets for `port`, from whichever queue they came.
  std::vector<std::string> receive(size_t want, uint16_t port) {
    std::vector<std::string> got;
    const auto end = std::chrono::steady_clock::now() + kWait;
    while (got.size() < want && std::chrono::steady_clock::now() < end) {
      std::vector<pollfd> fds;
      for (auto& s : served_) {
        short ev = 0;
        const int fd = s.queue->poll_fd(ss::prov::Ring::kRx, &ev);
        if (fd >= 0) fds.push_back({fd, ev, 0});
      }
      poll(fds.data(), fds.size(), 100);
      for (auto& s : served_) {
        Buffer pkts[16];
        const int n = s.queue->rx(pkts, 16);
        EXPECT_GE(n, 0);
        for (int i = 0; i < n; i++) got.push_back(udp_payload(pkts[i], port));
      }  // released frames recycle into that queue's fill ring
    }
    return got;
  }

  std::unique_ptr<NetnsPair> ns_;
  std::vector<Served> served_;
};

TEST_F(XdpRing, SteeredPortArrivesOnTheRingOtherPortsOnTheKernel) {
  const xdp::Flow flow = steered_flow();  // wildcard address
  ASSERT_EQ(xdp::add_flow(NetnsPair::kIfA, flow), 0);
  xdp::Counters before;
  ASSERT_EQ(xdp::counters(NetnsPair::kIfA, &before), 0);

  // Kernel sockets in a on both ports: the steered one must stay silent.
  const int steered_sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  const int kernel_sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa = sstest::inet("0.0.0.0", kSteeredPort);
  ASSERT_EQ(bind(steered_sock, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  sa = sstest::inet("0.0.0.0", kKernelPort);
  ASSERT_EQ(bind(kernel_sock, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);

  const int tx = ns_->socket_in_b(SOCK_DGRAM);
  ASSERT_GE(tx, 0);
  constexpr int kCount = 20;
  std::vector<std::string> sent;
  for (int i = 0; i < kCount; i++) {
    sent.push_back("steered datagram " + std::to_string(i));
    sa = sstest::inet(NetnsPair::kIpA, kSteeredPort);
    ASSERT_EQ(sendto(tx, sent.back().data(), sent.back().size(), 0,
                     reinterpret_cast<sockaddr*>(&sa), sizeof sa),
              static_cast<ssize_t>(sent.back().size()));
  }
  const std::string to_kernel = "for the kernel";
  sa = sstest::inet(NetnsPair::kIpA, kKernelPort);
  ASSERT_EQ(sendto(tx, to_kernel.data(), to_kernel.size(), 0, reinterpret_cast<sockaddr*>(&sa),
                   sizeof sa),
            static_cast<ssize_t>(to_kernel.size()));

  std::vector<std::string> got = receive(kCount, kSteeredPort);
  std::sort(got.begin(), got.end());
  std::sort(sent.begin(), sent.end());
  EXPECT_EQ(got, sent);

  ASSERT_TRUE(readable(kernel_sock));
  char buf[64];
  ssize_t n = recv(kernel_sock, buf, sizeof buf, 0);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf, static_cast<size_t>(n)), to_kernel);
  EXPECT_EQ(recv(steered_sock, buf, sizeof buf, MSG_DONTWAIT), -1) << "a steered datagram";

  xdp::Counters after;
  ASSERT_EQ(xdp::counters(NetnsPair::kIfA, &after), 0);
  EXPECT_EQ(after.redirected - before.redirected, static_cast<uint64_t>(kCount));
  EXPECT_GT(after.passed,
            before.passed);  // ARP and the kernel's datagram at least
  uint64_t rx_total = 0;
  for (auto& s : served_) rx_total += s.queue->stats().rx_packets;
  EXPECT_EQ(rx_total, static_cast<uint64_t>(kCount));

  ASSERT_EQ(xdp::remove_flow(NetnsPair::kIfA, flow), 0);
  EXPECT_EQ(xdp::remove_flow(NetnsPair::kIfA, flow), -ENOENT);
  close(tx);
  close(kernel_sock);
  close(steered_sock);
}

// The peer's kernel picks its tx queue (and so our rx queue) by flow hash:
// 16 flows all on one queue of two would be a 1 in 32768 chance.
TEST_F(XdpRing, SteeredFramesArriveOnEveryQueue) {
  ASSERT_EQ(served_.size(), 2u);
  ASSERT_EQ(xdp::add_flow(NetnsPair::kIfA, steered_flow()), 0);
  constexpr int kFlows = 16;
  const sockaddr_in sa = sstest::inet(NetnsPair::kIpA, kSteeredPort);
  for (int i = 0; i < kFlows; i++) {
    const int tx = ns_->socket_in_b(SOCK_DGRAM);  // its own source port: its own flow
    ASSERT_GE(tx, 0);
    ASSERT_EQ(sendto(tx, "f", 1, 0, reinterpret_cast<const sockaddr*>(&sa), sizeof sa), 1);
    close(tx);
  }
  std::vector<int> per_queue(served_.size());
  int total = 0;
  const auto end = std::chrono::steady_clock::now() + kWait;
  while (total < kFlows && std::chrono::steady_clock::now() < end) {
    for (size_t q = 0; q < served_.size(); q++) {
      Buffer pkts[16];
      const int n = served_[q].queue->rx(pkts, 16);
      ASSERT_GE(n, 0);
      per_queue[q] += n;
      total += n;
    }
    usleep(200);
  }
  EXPECT_EQ(total, kFlows);
  for (size_t q = 0; q < served_.size(); q++) EXPECT_GT(per_queue[q], 0) << "queue " << q;
}

// An Ethernet/IPv4/UDP frame from a to b, written into a pool frame by
// core/net's builder (checksums filled).
void build_udp(Buffer* b, const uint8_t dst_mac[6], const uint8_t src_mac[6],
               const std::string& payload) {
  ss::net::FrameFields f;
  memcpy(f.dst_mac, dst_mac, 6);
  memcpy(f.src_mac, src_mac, 6);
  inet_pton(AF_INET, NetnsPair::kIpA, f.src_ip);
  inet_pton(AF_INET, NetnsPair::kIpB, f.dst_ip);
  f.src_port = kSteeredPort;
  f.dst_port = kPeerPort;
  const size_t head = ss::net::frame_header_len(4);
  ASSERT_EQ(b->set_size(head + payload.size()), 0);
  auto* p = static_cast<uint8_t*>(b->data());
  memcpy(p + head, payload.data(), payload.size());
  ASSERT_EQ(ss::net::build_frame({p, head + payload.size()}, f, payload.size(), 1500),
            static_cast<ssize_t>(head + payload.size()));
}

TEST_F(XdpRing, FrameSentFromTheRingReachesAKernelSocketInThePeer) {
  const int rx = ns_->socket_in_b(SOCK_DGRAM);
  ASSERT_GE(rx, 0);
  sockaddr_in sa = sstest::inet("0.0.0.0", kPeerPort);
  ASSERT_EQ(bind(rx, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  uint8_t mac_b[6], mac_a[6];
  ASSERT_TRUE(ns_->mac_b(mac_b));
  {
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ifreq ifr{};
    strncpy(ifr.ifr_name, NetnsPair::kIfA, IFNAMSIZ - 1);
    ASSERT_EQ(ioctl(fd, SIOCGIFHWADDR, &ifr), 0);
    memcpy(mac_a, ifr.ifr_hwaddr.sa_data, 6);
    close(fd);
  }
  RingQueue& q = *served_[0].queue;
  ASSERT_TRUE(q.caps() & ss::prov::kRingCapNeedsKick);
  const std::string payload = "sent from the ring";
  Buffer pkt = served_[0].pool->get();
  ASSERT_TRUE(pkt);
  build_udp(&pkt, mac_b, mac_a, payload);
  ASSERT_EQ(q.tx(&pkt, 1), 1);
  EXPECT_FALSE(pkt) << "the ring took the packet";
  ASSERT_EQ(q.kick(), 0);

  Buffer done;
  const auto end = std::chrono::steady_clock::now() + kWait;
  int n = 0;
  while (!(n = q.complete(&done, 1)) && std::chrono::steady_clock::now() < end) {
    q.kick();
    usleep(1000);
  }
  ASSERT_EQ(n, 1);
  EXPECT_EQ(udp_payload(done, kPeerPort), payload) << "the completion gives the packet back";

  ASSERT_TRUE(readable(rx));
  char buf[64];
  const ssize_t got = recv(rx, buf, sizeof buf, 0);
  ASSERT_GT(got, 0);
  EXPECT_EQ(std::string(buf, static_cast<size_t>(got)), payload);
  EXPECT_EQ(q.stats().tx_packets, 1u);
  close(rx);
}

TEST_F(XdpRing, ASecondSocketOnATakenQueueIsRefused) {
  Served second;
  sstest::StderrCapture log;
  EXPECT_EQ(open_queue(0, &second), -EBUSY);
  const std::string text = log.text();
  EXPECT_FALSE(second.queue);
  // One warning (shown at the default log level) naming the queue.
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_NE(text.find("WARN: xdp: xa queue 0: "), std::string::npos) << text;
}

// The source port of a TCP SYN to kSteeredPort, else -1.
int syn_source(const Buffer& b) {
  ss::net::ParsedFrame f;
  std::span<const uint8_t> frame(static_cast<const uint8_t*>(b.data()), b.size());
  if (ss::net::parse_frame(frame, &f, true) != ss::net::FrameReason::kAccepted ||
      f.protocol != ss::net::kIpProtoTcp || f.payload.size() < 20)
    return -1;
  const uint8_t* t = f.payload.data();
  const bool syn = (t[13] & 0x12) == 0x02;
  return syn && (t[2] << 8 | t[3]) == kSteeredPort ? (t[0] << 8 | t[1]) : -1;
}

// A non-blocking connect from b to a's kSteeredPort (its SYN on the
// wire), from port `from` (0: any); the socket, its port in *port.
int connect_from_b(NetnsPair& ns, uint16_t from, uint16_t* port) {
  const int fd = ns.socket_in_b(SOCK_STREAM | SOCK_NONBLOCK);
  sockaddr_in sa = sstest::inet("0.0.0.0", from);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) < 0) return -1;
  socklen_t len = sizeof sa;
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  *port = ntohs(sa.sin_port);
  sa = sstest::inet(NetnsPair::kIpA, kSteeredPort);
  connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  return fd;
}

// A family takes a child per slot, 255 of them (nginx's worker_processes
// auto on 255 CPUs); a slot whose process is gone is free again.
TEST(XdpFamily, TakesAChildInEverySlotAndFreesTheGoneOnes) {
  int fd = -1;
  xdp::FamilyPage* page = nullptr;
  ASSERT_EQ(xdp::family_create(&fd, &page), 0);
  for (int want = 1; want < SS_MAX_SLOTS; want++)
    ASSERT_EQ(xdp::family_claim_slot(page, getpid()), want);
  EXPECT_EQ(xdp::family_claim_slot(page, getpid()), -ENOSPC);
  pid_t gone = fork();
  ASSERT_GE(gone, 0);
  if (gone == 0) _exit(0);
  ASSERT_EQ(waitpid(gone, nullptr, 0), gone);
  xdp::family_release_slot(page, 200, getpid());
  EXPECT_EQ(xdp::family_claim_slot(page, gone), 200);
  EXPECT_FALSE(xdp::family_slot_alive(page, 200));
  EXPECT_EQ(xdp::family_claim_slot(page, getpid()), 200);  // its process exited
  xdp::family_unmap(page);
  close(fd);
}

// A fork child joins every queue (its own slot, its own frames) as
// nobody (as nginx's workers change their user), on sockets the parent
// made; the parent gives the port's group to that slot: SYNs reach the
// child, not the parent, except a connection the parent owns; once the
// child exits its sockets leave the map and the port's SYNs go to the
// kernel.
TEST_F(XdpRing, AForkChildJoinsTheQueuesAndTakesItsSlotsSyns) {
  xdp::Flow flow;
  flow.proto = IPPROTO_TCP;
  flow.port = htons(kSteeredPort);
  ASSERT_EQ(xdp::add_flow(NetnsPair::kIfA, flow), 0);
  const auto dev = xdp::Device::find(NetnsPair::kIfA);
  ASSERT_TRUE(dev);
  xdp::DeviceShare ds;
  ASSERT_EQ(dev->share(&ds), 0);
  std::vector<xdp::QueueShare> qs(served_.size());
  for (size_t q = 0; q < served_.size(); q++) {
    auto* xq = dynamic_cast<xdp::XdpQueue*>(served_[q].queue.get());
    ASSERT_TRUE(xq);
    ASSERT_EQ(xq->share(&qs[q]), 0);
    qs[q].own = xdp::JoinedQueue::open_socket();
    ASSERT_GE(qs[q].own, 0) << strerror(-qs[q].own);
  }
  int down[2], up[2];
  ASSERT_EQ(pipe2(down, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(up, O_CLOEXEC), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The child: its slot (or -errno) up, then each SYN's source port,
    // until the parent closes `down`.
    close(down[1]);
    close(up[0]);
    constexpr uid_t kNobody = 65534;
    int32_t slot = setgroups(0, nullptr) || setgid(kNobody) || setuid(kNobody) ? -errno : 0;
    // Unprivileged now: no AF_XDP socket of its own (else ECANCELED).
    if (const int own = xdp::JoinedQueue::open_socket(); slot == 0 && own != -EPERM)
      slot = own >= 0 ? (close(own), -ECANCELED) : own;
    std::shared_ptr<xdp::Device> joined;
    if (slot == 0) slot = xdp::Device::join(NetnsPair::kIfA, ds, &joined);
    std::unique_ptr<Pool> own = make_pool_private();
    std::vector<std::unique_ptr<RingQueue>> mine(qs.size());
    for (size_t q = 0; slot == 0 && q < qs.size(); q++)
      slot = xdp::JoinedQueue::create(NetnsPair::kIfA, qs[q], joined, own.get(), 1024, &mine[q]);
    if (slot == 0) slot = static_cast<int32_t>(joined->slot());
    if (write(up[1], &slot, sizeof slot) != sizeof slot || slot <= 0) _exit(1);
    for (;;) {
      std::vector<pollfd> fds{{down[0], POLLIN, 0}};
      for (auto& q : mine) {
        short ev = 0;
        fds.push_back({q->poll_fd(ss::prov::Ring::kRx, &ev), ev, 0});
      }
      poll(fds.data(), fds.size(), 100);
      if (fds[0].revents) break;
      for (auto& q : mine) {
        Buffer pkts[16];
        const int n = q->rx(pkts, 16);
        for (int i = 0; i < n; i++)
          if (const int32_t port = syn_source(pkts[i]); port >= 0)
            if (write(up[1], &port, sizeof port) != sizeof port) _exit(1);
      }
    }
    mine.clear();
    _exit(0);
  }
  // An assertion failing below leaves no child holding the rings.
  sstest::ChildReaper reap{pid};
  close(down[0]);
  close(up[1]);
  for (const xdp::QueueShare& q : qs) close(q.own);
  int32_t slot = 0;
  ASSERT_EQ(read(up[0], &slot, sizeof slot), static_cast<ssize_t>(sizeof slot));
  ASSERT_GT(slot, 0) << strerror(-slot) << " (ECANCELED: the child kept CAP_NET_RAW)";
  const uint32_t slots[] = {static_cast<uint32_t>(slot)};
  ASSERT_EQ(dev->set_group(flow, slots, 1), 0);

  // To the child: the SYN of a connection of the group.
  uint16_t pa = 0;
  const int ca = connect_from_b(*ns_, 0, &pa);
  ASSERT_GE(ca, 0);
  ASSERT_TRUE(readable(up[0]));
  int32_t got = -1;
  ASSERT_EQ(read(up[0], &got, sizeof got), static_cast<ssize_t>(sizeof got));
  EXPECT_EQ(got, pa);

  // To the parent: a connection it owns, although its port's group is
  // the child's.
  constexpr uint16_t kOwnedPort = 47011;
  xdp::Connection c;
  inet_pton(AF_INET, NetnsPair::kIpA, c.local);
  inet_pton(AF_INET, NetnsPair::kIpB, c.remote);
  c.local_port = htons(kSteeredPort);
  c.remote_port = htons(kOwnedPort);
  ASSERT_EQ(dev->own_connection(c, 0), 0);
  uint16_t pb = 0;
  const int cb = connect_from_b(*ns_, kOwnedPort, &pb);
  ASSERT_GE(cb, 0);
  int parent_saw = -1;
  const auto end = std::chrono::steady_clock::now() + kWait;
  while (parent_saw != kOwnedPort && std::chrono::steady_clock::now() < end) {
    for (auto& s : served_) {
      Buffer pkts[16];
      const int n = s.queue->rx(pkts, 16);
      for (int i = 0; i < n; i++)
        if (const int p = syn_source(pkts[i]); p >= 0) {
          EXPECT_EQ(p, kOwnedPort) << "only the owned connection's SYN reaches the parent";
          parent_saw = p;
        }
    }
    usleep(200);
  }
  EXPECT_EQ(parent_saw, kOwnedPort);

  // A group of two: the port's SYNs spread over the parent and the child
  // by their 4-tuples' hash (16 clients from fixed ports: the same spread
  // every run), each SYN to one of them.
  const uint32_t both[] = {0, static_cast<uint32_t>(slot)};
  ASSERT_EQ(dev->set_group(flow, both, 2), 0);
  constexpr uint16_t kFirst = 47200, kClients = 16;
  std::vector<int> spread;
  for (uint16_t p = kFirst; p < kFirst + kClients; p++) {
    uint16_t port = 0;
    spread.push_back(connect_from_b(*ns_, p, &port));
    ASSERT_GE(spread.back(), 0);
  }
  std::set<int> at_parent, at_child;
  const auto in_range = [&](int p) { return p >= kFirst && p < kFirst + kClients; };
  const auto end3 = std::chrono::steady_clock::now() + kWait;
  while (at_parent.size() + at_child.size() < kClients && std::chrono::steady_clock::now() < end3) {
    for (auto& s : served_) {
      Buffer pkts[16];
      const int n = s.queue->rx(pkts, 16);
      for (int i = 0; i < n; i++)
        if (const int p = syn_source(pkts[i]); in_range(p)) at_parent.insert(p);
    }
    pollfd pf{up[0], POLLIN, 0};
    while (poll(&pf, 1, 0) == 1 && read(up[0], &got, sizeof got) == sizeof got)
      if (in_range(got)) at_child.insert(got);
    usleep(200);
  }
  EXPECT_EQ(at_parent.size() + at_child.size(), kClients);
  EXPECT_GT(at_parent.size(), 0u) << "no SYN of the group reached the parent";
  EXPECT_GT(at_child.size(), 0u) << "no SYN of the group reached the child";
  for (const int p : at_parent) EXPECT_EQ(at_child.count(p), 0u) << "port " << p << " reached both";
  for (const int fd : spread) close(fd);
  // A family's every slot in one group (255 children and the parent),
  // and no more.
  std::vector<uint32_t> all(SS_MAX_SLOTS + 1);
  for (uint32_t i = 0; i < all.size(); i++) all[i] = i % SS_MAX_SLOTS;
  EXPECT_EQ(dev->set_group(flow, all.data(), SS_MAX_SLOTS), 0);
  EXPECT_EQ(dev->set_group(flow, all.data(), SS_MAX_SLOTS + 1), -EINVAL);
  ASSERT_EQ(dev->set_group(flow, slots, 1), 0);  // the child's alone again

  // The child leaves: its sockets go from the map, the port's SYNs to
  // the kernel.
  close(down[1]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  reap.release();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  while (read(up[0], &got, sizeof got) == sizeof got)
    EXPECT_NE(got, kOwnedPort) << "the owned connection's SYN reached the child";
  close(up[0]);
  xdp::Counters before, after;
  ASSERT_EQ(xdp::counters(NetnsPair::kIfA, &before), 0);
  uint16_t pc = 0;
  const int cc = connect_from_b(*ns_, 0, &pc);
  ASSERT_GE(cc, 0);
  const auto end2 = std::chrono::steady_clock::now() + kWait;
  do {
    usleep(1000);
    ASSERT_EQ(xdp::counters(NetnsPair::kIfA, &after), 0);
  } while (after.no_socket == before.no_socket && std::chrono::steady_clock::now() < end2);
  EXPECT_GT(after.no_socket, before.no_socket);
  ASSERT_EQ(dev->set_group(flow, nullptr, 0), 0);
  for (const int fd : {ca, cb, cc}) close(fd);
}

TEST_F(XdpRing, DropFlowIsDroppedAndCounted) {
  xdp::Flow flow = steered_flow();
  inet_pton(AF_INET, NetnsPair::kIpA, &flow.ip);  // this address only
  flow.drop = true;
  ASSERT_EQ(xdp::add_flow(NetnsPair::kIfA, flow), 0);
  const int tx = ns_->socket_in_b(SOCK_DGRAM);
  ASSERT_GE(tx, 0);
  // ARP goes first (passed), so the datagram itself is the one dropped.
  sockaddr_in sa = sstest::inet(NetnsPair::kIpA, kKernelPort);
  const int kernel_sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(bind(kernel_sock, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ASSERT_EQ(sendto(tx, "x", 1, 0, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 1);
  ASSERT_TRUE(readable(kernel_sock));  // the path works
  sa = sstest::inet(NetnsPair::kIpA, kSteeredPort);
  ASSERT_EQ(sendto(tx, "y", 1, 0, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 1);
  xdp::Counters c;
  const auto end = std::chrono::steady_clock::now() + kWait;
  do {
    ASSERT_EQ(xdp::counters(NetnsPair::kIfA, &c), 0);
  } while (c.dropped == 0 && std::chrono::steady_clock::now() < end && !usleep(1000));
  EXPECT_EQ(c.dropped, 1u);
  EXPECT_EQ(c.redirected, 0u);
  close(tx);
  close(kernel_sock);
}

// The namespaces without the fixture's queues.
class XdpRingRefused : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(ns_.error(), ""); }
  // The id of the XDP program on xa, or "" when none.
  std::string prog_id() const {
    const std::string out = sstest::output("ip -n " + ns_.name_a() + " -d link show dev xa");
    const size_t at = out.find("prog/xdp id ");
    return at == std::string::npos ? "" : out.substr(at, out.find_first_of(" \n", at + 12) - at);
  }
  NetnsPair ns_{"ssxdp"};
};

TEST_F(XdpRingRefused, AnotherProgramOnTheDeviceIsKept) {
  ASSERT_EQ(sstest::run("ip -n " + ns_.name_a() +
                        " link set dev xa xdp obj " SS_STEER_OBJ " sec xdp.frags"),
            0);
  const std::string theirs = prog_id();
  ASSERT_NE(theirs, "");
  Served s;
  EXPECT_EQ(open_queue(0, &s), -EBUSY);
  EXPECT_EQ(prog_id(), theirs) << "never replaced";
  ASSERT_EQ(sstest::run("ip -n " + ns_.name_a() + " link set dev xa xdp off"), 0);
  EXPECT_EQ(prog_id(), "");
}

TEST_F(XdpRingRefused, WithoutPrivilegeTheQueueIsRefused) {
  // A child without capabilities (root's uid alone does not pass bpf()).
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct none[2] = {};
    if (syscall(SYS_capset, &hdr, none) != 0) _exit(2);
    Served s;
    const int err = open_queue(0, &s);
    _exit(err == -EPERM || err == -EACCES ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: not EPERM/EACCES, 2: capset failed";
  EXPECT_EQ(prog_id(), "");
}

using XdpRingBare = XdpRingRefused;

TEST_F(XdpRingBare, AnEmptyFillRingDropsAndCounts) {
  std::vector<Served> served;
  ASSERT_EQ(open_all(0, &served), 0);
  ASSERT_EQ(xdp::add_flow(NetnsPair::kIfA, steered_flow()), 0);
  const int tx = ns_.socket_in_b(SOCK_DGRAM);
  ASSERT_GE(tx, 0);
  const sockaddr_in sa = sstest::inet(NetnsPair::kIpA, kSteeredPort);
  ASSERT_EQ(sendto(tx, "lost", 4, 0, reinterpret_cast<const sockaddr*>(&sa), sizeof sa), 4);
  auto dropped = [&] {
    uint64_t n = 0;
    for (auto& s : served) n += s.queue->stats().rx_dropped_no_fill;
    return n;
  };
  const auto end = std::chrono::steady_clock::now() + kWait;
  while (!dropped() && std::chrono::steady_clock::now() < end) usleep(1000);
  EXPECT_GE(dropped(), 1u);
  Buffer pkt;
  for (auto& s : served) EXPECT_EQ(s.queue->rx(&pkt, 1), 0);
  close(tx);
}

TEST_F(XdpRingBare, ReleasedFramesRecycleIntoTheFillRing) {
  constexpr int kFill = 4, kRounds = 40;  // far more datagrams than filled frames
  std::vector<Served> served;
  ASSERT_EQ(open_all(kFill, &served), 0);
  ASSERT_EQ(xdp::add_flow(NetnsPair::kIfA, steered_flow()), 0);
  const int tx = ns_.socket_in_b(SOCK_DGRAM);
  ASSERT_GE(tx, 0);
  const sockaddr_in sa = sstest::inet(NetnsPair::kIpA, kSteeredPort);
  for (int i = 0; i < kRounds; i++) {
    const std::string msg = "round " + std::to_string(i);
    ASSERT_EQ(
        sendto(tx, msg.data(), msg.size(), 0, reinterpret_cast<const sockaddr*>(&sa), sizeof sa),
        static_cast<ssize_t>(msg.size()));
    ASSERT_EQ(receive_one(served), msg);
  }
  for (auto& s : served) EXPECT_EQ(s.queue->stats().rx_dropped_no_fill, 0u);
  close(tx);
}

TEST_F(XdpRingBare, GenericModeWhereTheDriverRefusesNative) {
  // veth refuses native XDP while it has fewer rx queues than its peer
  // has tx queues (a frags-aware program takes any MTU).
  ASSERT_EQ(sstest::run("ip netns exec " + ns_.name_a() + " ethtool -L xa rx 1"), 0);
  std::vector<Served> served;
  ASSERT_EQ(open_all(kFrames / 2, &served), 0);
  auto dev = xdp::Device::find(NetnsPair::kIfA);
  ASSERT_TRUE(dev);
  EXPECT_FALSE(dev->native());
  EXPECT_NE(sstest::output("ip -n " + ns_.name_a() + " -d link show dev xa").find("xdpgeneric"),
            std::string::npos);
  dev.reset();
  ASSERT_EQ(xdp::add_flow(NetnsPair::kIfA, steered_flow()), 0);
  const int tx = ns_.socket_in_b(SOCK_DGRAM);
  ASSERT_GE(tx, 0);
  const sockaddr_in sa = sstest::inet(NetnsPair::kIpA, kSteeredPort);
  ASSERT_EQ(sendto(tx, "generic", 7, 0, reinterpret_cast<const sockaddr*>(&sa), sizeof sa), 7);
  EXPECT_EQ(receive_one(served), "generic");
  close(tx);
}

}  // namespace

int main(int argc, char** argv) {
  return sstest::netns_test_main(argc, argv, "xdp_ring_tests", "ssxdp");
}
