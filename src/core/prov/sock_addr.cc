#include "core/prov/sock_addr.h"

#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ss::prov {

uint16_t port_of(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
  return 0;
}

void set_port(sockaddr_storage* a, uint16_t port) {
  if (a->ss_family == AF_INET)
    reinterpret_cast<sockaddr_in*>(a)->sin_port = htons(port);
  else if (a->ss_family == AF_INET6)
    reinterpret_cast<sockaddr_in6*>(a)->sin6_port = htons(port);
}

sockaddr_storage wildcard_of(const sockaddr* a, socklen_t len) {
  sockaddr_storage wild{};
  memcpy(&wild, a, std::min<size_t>(len, sizeof wild));
  if (wild.ss_family == AF_INET)
    reinterpret_cast<sockaddr_in*>(&wild)->sin_addr.s_addr = htonl(INADDR_ANY);
  else
    reinterpret_cast<sockaddr_in6*>(&wild)->sin6_addr = in6addr_any;
  return wild;
}

bool has_local_port(int sock) {
  sockaddr_storage name{};
  socklen_t len = sizeof name;
  if (::getsockname(sock, reinterpret_cast<sockaddr*>(&name), &len)) return false;
  return port_of(name) != 0;
}

bool is_local_address(const sockaddr* dst, socklen_t len) {
  if (len < sizeof(sa_family_t) || len > sizeof(sockaddr_storage)) return false;
  // Binding succeeds only for an address this namespace owns.
  sockaddr_storage ss{};
  memcpy(&ss, dst, len);
  if (ss.ss_family != AF_INET && ss.ss_family != AF_INET6) return false;
  set_port(&ss, 0);
  int fd = ::socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  bool local = ::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) == 0;
  ::close(fd);
  return local;
}

void disconnect_stream(int sock) {
  sockaddr unspec{};
  unspec.sa_family = AF_UNSPEC;
  ::connect(sock, &unspec, sizeof unspec);
}

int bind_if_unbound(int sock) {
  if (has_local_port(sock)) return 0;
  // getsockname of an unbound socket is the wildcard of its family, port 0.
  sockaddr_storage name{};
  socklen_t len = sizeof name;
  if (::getsockname(sock, reinterpret_cast<sockaddr*>(&name), &len)) return -errno;
  return ::bind(sock, reinterpret_cast<sockaddr*>(&name), len) ? -errno : 0;
}

}  // namespace ss::prov
