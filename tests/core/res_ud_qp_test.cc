// The UD queue pair of datagram rsockets (core/prov/verbs/ud_qp.h) on a
// real device: in the Soft-RoCE guest (make check-rxe runs VerbsRes*),
// datagrams between two QPs on rxe0 over IPv4 and IPv6 (address handles
// with a GRH: RoCE carries nothing without one) up to the port's MTU,
// EMSGSIZE beyond (the device's packet counters printed);
// siw0 refuses (iWARP has no UD); an address no device owns is ENODEV. On
// a host without RDMA every case is skipped with the reason.
#include "core/prov/verbs/ud_qp.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/res/verbs_manager.h"
#include "tests/common/rxe_counter.h"

namespace {

using ss::prov::verbs::UdQp;

sockaddr_storage parse(const char* ip) {
  sockaddr_storage s{};
  auto* a4 = reinterpret_cast<sockaddr_in*>(&s);
  auto* a6 = reinterpret_cast<sockaddr_in6*>(&s);
  if (inet_pton(AF_INET, ip, &a4->sin_addr) == 1) {
    a4->sin_family = AF_INET;
  } else if (inet_pton(AF_INET6, ip, &a6->sin6_addr) == 1) {
    a6->sin6_family = AF_INET6;
  }
  return s;
}

const sockaddr* sa(const sockaddr_storage& s) { return reinterpret_cast<const sockaddr*>(&s); }

class VerbsResUd : public ::testing::Test {
 protected:
  void SetUp() override {
    if (ss::res::device_count() <= 0 || !getenv("RXE_IP")) {
      const char* req = getenv("SLIPSTREAM_TEST_REQUIRE_VERBS");
      if (req && *req == '1')
        FAIL() << "no RDMA device or RXE_IP, but SLIPSTREAM_TEST_REQUIRE_VERBS=1";
      GTEST_SKIP() << "no RDMA device on this host (runs in the Soft-RoCE guest: make check-rxe)";
    }
  }

  // The next datagram on `qp` within 5 s (waiting on its event
  // descriptor), copied out and given back; false when none came.
  static bool take(UdQp* qp, std::vector<uint8_t>* out) {
    for (int round = 0; round < 50; round++) {
      const uint8_t* d;
      size_t n;
      if (qp->front(&d, &n) == 0) {
        out->assign(d, d + n);
        qp->pop();
        return true;
      }
      EXPECT_EQ(0, qp->arm());
      if (qp->front(&d, &n) == 0) continue;  // came between the look and the arming
      pollfd p{qp->event_fd(), POLLIN, 0};
      poll(&p, 1, 100);
    }
    return false;
  }

  // Datagrams of every size class from `a` to `b` at `ip`, intact.
  // Two UD QPs have no path but the device: what arrives is the proof.
  // rxe's counters for loopback UD packets moved for one family in one
  // run and for the other in the next, so they are printed, not asserted.
  void exchange(const char* ip) {
    sockaddr_storage addr = parse(ip);
    std::unique_ptr<UdQp> a, b;
    ASSERT_EQ(0, UdQp::create(sa(addr), 16, &a));
    ASSERT_EQ(0, UdQp::create(sa(addr), 16, &b));
    ASSERT_NE(a->qpn(), b->qpn());
    ibv_ah* ah = nullptr;
    ASSERT_EQ(0, a->ah_for(sa(addr), &ah)) << ip;
    ibv_ah* again = nullptr;
    ASSERT_EQ(0, a->ah_for(sa(addr), &again));
    EXPECT_EQ(ah, again);  // resolved once
    const long sent0 = rxe_counter("sent_pkts"), rcvd0 = rxe_counter("rcvd_pkts");
    const char head[8] = {'h', 'e', 'a', 'd', 0, 1, 2, 3};
    const size_t most = a->max_msg() - sizeof head;
    ASSERT_GE(most, 248u);
    for (size_t len : {size_t{0}, size_t{1}, size_t{63}, most / 2, most}) {
      std::vector<uint8_t> payload(len);
      for (size_t i = 0; i < len; i++) payload[i] = static_cast<uint8_t>(i * 7 + len);
      iovec iov{payload.data(), len};
      ASSERT_EQ(0, a->send(ah, b->qpn(), head, sizeof head, &iov, 1)) << len;
      std::vector<uint8_t> got;
      ASSERT_TRUE(take(b.get(), &got)) << "nothing arrived, " << len << " bytes";
      ASSERT_EQ(sizeof head + len, got.size());
      EXPECT_EQ(0, std::memcmp(got.data(), head, sizeof head));
      if (len) {  // (an empty payload's data() may be null: no memcmp)
        EXPECT_EQ(0, std::memcmp(got.data() + sizeof head, payload.data(), len)) << len;
      }
    }
    std::vector<uint8_t> big(most + 1);  // beyond the MTU: refused, not lost
    iovec iov{big.data(), big.size()};
    EXPECT_EQ(-EMSGSIZE, a->send(ah, b->qpn(), head, sizeof head, &iov, 1));
    // more datagrams than either side has slots: sends wait for their
    // completions, receives are re-posted as they are taken
    for (int i = 0; i < 100; i++) {
      uint32_t v = static_cast<uint32_t>(i);
      iovec one{&v, sizeof v};
      int rc;
      for (int tries = 0; (rc = a->send(ah, b->qpn(), "", 0, &one, 1)) == -EAGAIN && tries < 1000;
           tries++)
        poll(nullptr, 0, 1);
      ASSERT_EQ(0, rc) << i;
      std::vector<uint8_t> got;
      ASSERT_TRUE(take(b.get(), &got)) << i;
      ASSERT_EQ(sizeof v, got.size());
      uint32_t back;
      std::memcpy(&back, got.data(), sizeof back);
      EXPECT_EQ(v, back);
    }
    // the device carried them
    std::printf("%s: rxe sent_pkts +%ld, rcvd_pkts +%ld\n", ip, rxe_counter("sent_pkts") - sent0,
                rxe_counter("rcvd_pkts") - rcvd0);
  }
};

TEST_F(VerbsResUd, DatagramsBetweenTwoQpsIpv4) { exchange(getenv("RXE_IP")); }

TEST_F(VerbsResUd, DatagramsBetweenTwoQpsIpv6) {
  const char* ip6 = getenv("RXE_IP6");
  if (!ip6 || !*ip6) GTEST_SKIP() << "no RXE_IP6";
  exchange(ip6);
}

TEST_F(VerbsResUd, IwarpHasNoDatagrams) {
  const char* siw = getenv("SIW_IP");
  if (!siw || !*siw) GTEST_SKIP() << "no siw0 in this guest (SIW_IP empty)";
  sockaddr_storage addr = parse(siw);
  std::unique_ptr<UdQp> qp;
  EXPECT_EQ(-EOPNOTSUPP, UdQp::create(sa(addr), 16, &qp));
  EXPECT_EQ(nullptr, qp);
}

TEST_F(VerbsResUd, AnAddressNoDeviceOwnsIsEnodev) {
  sockaddr_storage addr = parse("127.0.0.1");
  std::unique_ptr<UdQp> qp;
  EXPECT_EQ(-ENODEV, UdQp::create(sa(addr), 16, &qp));
}

}  // namespace
