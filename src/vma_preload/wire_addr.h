// A program's socket address as the rings' stacks take it and back: an
// IPv4-mapped IPv6 address is IPv4 on the wire, and an IPv4 address is
// shown IPv4-mapped to an IPv6 socket; a name handed to the program.
#pragma once
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/net/udp_stack.h"
#include "interpose/program_memory.h"

namespace ss::vma::preload {

// sa's address and port (host order); an empty address when sa is
// neither family or too short.
inline net::UdpAddr wire_addr(const sockaddr* sa, socklen_t len) {
  net::UdpAddr a;
  if (sa && sa->sa_family == AF_INET && len >= sizeof(sockaddr_in)) {
    const auto* s4 = reinterpret_cast<const sockaddr_in*>(sa);
    a.ip = net::IpAddr::v4(s4->sin_addr);
    a.port = ntohs(s4->sin_port);
  } else if (sa && sa->sa_family == AF_INET6 && len >= sizeof(sockaddr_in6)) {
    const auto* s6 = reinterpret_cast<const sockaddr_in6*>(sa);
    if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
      in_addr v4;
      std::memcpy(&v4, &s6->sin6_addr.s6_addr[12], 4);
      a.ip = net::IpAddr::v4(v4);
    } else {
      a.ip = net::IpAddr::v6(s6->sin6_addr);
    }
    a.port = ntohs(s6->sin6_port);
  }
  return a;
}

inline bool is_any(const net::IpAddr& ip) {
  return std::all_of(ip.bytes, ip.bytes + ip.size(), [](uint8_t b) { return b == 0; });
}

// a for a socket of `family`: IPv4 shown IPv4-mapped to an IPv6 socket.
inline socklen_t program_addr(const net::UdpAddr& a, int family, sockaddr_storage* out) {
  std::memset(out, 0, sizeof *out);
  if (family == AF_INET6 && a.ip.family == AF_INET) {
    auto* s6 = reinterpret_cast<sockaddr_in6*>(out);
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(a.port);
    s6->sin6_addr.s6_addr[10] = s6->sin6_addr.s6_addr[11] = 0xff;
    std::memcpy(&s6->sin6_addr.s6_addr[12], a.ip.bytes, 4);
    return sizeof(sockaddr_in6);
  }
  return a.ip.to_sockaddr(a.port, 0, out);
}

// A name into the program's (out, *len) as the kernel's getsockname,
// getpeername and accept give one: at most *len bytes, *len set to the
// whole length. 0, -EFAULT (a bad pointer) or -EINVAL (*len negative).
inline int give_name(const sockaddr_storage& a, socklen_t alen, sockaddr* out, socklen_t* len) {
  if (!len || !interpose::program_writable(len, sizeof *len)) return -EFAULT;
  if (static_cast<int>(*len) < 0) return -EINVAL;
  const socklen_t n = std::min(*len, alen);
  if (n && interpose::copy_to_program(out, &a, n) < 0) return -EFAULT;
  *len = alen;
  return 0;
}

}  // namespace ss::vma::preload
