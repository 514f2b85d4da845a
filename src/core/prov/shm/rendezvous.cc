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

namespace ss::prov::shm {

int rendezvous_name(const sockaddr* addr, socklen_t len, sockaddr_un* out, socklen_t* out_len) {
  char host[INET6_ADDRSTRLEN] = {};
  unsigned port;
  if (addr->sa_family == AF_INET && len >= sizeof(sockaddr_in)) {
    auto* in = reinterpret_cast<const sockaddr_in*>(addr);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
  } else if (addr->sa_family == AF_INET6 && len >= sizeof(sockaddr_in6)) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    port = ntohs(in6->sin6_port);
  } else {
    return -EAFNOSUPPORT;
  }
  memset(out, 0, sizeof *out);
  out->sun_family = AF_UNIX;
  // Abstract namespace: per network namespace, gone with the socket.
  int n = snprintf(out->sun_path + 1, sizeof(out->sun_path) - 1, "slipstream/shm/%s/%u", host,
                   port);
  *out_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
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

// Only a rendezvous of our own user (or root) is taken.
int dial_rendezvous(const sockaddr* dst, socklen_t len, int* out) {
  sockaddr_storage wild{};
  memcpy(&wild, dst, len);
  if (wild.ss_family == AF_INET)
    reinterpret_cast<sockaddr_in*>(&wild)->sin_addr.s_addr = htonl(INADDR_ANY);
  else
    reinterpret_cast<sockaddr_in6*>(&wild)->sin6_addr = in6addr_any;
  int rc = -ECONNREFUSED;
  for (const sockaddr* a : {dst, reinterpret_cast<const sockaddr*>(&wild)}) {
    sockaddr_un un;
    socklen_t un_len;
    if ((rc = rendezvous_name(a, len, &un, &un_len))) return rc;
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
