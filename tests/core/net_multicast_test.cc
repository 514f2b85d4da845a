// Multicast facts (core/net/multicast.h): which addresses are groups, the
// Ethernet address of a group (RFC 1112 §6.4, RFC 2464 §7), source filters.
#include <gtest/gtest.h>

#include <cstring>

#include "core/net/multicast.h"

namespace ss::net {
namespace {

IpAddr ip(const char* s) { return IpAddr::parse(s); }

std::string mac_of(const char* group) {
  uint8_t m[6] = {};
  if (!multicast_mac(ip(group), m)) return "none";
  char out[18];
  snprintf(out, sizeof out, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
  return out;
}

TEST(NetMulticast, GroupsAreClassD4AndFf6) {
  EXPECT_TRUE(is_multicast(ip("224.0.0.1")));
  EXPECT_TRUE(is_multicast(ip("239.255.255.255")));
  EXPECT_FALSE(is_multicast(ip("223.255.255.255")));
  EXPECT_FALSE(is_multicast(ip("240.0.0.1")));
  EXPECT_TRUE(is_multicast(ip("ff02::1")));
  EXPECT_FALSE(is_multicast(ip("fe80::1")));
  EXPECT_FALSE(is_multicast(IpAddr{}));
}

TEST(NetMulticast, EthernetAddressOfAGroup) {
  // v4: 01:00:5e, then the low 23 bits (the 24th bit of the group dropped).
  EXPECT_EQ(mac_of("224.0.0.1"), "01:00:5e:00:00:01");
  EXPECT_EQ(mac_of("239.1.2.3"), "01:00:5e:01:02:03");
  EXPECT_EQ(mac_of("239.129.2.3"), "01:00:5e:01:02:03") << "the same 23 bits";
  EXPECT_EQ(mac_of("224.255.254.253"), "01:00:5e:7f:fe:fd");
  // v6: 33:33, then the low 32 bits.
  EXPECT_EQ(mac_of("ff02::1"), "33:33:00:00:00:01");
  EXPECT_EQ(mac_of("ff0e::1:ff12:3456"), "33:33:ff:12:34:56");
  EXPECT_EQ(mac_of("10.0.0.1"), "none");
  EXPECT_EQ(mac_of("fd00::1"), "none");
}

TEST(NetMulticast, SourceFilterIncludeAndExclude) {
  McastFilter any;
  EXPECT_TRUE(any.admits(ip("10.0.0.1")));
  McastFilter inc{true, {ip("10.0.0.1"), ip("10.0.0.2")}};
  EXPECT_TRUE(inc.admits(ip("10.0.0.2")));
  EXPECT_FALSE(inc.admits(ip("10.0.0.3")));
  McastFilter exc{false, {ip("10.0.0.1")}};
  EXPECT_FALSE(exc.admits(ip("10.0.0.1")));
  EXPECT_TRUE(exc.admits(ip("10.0.0.3")));
}

}  // namespace
}  // namespace ss::net
