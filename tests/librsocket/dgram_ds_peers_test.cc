// The UDP-assisted QPN exchange's table (dgram_ds_peers.h): what a data or
// control header from a source asks for, learning and relearning, and a
// flood of forged sources that cannot grow it.
#include "librsocket/dgram_ds_peers.h"

#include <gtest/gtest.h>

#include <cstring>

#include "tests/librsocket/conformance.h"

namespace ss::rs {
namespace {

using rsconf::v4;
using rsconf::v6;

const sockaddr* sa(const void* p) { return static_cast<const sockaddr*>(p); }

DsUdpInfo info(uint8_t op, uint32_t qpn, const char* qp_ip) {
  DsUdpInfo i{};
  i.op = op;
  i.length = kDsUdpLen4;
  i.qpn = qpn;
  auto a = v4(qp_ip, 0);
  std::memcpy(&i.qp_addr, &a, sizeof a);
  return i;
}

TEST(DsPeers, DataIsDeliveredAnsweredAndLearned) {
  DsPeers t;
  auto src = v4("192.168.77.2", 7174);
  auto a = t.on_udp_header(sa(&src), info(kDsOpData, 0x11, "192.168.77.2"));
  EXPECT_TRUE(a.deliver);
  EXPECT_TRUE(a.reply_ctrl);
  EXPECT_TRUE(a.learned);
  DsPeer* p = t.find(sa(&src));
  ASSERT_NE(nullptr, p);
  EXPECT_EQ(0x11u, p->qpn);
  p->ah = &t;  // the owner made one
  // the same QP again: nothing new to make, still delivered and answered
  a = t.on_udp_header(sa(&src), info(kDsOpData, 0x11, "192.168.77.2"));
  EXPECT_TRUE(a.deliver && a.reply_ctrl);
  EXPECT_FALSE(a.learned);
  EXPECT_EQ(&t, t.find(sa(&src))->ah);
}

TEST(DsPeers, ControlIsLearnedOnly) {
  DsPeers t;
  auto src = v4("192.168.77.2", 7174);
  auto a = t.on_udp_header(sa(&src), info(kDsOpCtrl, 0x22, "192.168.77.2"));
  EXPECT_FALSE(a.deliver);
  EXPECT_FALSE(a.reply_ctrl);  // never answered: no ping-pong
  EXPECT_TRUE(a.learned);
  a = t.on_udp_header(sa(&src), info(kDsOpCtrl, 0x22, "192.168.77.2"));
  EXPECT_FALSE(a.learned);
}

TEST(DsPeers, AChangedQpIsRelearned) {
  DsPeers t;
  auto src = v4("192.168.77.2", 7174);
  t.on_udp_header(sa(&src), info(kDsOpCtrl, 0x22, "192.168.77.2"));
  t.find(sa(&src))->ah = &t;
  // the peer restarted (new QPN), or moved its QP to another address
  EXPECT_TRUE(t.on_udp_header(sa(&src), info(kDsOpCtrl, 0x23, "192.168.77.2")).learned);
  EXPECT_EQ(nullptr, t.find(sa(&src))->ah);
  EXPECT_EQ(0x23u, t.find(sa(&src))->qpn);
  EXPECT_TRUE(t.on_udp_header(sa(&src), info(kDsOpCtrl, 0x23, "192.168.78.2")).learned);
  EXPECT_EQ(1u, t.size());
}

TEST(DsPeers, PortsAndMappedAddressesAreOneKey) {
  DsPeers t;
  auto src = v4("192.168.77.2", 7174);
  auto mapped = v6("::ffff:192.168.77.2", 7174);
  auto other_port = v4("192.168.77.2", 7175);
  t.on_udp_header(sa(&src), info(kDsOpCtrl, 0x22, "192.168.77.2"));
  EXPECT_NE(nullptr, t.find(sa(&mapped)));  // an IPv6 socket names it so
  EXPECT_EQ(nullptr, t.find(sa(&other_port)));
  auto six = v6("fd00:77::2", 7174);
  EXPECT_EQ(nullptr, t.find(sa(&six)));
}

TEST(DsPeers, AFloodOfSourcesEvictsTheOldest) {
  DsPeers t(64);
  for (int i = 0; i < 1000; i++) {
    auto src = v4("10.0.0.1", static_cast<uint16_t>(1000 + i));
    t.on_udp_header(sa(&src), info(kDsOpCtrl, static_cast<uint32_t>(i), "10.0.0.1"));
  }
  EXPECT_EQ(64u, t.size());
  auto first = v4("10.0.0.1", 1000), last = v4("10.0.0.1", 1999);
  EXPECT_EQ(nullptr, t.find(sa(&first)));
  ASSERT_NE(nullptr, t.find(sa(&last)));
  EXPECT_EQ(999u, t.find(sa(&last))->qpn);
}

}  // namespace
}  // namespace ss::rs
