#include "core/prov/shm/rendezvous.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "core/base/log.h"
#include "core/prov/sock_addr.h"

namespace ss::prov::shm {

namespace {

// The host part of a dual-stack listener's name (an AF_INET6 wildcard
// without IPV6_V6ONLY): IPv4 and IPv6 peers both dial it, as both reach
// such a kernel listener.
constexpr const char kDualStack[] = "dual";

void name_of(const char* host, unsigned port, sockaddr_un* out, socklen_t* out_len) {
  memset(out, 0, sizeof *out);
  out->sun_family = AF_UNIX;
  // Abstract namespace: per network namespace, gone with the socket.
  int n =
      snprintf(out->sun_path + 1, sizeof(out->sun_path) - 1, "slipstream/shm/%s/%u", host, port);
  *out_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

int port_of(const sockaddr* addr, socklen_t len, unsigned* port) {
  if (addr->sa_family == AF_INET && len >= sizeof(sockaddr_in))
    *port = ntohs(reinterpret_cast<const sockaddr_in*>(addr)->sin_port);
  else if (addr->sa_family == AF_INET6 && len >= sizeof(sockaddr_in6))
    *port = ntohs(reinterpret_cast<const sockaddr_in6*>(addr)->sin6_port);
  else
    return -EAFNOSUPPORT;
  return 0;
}

// Whether kernel socket `sock`, bound to `name`, listens for both families.
bool dual_stack(int sock, const sockaddr_storage& name) {
  if (name.ss_family != AF_INET6) return false;
  auto& in6 = reinterpret_cast<const sockaddr_in6&>(name);
  if (memcmp(&in6.sin6_addr, &in6addr_any, sizeof in6addr_any) != 0) return false;
  int v6only = 1;
  socklen_t len = sizeof v6only;
  return ::getsockopt(sock, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &len) == 0 && !v6only;
}

}  // namespace

int rendezvous_name(const sockaddr* addr, socklen_t len, sockaddr_un* out, socklen_t* out_len) {
  char host[INET6_ADDRSTRLEN] = {};
  unsigned port = 0;
  if (int rc = port_of(addr, len, &port)) return rc;
  if (addr->sa_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(addr)->sin_addr, host, sizeof host);
  else
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr, host, sizeof host);
  name_of(host, port, out, out_len);
  return 0;
}

bool peer_trusted(int ufd, bool listening) {
  ucred cred{};
  socklen_t clen = sizeof cred;
  if (getsockopt(ufd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
    SS_WARN("shm: peer credentials unavailable (errno %d): connection refused", errno);
    return false;
  }
  const uid_t me = geteuid();
  if (cred.uid == me || cred.uid == 0 || (listening && me == 0)) return true;
  SS_WARN("shm: %s uid %u refused: memory is shared only with uid %u or root",
          listening ? "connection from" : "rendezvous of", cred.uid, me);
  return false;
}

// Only a rendezvous of our own user (or root) is taken. Tried in turn: the
// exact address, its family's wildcard, a dual-stack listener.
int dial_rendezvous(const sockaddr* dst, socklen_t len, int* out) {
  const sockaddr_storage wild = wildcard_of(dst, len);
  unsigned port = 0;
  int rc = port_of(dst, len, &port);
  if (rc) return rc;
  sockaddr_un names[3];
  socklen_t name_lens[3];
  if ((rc = rendezvous_name(dst, len, &names[0], &name_lens[0])) ||
      (rc = rendezvous_name(reinterpret_cast<const sockaddr*>(&wild), len, &names[1],
                            &name_lens[1])))
    return rc;
  name_of(kDualStack, port, &names[2], &name_lens[2]);
  rc = -ECONNREFUSED;
  for (int i = 0; i < 3; i++) {
    sockaddr_un& un = names[i];
    socklen_t un_len = name_lens[i];
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&un), un_len) == 0) {
      // Before a byte goes to it; another user's name is passed over.
      if (peer_trusted(fd, false)) {
        *out = fd;
        return 0;
      }
      rc = -ECONNREFUSED;
    } else {
      rc = errno == EAGAIN ? -ECONNREFUSED : -errno;  // backlog full: as a refused TCP SYN
    }
    ::close(fd);
  }
  return rc;
}

int open_rendezvous(int sock, int backlog, int* out) {
  sockaddr_storage name{};
  socklen_t name_len = sizeof name;
  sockaddr_un un;
  socklen_t un_len;
  if (::getsockname(sock, reinterpret_cast<sockaddr*>(&name), &name_len)) return -errno;
  if (int rc = rendezvous_name(reinterpret_cast<sockaddr*>(&name), name_len, &un, &un_len))
    return rc;
  if (dual_stack(sock, name)) {
    unsigned port = 0;
    port_of(reinterpret_cast<sockaddr*>(&name), name_len, &port);
    name_of(kDualStack, port, &un, &un_len);
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&un), un_len) || ::listen(fd, backlog)) {
    int rc = -errno;
    ::close(fd);
    return rc;
  }
  *out = fd;
  return 0;
}

}  // namespace ss::prov::shm
