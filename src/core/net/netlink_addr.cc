#include "core/net/netlink_addr.h"

#include <arpa/inet.h>

namespace ss::net {

IpAddr IpAddr::parse(const char* text) {
  in_addr a4;
  in6_addr a6;
  if (inet_pton(AF_INET, text, &a4) == 1) return v4(a4);
  if (inet_pton(AF_INET6, text, &a6) == 1) return v6(a6);
  return {};
}

IpAddr IpAddr::raw(int family, const void* p, size_t len) {
  IpAddr r;
  if ((family == AF_INET && len == 4) || (family == AF_INET6 && len == 16)) {
    r.family = static_cast<sa_family_t>(family);
    std::memcpy(r.bytes, p, len);
  }
  return r;
}

std::string IpAddr::str() const {
  char buf[INET6_ADDRSTRLEN] = "-";
  if (!empty()) inet_ntop(family, bytes, buf, sizeof buf);
  return buf;
}

socklen_t IpAddr::to_sockaddr(uint16_t port, uint32_t scope, sockaddr_storage* out) const {
  *out = {};
  if (family == AF_INET) {
    auto* sa = reinterpret_cast<sockaddr_in*>(out);
    sa->sin_family = AF_INET;
    sa->sin_port = htons(port);
    std::memcpy(&sa->sin_addr, bytes, 4);
    return sizeof *sa;
  }
  if (family == AF_INET6) {
    auto* sa = reinterpret_cast<sockaddr_in6*>(out);
    sa->sin6_family = AF_INET6;
    sa->sin6_port = htons(port);
    sa->sin6_scope_id = scope;
    std::memcpy(&sa->sin6_addr, bytes, 16);
    return sizeof *sa;
  }
  return 0;
}

}  // namespace ss::net
