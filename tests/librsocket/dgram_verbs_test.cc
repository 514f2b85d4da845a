// Datagram rsockets over verbs (SLIPSTREAM_PROVIDER=verbs): upstream's
// UDP-assisted QPN exchange, then UD SENDs, on the Soft-RoCE guest's rxe0
// (RS_CONFORMANCE_VERBS_ADDR4/6; check-rxe's `*verbs*` conformance step
// runs these, and its siw step the iWARP case). Without a device every
// case is skipped with the reason, failed instead when
// RS_CONFORMANCE_REQUIRE has "verbs".
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/common/rxe_counter.h"
#include "tests/common/stderr_capture.h"
#include "tests/librsocket/conformance.h"
#include "tests/librsocket/fork_util.h"

using namespace rsconf;

namespace {

std::string errstr(int e) { return std::to_string(e) + " (" + strerror(e) + ")"; }

bool have_rdma_device() {
  int n = 0;
  ibv_context** list = rdma_get_devices(&n);
  if (list) rdma_free_devices(list);
  return n > 0;
}

class DgramVerbsTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    select_provider("verbs");
    const char* env =
        family() == AF_INET6 ? "RS_CONFORMANCE_VERBS_ADDR6" : "RS_CONFORMANCE_VERBS_ADDR4";
    const char* addr = getenv(env);
    if (!have_rdma_device() || !addr || !*addr) {
      const char* req = getenv("RS_CONFORMANCE_REQUIRE");
      if (req && strstr(req, "verbs")) FAIL() << "required: no RDMA device or " << env;
      GTEST_SKIP() << "no RDMA device or " << env << " (runs in the Soft-RoCE guest)";
    }
    iwarp_ = verbs_is_iwarp(family());
  }
  void TearDown() override { select_provider("tcp"); }
  int family() const { return GetParam(); }

  // A datagram rsocket bound to the device's address, port of its own.
  RFd bound(Addr* name) {
    RFd s(rsocket(family(), SOCK_DGRAM, 0));
    EXPECT_GE(s.get(), 0) << errstr(errno);
    Addr a = loopback(family());  // the verbs address under this provider
    EXPECT_EQ(0, rbind(s, a.sa(), a.len)) << errstr(errno);
    name->len = sizeof name->ss;
    EXPECT_EQ(0, rgetsockname(s, name->sa(), &name->len));
    return s;
  }
  // One datagram into `buf`, waiting up to 10 s; its length, or -1.
  static ssize_t take(int fd, char* buf, size_t len, Addr* from) {
    pollfd p{fd, POLLIN, 0};
    for (int i = 0; i < 100; i++) {
      from->len = sizeof from->ss;
      ssize_t n = rrecvfrom(fd, buf, len, MSG_DONTWAIT, from->sa(), &from->len);
      if (n >= 0 || errno != EAGAIN) return n;
      rpoll(&p, 1, 100);
    }
    return -1;
  }
  // A kernel UDP socket on the device's address (its name in *name), the
  // stand-in for a peer speaking upstream's exchange by hand.
  KFd raw_peer(Addr* name) {
    KFd raw(::socket(family(), SOCK_DGRAM, 0));
    Addr a = loopback(family());
    EXPECT_EQ(0, ::bind(raw, a.sa(), a.len)) << errstr(errno);
    name->len = sizeof name->ss;
    EXPECT_EQ(0, ::getsockname(raw, name->sa(), &name->len));
    return raw;
  }
  // Upstream's UDP-socket header into `h` (28 bytes of room): op `op`,
  // QPN 0xabcdef, `from`'s address; its length.
  size_t udp_header(uint8_t* h, uint8_t op, const Addr& from) {
    const bool v6 = family() == AF_INET6;
    const uint8_t head[12] = {
        0x55, 0x55, 0x55, 0x55, uint8_t(v6 ? 6 : 4), op, uint8_t(v6 ? 28 : 16), 0,
        0x00, 0xab, 0xcd, 0xef};
    memcpy(h, head, sizeof head);
    if (v6)
      memcpy(h + 12, &reinterpret_cast<const sockaddr_in6*>(&from.ss)->sin6_addr, 16);
    else
      memcpy(h + 12, &reinterpret_cast<const sockaddr_in*>(&from.ss)->sin_addr, 4);
    return v6 ? 28 : 16;
  }
  bool iwarp_ = false;
};

// The first datagram each way goes over UDP behind upstream's header, the
// answer teaches the sender the receiver's QPN, and from then on the
// datagrams are UD SENDs: the kernel's UDP (which rxe's own packets do
// not pass through) sends at most a few of the 100.
// The kernel's UDP OutDatagrams of a family (/proc/net/snmp, snmp6);
// -1 when unreadable.
long kernel_udp_out(int family) {
  std::ifstream f(family == AF_INET6 ? "/proc/net/snmp6" : "/proc/net/snmp");
  std::string line, keys;
  while (std::getline(f, line)) {
    if (family == AF_INET6) {
      if (line.rfind("Udp6OutDatagrams", 0) == 0) return std::stol(line.substr(16));
      continue;
    }
    if (line.rfind("Udp: ", 0) != 0) continue;
    if (keys.empty()) {
      keys = line;
      continue;
    }
    size_t col = 0, pos = 0;
    for (size_t k = keys.find("OutDatagrams"), i = 0; i < k; i++) col += keys[i] == ' ';
    for (size_t i = 0; i < col; i++) pos = line.find(' ', pos) + 1;
    return std::stol(line.substr(pos));
  }
  return -1;
}

TEST_P(DgramVerbsTest, ExchangeThenUdSends) {
  if (iwarp_) GTEST_SKIP() << "iWARP: no unreliable datagrams (OnIwarpEopnotsupp)";
  Addr an, bn, from;
  RFd a = bound(&an), b = bound(&bn);
  char buf[2048];
  ASSERT_EQ(5, rsendto(a, "first", 5, 0, bn.sa(), bn.len)) << errstr(errno);
  ASSERT_EQ(5, take(b, buf, sizeof buf, &from)) << errstr(errno);
  EXPECT_EQ(0, memcmp(buf, "first", 5));
  EXPECT_TRUE(same_endpoint(from, an)) << from.str() << " vs " << an.str();
  const long sent0 = rxe_counter("sent_pkts");
  const long udp0 = kernel_udp_out(family());
  for (int i = 0; i < 50; i++) {
    std::string ping = "ping " + std::to_string(i), pong = "pong " + std::to_string(i);
    ASSERT_EQ(ssize_t(pong.size()), rsendto(b, pong.data(), pong.size(), 0, from.sa(), from.len))
        << errstr(errno);
    Addr f2;
    ASSERT_EQ(ssize_t(pong.size()), take(a, buf, sizeof buf, &f2)) << i << " " << errstr(errno);
    EXPECT_EQ(pong, std::string(buf, pong.size()));
    EXPECT_TRUE(same_endpoint(f2, bn)) << f2.str() << " vs " << bn.str();
    ASSERT_EQ(ssize_t(ping.size()), rsendto(a, ping.data(), ping.size(), 0, bn.sa(), bn.len));
    ASSERT_EQ(ssize_t(ping.size()), take(b, buf, sizeof buf, &f2)) << i << " " << errstr(errno);
    EXPECT_EQ(ping, std::string(buf, ping.size()));
    EXPECT_TRUE(same_endpoint(f2, an)) << f2.str() << " vs " << an.str();
  }
  const long udp = kernel_udp_out(family()) - udp0;
  std::printf("rxe sent_pkts +%ld, kernel UDP out +%ld for 100 datagrams\n",
              rxe_counter("sent_pkts") - sent0, udp);
  ASSERT_GE(udp0, 0) << "no kernel UDP counters";
  EXPECT_LE(udp, 10) << "the datagrams went over the kernel's UDP, not UD";
}

TEST_P(DgramVerbsTest, ConnectedSendAndTheMtu) {
  if (iwarp_) GTEST_SKIP() << "iWARP: no unreliable datagrams (OnIwarpEopnotsupp)";
  Addr an, bn, from;
  RFd a = bound(&an), b = bound(&bn);
  ASSERT_EQ(0, rconnect(a, bn.sa(), bn.len)) << errstr(errno);
  char buf[2048] = {};
  ASSERT_EQ(3, rsend(a, "abc", 3, 0)) << errstr(errno);
  ASSERT_EQ(3, take(b, buf, sizeof buf, &from));
  std::vector<char> big(2041, 'x');  // more than any UD slot holds
  EXPECT_EQ(-1, rsend(a, big.data(), big.size(), 0));
  EXPECT_EQ(EMSGSIZE, errno);
}

// Bad datagrams on the UDP path: dropped and counted, nothing of them
// delivered; a good one behind them (a QPN for nobody) is delivered, and
// answered with upstream's control header carrying our QPN.
TEST_P(DgramVerbsTest, HostileExchangeHeaders) {
  if (iwarp_) GTEST_SKIP() << "iWARP: no unreliable datagrams (OnIwarpEopnotsupp)";
  Addr bn, rn, from;
  RFd b = bound(&bn);
  KFd raw = raw_peer(&rn);
  const bool v6 = family() == AF_INET6;
  uint8_t good[28 + 2];
  const size_t hl = udp_header(good, 0, rn);
  memcpy(good + hl, "ok", 2);
  std::vector<std::vector<uint8_t>> bad;
  bad.emplace_back(good, good + hl + 2);
  memcpy(bad.back().data(), "SSDG", 4);  // wrong tag
  bad.emplace_back(good, good + 10);     // short
  bad.emplace_back(good, good + hl + 2);
  bad.back()[4] = 5;  // no such version
  bad.emplace_back(good, good + hl + 2);
  bad.back()[4] = v6 ? 4 : 6;  // the other family's version
  ss_dgram_drops d0{}, d1{};
  socklen_t dl = sizeof d0;
  ASSERT_EQ(0, rgetsockopt(b, SOL_RDMA, SS_DGRAM_DROPS, &d0, &dl));
  for (auto& v : bad)
    ASSERT_EQ(ssize_t(v.size()), ::sendto(raw, v.data(), v.size(), 0, bn.sa(), bn.len));
  ASSERT_EQ(ssize_t(hl + 2), ::sendto(raw, good, hl + 2, 0, bn.sa(), bn.len));
  char buf[64];
  ASSERT_EQ(2, take(b, buf, sizeof buf, &from)) << errstr(errno);
  EXPECT_EQ(0, memcmp(buf, "ok", 2));
  EXPECT_TRUE(same_endpoint(from, rn));
  dl = sizeof d1;
  ASSERT_EQ(0, rgetsockopt(b, SOL_RDMA, SS_DGRAM_DROPS, &d1, &dl));
  EXPECT_EQ(d0.malformed + 4, d1.malformed);
  // the answer: a header-only control datagram with b's QPN and address
  uint8_t ctrl[64];
  pollfd p{raw, POLLIN, 0};
  ASSERT_EQ(1, ::poll(&p, 1, 10000));
  ASSERT_EQ(ssize_t(hl), ::recv(raw, ctrl, sizeof ctrl, 0));
  const uint8_t want[8] = {0x55, 0x55, 0x55, 0x55, uint8_t(v6 ? 6 : 4), 7, uint8_t(hl), 0};
  EXPECT_EQ(0, memcmp(ctrl, want, 8));
  EXPECT_EQ(0, ctrl[8]);  // a 24-bit QPN
  // sending back to a QP that is nobody's: accepted, lost as UD loses it
  EXPECT_EQ(2, rsendto(b, "no", 2, 0, rn.sa(), rn.len)) << errstr(errno);
}

// Exchange-only and bad datagrams on the UDP socket are no readiness:
// rpoll takes them off (learning, counting) and waits on. (A readable
// report that the receive answered with EAGAIN made udpong resend its
// login, and the stale second answer then kept udpong resending for ever.)
TEST_P(DgramVerbsTest, ControlHeadersAreNoReadiness) {
  if (iwarp_) GTEST_SKIP() << "iWARP: no unreliable datagrams (OnIwarpEopnotsupp)";
  Addr bn, rn, from;
  RFd b = bound(&bn);
  KFd raw = raw_peer(&rn);
  uint8_t hdr[28 + 2];
  const size_t hl = udp_header(hdr, 7, rn);
  ss_dgram_drops d0{}, d1{};
  socklen_t dl = sizeof d0;
  ASSERT_EQ(0, rgetsockopt(b, SOL_RDMA, SS_DGRAM_DROPS, &d0, &dl));
  ASSERT_EQ(8, ::sendto(raw, "SSDGxxxx", 8, 0, bn.sa(), bn.len));      // another tag
  ASSERT_EQ(ssize_t(hl), ::sendto(raw, hdr, hl, 0, bn.sa(), bn.len));  // control: "my QPN"
  pollfd p{b, POLLIN, 0};
  EXPECT_EQ(0, rpoll(&p, 1, 200)) << "revents " << p.revents;
  dl = sizeof d1;
  ASSERT_EQ(0, rgetsockopt(b, SOL_RDMA, SS_DGRAM_DROPS, &d1, &dl));
  EXPECT_EQ(d0.malformed + 1, d1.malformed) << "rpoll did not take the bad one off";
  char buf[64];
  EXPECT_EQ(-1, rrecvfrom(b, buf, sizeof buf, MSG_DONTWAIT, from.sa(), &from.len));
  EXPECT_EQ(EAGAIN, errno);
  hdr[5] = 0;  // data, behind the same header
  memcpy(hdr + hl, "ok", 2);
  ASSERT_EQ(ssize_t(hl + 2), ::sendto(raw, hdr, hl + 2, 0, bn.sa(), bn.len));
  EXPECT_EQ(1, rpoll(&p, 1, 10000));
  from.len = sizeof from.ss;
  ASSERT_EQ(2, take(b, buf, sizeof buf, &from)) << errstr(errno);
  EXPECT_EQ(0, memcmp(buf, "ok", 2));
}

// Lines of `text` holding `what`.
int count_lines(const std::string& text, const char* what) {
  int n = 0;
  for (size_t at = 0; (at = text.find(what, at)) != std::string::npos; at++) n++;
  return n;
}

// A fork child's inherited datagram rsocket with UD queue pairs: the QPs,
// CQ and receive slots are the parent's (the kernel refuses the device
// files to the child, and rxe's queues are memory both processes map), so
// every call that needs them fails with EOPNOTSUPP, one warning, and
// rclose leaves the parent's socket as it was. A datagram waiting on the
// parent's CQ at the fork is still the parent's; the parent and its peer
// go on over UD. New verbs in the child fail too; SLIPSTREAM_PROVIDER=auto
// serves the child's new datagram rsockets without verbs.
TEST_P(DgramVerbsTest, ForkChildCannotUseInheritedQueuePairs) {
  if (iwarp_) GTEST_SKIP() << "iWARP: no UD queue pairs to inherit (OnIwarpEopnotsupp)";
  Addr an, bn, from;
  RFd a = bound(&an), b = bound(&bn);
  char buf[2048];
  for (int i = 0; i < 3; i++) {  // both ways, until both know the other's QPN
    ASSERT_EQ(1, rsendto(a, "p", 1, 0, bn.sa(), bn.len)) << errstr(errno);
    ASSERT_EQ(1, take(b, buf, sizeof buf, &from)) << errstr(errno);
    ASSERT_EQ(1, rsendto(b, "q", 1, 0, an.sa(), an.len)) << errstr(errno);
    ASSERT_EQ(1, take(a, buf, sizeof buf, &from)) << errstr(errno);
  }
  ASSERT_EQ(6, rsendto(b, "queued", 6, 0, an.sa(), an.len)) << errstr(errno);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // on a's CQ, not yet polled
  const int fd = a, fam = family();
  Reaper child{fork_child([&] {
    const int out = dup(STDERR_FILENO);  // what failed goes there, past the capture
    sstest::StderrCapture err;
    int first = 0;
    auto expect = [&](bool ok, int code, const char* what, ssize_t rc) {
      if (ok) return;
      dprintf(out, "child: %s: got %zd, %s\n", what, rc, strerror(errno));
      if (!first) first = code;
    };
    auto fails = [](ssize_t rc) { return rc == -1 && errno == EOPNOTSUPP; };
    char cb[64];
    Addr f;
    f.len = sizeof f.ss;
    ssize_t r = rrecvfrom(fd, cb, sizeof cb, MSG_DONTWAIT, f.sa(), &f.len);
    expect(fails(r), 30, "rrecvfrom(MSG_DONTWAIT)", r);
    struct sigaction wake {
    }, was{};
    wake.sa_handler = [](int) {};  // no SA_RESTART: a receive that hangs returns EINTR
    sigaction(SIGALRM, &wake, &was);
    alarm(3);
    r = rrecvfrom(fd, cb, sizeof cb, 0, f.sa(), &f.len);
    expect(fails(r), 31, "rrecvfrom (blocking)", r);
    sigaction(SIGALRM, &was, nullptr);
    alarm(kChildSeconds);
    r = rsendto(fd, "c", 1, 0, bn.sa(), bn.len);
    expect(fails(r), 32, "rsendto", r);
    pollfd p{fd, POLLIN, 0};
    r = rpoll(&p, 1, 2000);
    expect(r == 1 && (p.revents & POLLERR), 33, "rpoll POLLERR", r);
    int e = 0;
    socklen_t el = sizeof e;
    r = rgetsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el);
    expect(r == 0 && e == EOPNOTSUPP, 34, "SO_ERROR", e);
    // the kernel socket is the parent's too: its destination stays unset
    r = rconnect(fd, bn.sa(), bn.len);
    expect(fails(r), 35, "rconnect", r);
    r = rclose(fd);
    expect(r == 0, 36, "rclose", r);
    int n = rsocket(fam, SOCK_DGRAM, 0);  // verbs of its own
    expect(n >= 0, 37, "rsocket", n);
    r = rsendto(n, "d", 1, 0, bn.sa(), bn.len);
    expect(fails(r), 38, "a new socket's rsendto", r);
    r = rclose(n);
    expect(r == 0, 39, "a new socket's rclose", r);
    select_provider("auto");
    Addr self = loopback(fam), sn;
    sn.len = sizeof sn.ss;
    int s = rsocket(fam, SOCK_DGRAM, 0), t = rsocket(fam, SOCK_DGRAM, 0);
    r = s < 0 || t < 0 || rbind(s, self.sa(), self.len) || rgetsockname(s, sn.sa(), &sn.len);
    expect(r == 0, 40, "auto: rsocket, rbind", r);
    r = rsendto(t, "e", 1, 0, sn.sa(), sn.len);
    expect(r == 1, 41, "auto: rsendto", r);
    r = take(s, cb, sizeof cb, &f);
    expect(r == 1, 41, "auto: receive", r);
    r = rclose(s) || rclose(t);
    expect(r == 0, 42, "auto: rclose", r);
    const std::string text = err.text();
    dprintf(out, "%s", text.c_str());
    r = count_lines(text, "inherited verbs");
    expect(r == 1, 43, "warnings on the inherited socket", r);
    r = count_lines(text, "unavailable in this fork child");
    expect(r == 1, 44, "warnings on new verbs", r);
    return first;
  })};
  ASSERT_GT(child.pid, 0);
  ASSERT_EQ("", wait_child(&child, 30));
  ASSERT_EQ(6, take(a, buf, sizeof buf, &from))
      << "the datagram queued at the fork: " << errstr(errno);
  EXPECT_EQ(0, memcmp(buf, "queued", 6));
  pollfd p{a, POLLIN, 0};
  EXPECT_EQ(0, rpoll(&p, 1, 200)) << "revents " << p.revents << ": the child's rclose shut it";
  Addr peer;
  peer.len = sizeof peer.ss;
  EXPECT_EQ(-1, rgetpeername(a, peer.sa(), &peer.len)) << "the child's rconnect reached it";
  const long udp0 = kernel_udp_out(family());
  for (int i = 0; i < 20; i++) {
    std::string ping = "ping " + std::to_string(i);
    ASSERT_EQ(ssize_t(ping.size()), rsendto(a, ping.data(), ping.size(), 0, bn.sa(), bn.len))
        << errstr(errno);
    ASSERT_EQ(ssize_t(ping.size()), take(b, buf, sizeof buf, &from)) << i << " " << errstr(errno);
    EXPECT_EQ(ping, std::string(buf, ping.size()));
    ASSERT_EQ(ssize_t(ping.size()), rsendto(b, ping.data(), ping.size(), 0, an.sa(), an.len));
    ASSERT_EQ(ssize_t(ping.size()), take(a, buf, sizeof buf, &from)) << i << " " << errstr(errno);
    EXPECT_EQ(ping, std::string(buf, ping.size()));
  }
  EXPECT_LE(kernel_udp_out(family()) - udp0, 4) << "no longer over UD";
}

TEST_P(DgramVerbsTest, OnIwarpEopnotsupp) {
  if (!iwarp_) GTEST_SKIP() << "not an iWARP device (the siw0 step runs this)";
  Addr an, bn;
  RFd a = bound(&an), b = bound(&bn);
  EXPECT_EQ(-1, rconnect(a, bn.sa(), bn.len));
  EXPECT_EQ(EOPNOTSUPP, errno);
  EXPECT_EQ(-1, rsendto(b, "x", 1, 0, an.sa(), an.len));
  EXPECT_EQ(EOPNOTSUPP, errno);
}

INSTANTIATE_TEST_SUITE_P(Datagrams, DgramVerbsTest, ::testing::Values(AF_INET, AF_INET6),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return std::string(i.param == AF_INET6 ? "verbs_v6" : "verbs_v4");
                         });

}  // namespace
