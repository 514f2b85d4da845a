// An IPv4 or IPv6 address as rtnetlink carries it (4 or 16 bytes, network
// order): the key of core/net's route, neighbour and address tables.
#pragma once
#include "core/base/api.h"
#include <netinet/in.h>
#include <sys/socket.h>

#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace ss::net {

struct IpAddr {
  sa_family_t family = AF_UNSPEC;
  uint8_t bytes[16] = {};

  static IpAddr v4(in_addr a) {
    IpAddr r;
    r.family = AF_INET;
    std::memcpy(r.bytes, &a, 4);
    return r;
  }
  static IpAddr v6(const in6_addr& a) {
    IpAddr r;
    r.family = AF_INET6;
    std::memcpy(r.bytes, &a, 16);
    return r;
  }
  // From text ("10.0.0.1", "fd00::1"); family AF_UNSPEC when it is neither.
  SS_API static IpAddr parse(const char* text);
  // From `len` raw bytes of `family` (a netlink attribute); AF_UNSPEC when
  // the length does not fit the family.
  static IpAddr raw(int family, const void* p, size_t len);

  size_t size() const { return family == AF_INET ? 4 : family == AF_INET6 ? 16 : 0; }
  bool empty() const { return family == AF_UNSPEC; }
  SS_API std::string str() const;
  // A sockaddr_in or sockaddr_in6 with `port` (host order) and, for v6,
  // `scope` (the interface of a link-local address).
  SS_API socklen_t to_sockaddr(uint16_t port, uint32_t scope, sockaddr_storage* out) const;

  friend bool operator==(const IpAddr& a, const IpAddr& b) {
    return a.family == b.family && std::memcmp(a.bytes, b.bytes, sizeof a.bytes) == 0;
  }
  friend std::strong_ordering operator<=>(const IpAddr& a, const IpAddr& b) {
    if (a.family != b.family) return a.family <=> b.family;
    const int c = std::memcmp(a.bytes, b.bytes, sizeof a.bytes);
    return c <=> 0;
  }
};

}  // namespace ss::net
