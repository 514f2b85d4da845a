#include "core/prov/sock_addr.h"

#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ss::prov {

bool has_local_port(int sock) {
  sockaddr_storage name{};
  socklen_t len = sizeof name;
  if (::getsockname(sock, reinterpret_cast<sockaddr*>(&name), &len)) return false;
  return name.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&name)->sin6_port != 0
                                    : reinterpret_cast<sockaddr_in*>(&name)->sin_port != 0;
}

bool is_local_address(const sockaddr* dst, socklen_t len) {
  if (len < sizeof(sa_family_t) || len > sizeof(sockaddr_storage)) return false;
  // Binding succeeds only for an address this namespace owns.
  sockaddr_storage ss{};
  memcpy(&ss, dst, len);
  if (ss.ss_family == AF_INET)
    reinterpret_cast<sockaddr_in*>(&ss)->sin_port = 0;
  else if (ss.ss_family == AF_INET6)
    reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port = 0;
  else
    return false;
  int fd = ::socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  bool local = ::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) == 0;
  ::close(fd);
  return local;
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
