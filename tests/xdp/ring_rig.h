// The xdp provider's rings on every rx queue of xa (a NetnsPair's "a"
// end) with what core/net puts over them: the steering, NetlinkView and
// its resolver, the send path (FrameTx), the UDP stack that reads the
// rings and the UDP sender; a subclass's TCP stack takes the TCP
// segments (make_tcp). The fixture of udp_ring_tests and tcp_ring_tests.
#pragma once
#include <gtest/gtest.h>
#include <net/if.h>
#include <poll.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/mem/pool.h"
#include "core/net/frame_tx.h"
#include "core/net/netlink_view.h"
#include "core/net/udp_route.h"
#include "core/net/udp_stack.h"
#include "core/net/udp_tx.h"
#include "core/prov/registry.h"
#include "core/prov/ring.h"
#include "core/prov/xdp/xdp_device.h"
#include "core/prov/xdp/xdp_steering.h"
#include "tests/common/netns_pair.h"

namespace sstest {

class RingRig : public ::testing::Test {
 protected:
  static constexpr int kFrames = 2048;                     // per queue's pool
  static constexpr auto kWait = std::chrono::seconds(10);  // a bound on waiting, not a check
  struct Queue {
    std::unique_ptr<ss::mem::Pool> pool;
    std::unique_ptr<ss::prov::RingQueue> queue;
  };

  // The rings on every rx queue of xa, each fill ring given `fill`
  // frames; namespaces named PREFIX-a/b-PID; the pair's MTU mtu (0: veth's).
  void start(const char* prefix, uint32_t fill, unsigned mtu = 0) {
    namespace xdp = ss::prov::xdp;
    ns_ = std::make_unique<NetnsPair>(prefix);
    ASSERT_EQ(ns_->error(), "");
    if (mtu) {
      const std::string m = " mtu " + std::to_string(mtu);
      ASSERT_EQ(run(std::string("ip link set ") + NetnsPair::kIfA + m), 0);
      ASSERT_EQ(run("ip -n " + ns_->name_b() + " link set " + NetnsPair::kIfB + m), 0);
    }
    const ss::prov::Descriptor* d = ss::prov::find_provider("xdp", ss::prov::Family::kRing);
    ASSERT_TRUE(d && d->ring);
    const int nq = xdp::rx_queue_count(NetnsPair::kIfA);
    ASSERT_GT(nq, 0);
    ss::net::UdpStack::Config cfg;
    queues_.resize(static_cast<size_t>(nq));
    for (int q = 0; q < nq; q++) {
      Queue& s = queues_[static_cast<size_t>(q)];
      ss::mem::PoolOptions opt;
      opt.frame_size = 2048;
      opt.frames_per_chunk = kFrames;
      opt.backing = ss::mem::Backing::kShared;  // a fork child may join the queue
      ASSERT_EQ(ss::mem::Pool::create(opt, &s.pool), 0);
      ss::prov::RingQueueConfig rc;
      rc.pool = s.pool.get();
      rc.ifname = NetnsPair::kIfA;
      rc.queue_id = static_cast<uint32_t>(q);
      rc.fill_size = 1024;  // fewer than the pool's frames: the rest serve tx
      rc.rx_size = rc.tx_size = rc.completion_size = 512;
      const int err = d->ring->create(rc, &s.queue);
      ASSERT_EQ(err, 0) << strerror(-err);
      cfg.rings.push_back({s.queue.get(), s.pool.get()});
    }
    steering_ = std::make_unique<xdp::XdpSteering>(xdp::Device::find(NetnsPair::kIfA));
    cfg.steering = steering_.get();
    cfg.ifindex = static_cast<int>(if_nametoindex(NetnsPair::kIfA));
    cfg.initial_fill = fill;
    ASSERT_EQ(ss::net::NetlinkView::open({}, &view_), 0);
    resolver_ = std::make_unique<ss::net::NetlinkTxResolver>(view_.get(), cfg.ifindex);
    frames_ = std::make_unique<ss::net::FrameTx>(cfg.rings.front().queue, cfg.rings.front().pool);
    cfg.tcp = make_tcp();
    ASSERT_EQ(ss::net::UdpStack::create(cfg, &stack_), 0);
    tx_ = std::make_unique<ss::net::UdpTx>(stack_.get(), resolver_.get(), frames_.get());
  }
  // The TCP stack for the rings' TCP segments (none: they are lost).
  virtual ss::net::SegmentInput* make_tcp() { return nullptr; }
  // Its end, after the UDP stack's and before the send path's.
  virtual void drop_tcp() {}
  void TearDown() override {
    tx_.reset();
    stack_.reset();
    drop_tcp();
    frames_.reset();
    resolver_.reset();
    view_.reset();
    steering_.reset();
    queues_.clear();  // each queue before its pool (member order)
    if (ns_) {
      const std::string a = ns_->name_a(), b = ns_->name_b();
      ns_.reset();
      EXPECT_FALSE(netns_exists(a));
      EXPECT_FALSE(netns_exists(b));
    }
  }

  // Waits (up to timeout_ms) until the rings' descriptors are readable.
  void wait_rings(int timeout_ms = 100) {
    std::vector<pollfd> fds;
    for (auto& q : queues_) {
      short ev = 0;
      const int fd = q.queue->poll_fd(ss::prov::Ring::kRx, &ev);
      if (fd >= 0) fds.push_back({fd, ev, 0});
    }
    poll(fds.data(), fds.size(), timeout_ms);
  }
  uint64_t redirected() {
    ss::prov::xdp::Counters c;
    EXPECT_EQ(ss::prov::xdp::counters(NetnsPair::kIfA, &c), 0);
    return c.redirected;
  }
  uint64_t no_fill_drops() {
    uint64_t n = 0;
    for (auto& q : queues_) n += q.queue->stats().rx_dropped_no_fill;
    return n;
  }
  // Applies the view's change events for up to kWait, or until done().
  template <typename F>
  void follow_kernel(F done) {
    const auto end = std::chrono::steady_clock::now() + kWait;
    while (!done() && std::chrono::steady_clock::now() < end) {
      pollfd p{view_->fd(), POLLIN, 0};
      if (poll(&p, 1, 100) == 1) {
        ASSERT_EQ(view_->process_events(), 0);
      }
    }
  }

  std::unique_ptr<NetnsPair> ns_;
  std::vector<Queue> queues_;
  std::unique_ptr<ss::prov::xdp::XdpSteering> steering_;
  std::unique_ptr<ss::net::NetlinkView> view_;
  std::unique_ptr<ss::net::NetlinkTxResolver> resolver_;
  std::unique_ptr<ss::net::FrameTx> frames_;
  std::unique_ptr<ss::net::UdpStack> stack_;
  std::unique_ptr<ss::net::UdpTx> tx_;
};

}  // namespace sstest
