// NetlinkView against the kernel, IPv4 and IPv6, inside namespace "a" of a
// veth pair (tests/common/netns_pair.h): route answers (on-link, via a
// gateway, local, no route, unreachable/prohibit/blackhole, policy rules on
// source and port), a next hop resolved through the kernel both ways,
// and changes made with ip(8) afterwards seen through the subscription
// (routes, neighbours, MTU, addresses, lost events). Needs root: without
// it the binary exits 77 (skipped) and says why. Waiting polls the view's
// fd up to a generous bound and then checks the end state: nothing here
// depends on how long the kernel takes.
#include <gtest/gtest.h>
#include <linux/neighbour.h>
#include <net/if.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "core/net/netlink_view.h"
#include "tests/common/netns_pair.h"

namespace {

using ss::net::Flow;
using ss::net::IpAddr;
using ss::net::Link;
using ss::net::Neighbour;
using ss::net::NeighState;
using ss::net::NetlinkView;
using ss::net::Route;
using ss::net::RouteType;
using sstest::NetnsPair;

constexpr auto kWait = std::chrono::seconds(20);  // a bound on waiting, not a check
constexpr uint16_t kPort = 9000, kRulePort = 7777;

// The addresses one family's cases use.
struct Family {
  const char* name;
  const char* ip;  // "ip" or "ip -6"
  const char* a;   // ours (namespace a)
  const char* b;   // the peer's
  const char* gw_net;
  const char* gw_dst;    // in gw_net
  const char* no_route;  // in no table
  const char* unreach_net;
  const char* unreach_dst;
  const char* prohibit_net;
  const char* prohibit_dst;
  const char* blackhole_net;
  const char* blackhole_dst;
  const char* extra;  // a further address of ours
};

const Family kV4 = {"v4",        "ip",           NetnsPair::kIpA, NetnsPair::kIpB, "10.77.0.0/16",
                    "10.77.0.5", "10.250.0.1",   "10.9.0.0/16",   "10.9.0.1",      "10.10.0.0/16",
                    "10.10.0.1", "10.11.0.0/16", "10.11.0.1",     "10.199.0.9"};
const Family kV6 = {"v6",           "ip -6",        NetnsPair::kIp6A, NetnsPair::kIp6B,
                    "fd00:77::/64", "fd00:77::5",   "fd00:250::1",    "fd00:9::/64",
                    "fd00:9::1",    "fd00:10::/64", "fd00:10::1",     "fd00:11::/64",
                    "fd00:11::1",   "fd00:199::9"};

void PrintTo(const Family& f, std::ostream* os) { *os << f.name; }

IpAddr ip(const char* text) { return IpAddr::parse(text); }

Flow to(const char* dst, uint16_t dport = kPort, const char* src = nullptr) {
  Flow f;
  f.dst = ip(dst);
  if (src) f.src = ip(src);
  f.dport = dport;
  return f;
}

class NetlinkViewTest : public ::testing::TestWithParam<Family> {
 protected:
  void SetUp() override {
    ns_ = std::make_unique<NetnsPair>("ssnet");
    ASSERT_EQ(ns_->error(), "");
    ifindex_ = static_cast<int>(if_nametoindex(NetnsPair::kIfA));
    ASSERT_GT(ifindex_, 0);
    ASSERT_EQ(NetlinkView::open({}, &view_), 0);
  }
  void TearDown() override {
    view_.reset();
    ns_.reset();  // always: the namespaces and the veth go
  }

  const Family& fam() const { return GetParam(); }
  // Runs `ip` (of the case's family) in namespace a.
  void ip_a(const std::string& args) {
    const std::string cmd = std::string(fam().ip) + " -n " + ns_->name_a() + " " + args;
    ASSERT_EQ(sstest::run(cmd), 0) << cmd;
  }
  // Applies events until done() holds or the bound passes: done()'s last word.
  template <class Done>
  bool settle(Done done) {
    const auto end = std::chrono::steady_clock::now() + kWait;
    while (!done()) {
      if (std::chrono::steady_clock::now() > end) return false;
      pollfd p{view_->fd(), POLLIN, 0};
      poll(&p, 1, 100);
      EXPECT_EQ(view_->process_events(), 0);
    }
    return true;
  }
  int route(const Flow& f, Route* r = nullptr) {
    Route scratch;
    return view_->route(f, r ? r : &scratch);
  }
  Neighbour neighbour(const char* hop) {
    Neighbour n;
    EXPECT_EQ(view_->neighbour(ifindex_, ip(hop), &n), 0);
    return n;
  }
  // Asks until the next hop is ready (a resolution runs meanwhile).
  bool resolved(const char* hop, Neighbour* n) {
    return settle([&] { return (*n = neighbour(hop)).state == NeighState::kReady; });
  }

  // b, unknown at first, resolves to b's MAC; the kernel was asked
  // (again after a failure, perhaps) the one way only.
  void expect_b_resolved(bool by_netlink) {
    uint8_t mac_b[6];
    ASSERT_TRUE(ns_->mac_b(mac_b));
    // Nothing was sent to b yet: the kernel has no entry.
    EXPECT_EQ(neighbour(fam().b).state, NeighState::kPending);
    Neighbour n;
    ASSERT_TRUE(resolved(fam().b, &n));
    EXPECT_EQ(memcmp(n.mac, mac_b, 6), 0);
    const NetlinkView::Counters c = view_->counters();
    EXPECT_GE(by_netlink ? c.resolve_netlink : c.resolve_datagram, 1u);
    EXPECT_EQ(by_netlink ? c.resolve_datagram : c.resolve_netlink, 0u);
  }

  std::unique_ptr<NetnsPair> ns_;
  std::unique_ptr<NetlinkView> view_;
  int ifindex_ = 0;
};

TEST_P(NetlinkViewTest, RouteToThePeerIsOnLinkFromOurAddress) {
  Route r;
  ASSERT_EQ(route(to(fam().b), &r), 0);
  EXPECT_EQ(r.type, RouteType::kUnicast);
  EXPECT_EQ(r.ifindex, ifindex_);
  EXPECT_TRUE(r.gateway.empty()) << r.gateway.str();
  EXPECT_EQ(r.next_hop(to(fam().b)), ip(fam().b));
  EXPECT_EQ(r.prefsrc, ip(fam().a)) << r.prefsrc.str();
  EXPECT_EQ(r.mtu, 1500u);
}

TEST_P(NetlinkViewTest, RouteViaAGatewayNamesIt) {
  ip_a(std::string("route add ") + fam().gw_net + " via " + fam().b);
  Route r;
  ASSERT_EQ(route(to(fam().gw_dst), &r), 0);
  EXPECT_EQ(r.type, RouteType::kUnicast);
  EXPECT_EQ(r.ifindex, ifindex_);
  EXPECT_EQ(r.gateway, ip(fam().b)) << r.gateway.str();
  EXPECT_EQ(r.next_hop(to(fam().gw_dst)), ip(fam().b));
}

TEST_P(NetlinkViewTest, OurOwnAddressIsLocal) {
  Route r;
  ASSERT_EQ(route(to(fam().a), &r), 0);
  EXPECT_EQ(r.type, RouteType::kLocal);
}

TEST_P(NetlinkViewTest, NoRouteIsNetworkUnreachable) {
  EXPECT_EQ(route(to(fam().no_route)), -ENETUNREACH);
  // Answered again from the cache: the same.
  EXPECT_EQ(route(to(fam().no_route)), -ENETUNREACH);
}

TEST_P(NetlinkViewTest, RouteTypesGiveTheKernelsErrno) {
  ip_a(std::string("route add unreachable ") + fam().unreach_net);
  ip_a(std::string("route add prohibit ") + fam().prohibit_net);
  ip_a(std::string("route add blackhole ") + fam().blackhole_net);
  EXPECT_EQ(route(to(fam().unreach_dst)), -EHOSTUNREACH);
  EXPECT_EQ(route(to(fam().prohibit_dst)), -EACCES);
  EXPECT_EQ(route(to(fam().blackhole_dst)), -EINVAL);
}

// A policy rule on source, protocol and port: the flow's keys reach the
// kernel (a lookup by destination alone would miss the rule).
TEST_P(NetlinkViewTest, PolicyRulesSeeSourceAndPort) {
  ip_a("route add unreachable default table 100");
  const uint64_t gen = view_->route_generation();
  ip_a(std::string("rule add from ") + fam().a + " ipproto udp dport " + std::to_string(kRulePort) +
       " lookup 100");
  ASSERT_TRUE(settle([&] { return view_->route_generation() != gen; })) << "rule not seen";
  EXPECT_EQ(route(to(fam().b, kRulePort, fam().a)), -EHOSTUNREACH);
  Route r;
  ASSERT_EQ(route(to(fam().b, kPort, fam().a), &r), 0);
  EXPECT_EQ(r.ifindex, ifindex_);
  ASSERT_EQ(route(to(fam().b, kRulePort), &r), 0);  // unbound: not "from a"
  EXPECT_EQ(r.prefsrc, ip(fam().a));
}

// Without a rule on ports, flows that differ only in their ports share
// one answer (one question to the kernel), also after a route changed;
// once a rule matches on a port, each port is asked on its own.
TEST_P(NetlinkViewTest, PortsKeyTheAnswersOnlyWhileARuleUsesThem) {
  const uint64_t before = view_->counters().route_queries;
  ASSERT_EQ(route(to(fam().b, kPort)), 0);
  ASSERT_EQ(route(to(fam().b, kPort + 1)), 0);
  EXPECT_EQ(view_->counters().route_queries, before + 1);
  uint64_t gen = view_->route_generation();
  ip_a(std::string("route add ") + fam().gw_net + " via " + fam().b);
  ASSERT_TRUE(settle([&] { return view_->route_generation() != gen; })) << "route not seen";
  const uint64_t routed = view_->counters().route_queries;
  ASSERT_EQ(route(to(fam().b, kPort)), 0);
  ASSERT_EQ(route(to(fam().b, kPort + 1)), 0);
  EXPECT_EQ(view_->counters().route_queries, routed + 1) << "a route event keyed ports";
  gen = view_->route_generation();
  ip_a(std::string("rule add ipproto tcp sport ") + std::to_string(kRulePort) + " lookup main");
  ASSERT_TRUE(settle([&] { return view_->route_generation() != gen; })) << "rule not seen";
  const uint64_t asked = view_->counters().route_queries;
  ASSERT_EQ(route(to(fam().b, kPort)), 0);
  ASSERT_EQ(route(to(fam().b, kPort + 1)), 0);
  EXPECT_EQ(view_->counters().route_queries, asked + 2);
}

TEST_P(NetlinkViewTest, RoutesAddedAndDeletedLaterChangeTheAnswer) {
  const Flow f = to(fam().gw_dst);
  ASSERT_EQ(route(f), -ENETUNREACH);  // cached from now on
  ip_a(std::string("route add ") + fam().gw_net + " via " + fam().b);
  Route r;
  ASSERT_TRUE(settle([&] { return route(f, &r) == 0; })) << "route add not seen";
  EXPECT_EQ(r.gateway, ip(fam().b));
  ip_a(std::string("route del ") + fam().gw_net);
  EXPECT_TRUE(settle([&] { return route(f) == -ENETUNREACH; })) << "route del not seen";
}

TEST_P(NetlinkViewTest, NeighbourResolvedByNetlink) { expect_b_resolved(true); }

TEST_P(NetlinkViewTest, NeighbourResolvedByADatagram) {
  view_.reset();
  NetlinkView::Options opts;
  opts.resolve_by_netlink = false;  // as without CAP_NET_ADMIN
  ASSERT_EQ(NetlinkView::open(opts, &view_), 0);
  expect_b_resolved(false);
}

TEST_P(NetlinkViewTest, NeighbourReplacedIsSeen) {
  Neighbour n;
  ASSERT_TRUE(resolved(fam().b, &n));
  const uint8_t other[6] = {0x02, 0, 0, 0, 0, 0x42};
  ip_a(std::string("neigh replace ") + fam().b + " lladdr 02:00:00:00:00:42 dev " +
       NetnsPair::kIfA);
  EXPECT_TRUE(settle([&] {
    n = neighbour(fam().b);
    return n.state == NeighState::kReady && memcmp(n.mac, other, 6) == 0;
  })) << "neigh replace not seen";
  EXPECT_EQ(n.nud, NUD_PERMANENT);
}

TEST_P(NetlinkViewTest, MtuChangeIsSeen) {
  Route r;
  ASSERT_EQ(route(to(fam().b), &r), 0);
  ASSERT_EQ(r.mtu, 1500u);
  ASSERT_EQ(sstest::run("ip -n " + ns_->name_a() + " link set " + NetnsPair::kIfA + " mtu 1400"),
            0);
  Link l;
  EXPECT_TRUE(settle([&] { return view_->link(ifindex_, &l) && l.mtu == 1400; }));
  ASSERT_EQ(route(to(fam().b), &r), 0);
  EXPECT_EQ(r.mtu, 1400u);
}

// Data-path readers on other threads while the owner applies events: every
// answer they get is whole and true for some moment, and the last word wins.
TEST_P(NetlinkViewTest, ReadersRunWhileEventsApply) {
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; t++)
    readers.emplace_back([&] {
      while (!stop.load()) {
        Route r;
        Link l;
        Neighbour n;
        if (view_->route(to(fam().b), &r) != 0 || r.ifindex != ifindex_ || r.mtu < 1280 ||
            !view_->link(ifindex_, &l) || l.name != NetnsPair::kIfA ||
            view_->neighbour(ifindex_, ip(fam().b), &n) != 0)
          bad++;
      }
    });
  for (unsigned mtu : {1450u, 1400u, 1350u, 1300u}) {
    ip_a("link set " + std::string(NetnsPair::kIfA) + " mtu " + std::to_string(mtu));
    Link l;
    EXPECT_TRUE(settle([&] { return view_->link(ifindex_, &l) && l.mtu == mtu; })) << mtu;
  }
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
  Route r;
  ASSERT_EQ(route(to(fam().b), &r), 0);
  EXPECT_EQ(r.mtu, 1300u);
}

TEST_P(NetlinkViewTest, AddressesAddedLaterAreLocal) {
  EXPECT_TRUE(view_->is_local(ip(fam().a)));
  EXPECT_FALSE(view_->is_local(ip(fam().b)));
  EXPECT_FALSE(view_->is_local(ip(fam().extra)));
  ip_a(std::string("addr add ") + fam().extra + " dev " + NetnsPair::kIfA + " nodad");
  EXPECT_TRUE(settle([&] { return view_->is_local(ip(fam().extra)); }));
  const auto all = view_->local_addresses();
  EXPECT_NE(std::find(all.begin(), all.end(), ip(fam().extra)), all.end());
}

INSTANTIATE_TEST_SUITE_P(Families, NetlinkViewTest, ::testing::Values(kV4, kV6),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(NetlinkViewLinks, LinkHasItsNameMacMtuAndFlags) {
  NetnsPair ns("ssnet");
  ASSERT_EQ(ns.error(), "");
  std::unique_ptr<NetlinkView> view;
  ASSERT_EQ(NetlinkView::open({}, &view), 0);
  Link l;
  ASSERT_TRUE(view->link(static_cast<int>(if_nametoindex(NetnsPair::kIfA)), &l));
  EXPECT_EQ(l.name, NetnsPair::kIfA);
  uint8_t mac_a[6];
  ASSERT_TRUE(ns.mac_a(mac_a));
  ASSERT_TRUE(l.has_mac);
  EXPECT_EQ(memcmp(l.mac, mac_a, 6), 0);
  EXPECT_EQ(l.mtu, 1500u);
  EXPECT_TRUE(l.up());
  EXPECT_FALSE(view->link(0, &l));
}

// More events than the subscription socket holds: the kernel drops some
// (ENOBUFS) and the view reads everything again.
TEST(NetlinkViewLinks, LostEventsResync) {
  NetnsPair ns("ssnet");
  ASSERT_EQ(ns.error(), "");
  std::unique_ptr<NetlinkView> view;
  NetlinkView::Options opts;
  opts.event_rcvbuf = 1;  // the kernel's minimum
  ASSERT_EQ(NetlinkView::open(opts, &view), 0);
  const std::string batch = "/tmp/ssnet-batch-" + std::to_string(getpid());
  {
    std::ofstream f(batch);
    for (int i = 1; i <= 100; i++)
      f << "addr add 10.199.1." << i << "/32 dev " << NetnsPair::kIfA << "\n";
  }
  const int rc = sstest::run("ip -n " + ns.name_a() + " -batch " + batch);
  unlink(batch.c_str());
  ASSERT_EQ(rc, 0);
  // Every event was queued (or lost) before this first read.
  ASSERT_EQ(view->process_events(), 0);
  EXPECT_GT(view->counters().resyncs, 0u);
  for (int i = 1; i <= 100; i++) {
    const std::string a = "10.199.1." + std::to_string(i);
    EXPECT_TRUE(view->is_local(ip(a.c_str()))) << a;
  }
}

}  // namespace

int main(int argc, char** argv) {
  return sstest::netns_test_main(argc, argv, "net_netns_tests", "ssnet");
}
