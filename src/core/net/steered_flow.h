// The provider's flow (prov/steering.h) for a socket's address and port.
#pragma once
#include <cstring>

#include "core/net/netlink_addr.h"
#include "core/prov/steering.h"

namespace ss::net {

inline prov::SteeredFlow steered_flow(uint8_t proto, const IpAddr& ip, uint16_t port) {
  prov::SteeredFlow f;
  f.proto = proto;
  f.family = ip.family;
  std::memcpy(f.ip, ip.bytes, ip.size());
  f.port = port;
  return f;
}

}  // namespace ss::net
