#include "interpose/connected_options.h"

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/base/sandbox.h"
#include "interpose/program_memory.h"
#include "interpose/real.h"

namespace ss::interpose {
namespace {

int fail(int err) {
  errno = err;
  return -1;
}

// n bytes of ours as the answer: the program's len set to n.
int answer(const void* bytes, socklen_t n, void* val, socklen_t* len) {
  if (copy_to_program(val, bytes, n) < 0 || copy_to_program(len, &n, sizeof n) < 0)
    return fail(EFAULT);
  return 0;
}

// SO_PEERNAME by Linux's rule: the whole name, EINVAL for more room.
int peer_name(const sockaddr_storage& peer, socklen_t peer_len, socklen_t room, void* val,
              socklen_t* len) {
  if (!peer_len) return fail(ENOTCONN);
  if (peer_len < room) return fail(EINVAL);
  return answer(&peer, room, val, len);
}

// The route's MTU to the peer, read from a UDP socket connected there
// (the kernel's answer for a connection's path). Locked in a sandbox no
// socket is made: ENOTCONN, an unconnected socket's answer.
int path_mtu(const sockaddr_storage& peer, socklen_t peer_len, int level, int name, socklen_t room,
             void* val, socklen_t* len) {
  if (!peer_len || sandbox::locked_in()) return fail(ENOTCONN);
  const auto& k = real();
  const int u = k.socket(peer.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (u < 0) return fail(ENOTCONN);
  char out[64] = {};
  socklen_t n = std::min<socklen_t>(room, sizeof out);
  int rc = k.connect(u, reinterpret_cast<const sockaddr*>(&peer), peer_len);
  if (!rc) rc = k.getsockopt(u, level, name, out, &n);
  const int err = errno;
  k.close(u);
  return rc ? fail(err) : answer(out, n, val, len);
}

}  // namespace

bool answered_by_connection(int level, int name) {
  return (level == SOL_SOCKET && name == SO_PEERNAME) || (level == IPPROTO_IP && name == IP_MTU) ||
         (level == IPPROTO_IPV6 &&
          (name == IPV6_MTU || name == IPV6_PATHMTU || name == IPV6_ADDRFORM));
}

int connection_getsockopt(int domain, const sockaddr_storage& peer, socklen_t peer_len, int level,
                          int name, void* val, socklen_t* len) {
  socklen_t room;
  if (!len || !program_readable(len, sizeof room)) return fail(EFAULT);
  memcpy(&room, len, sizeof room);
  if (static_cast<int>(room) < 0) return fail(EINVAL);
  if (level == SOL_SOCKET) return peer_name(peer, peer_len, room, val, len);
  if (level == IPPROTO_IP || name != IPV6_ADDRFORM)
    return path_mtu(peer, peer_len, level, name, room, val, len);
  if (domain != AF_INET6) return fail(EOPNOTSUPP);
  if (!peer_len) return fail(ENOTCONN);
  const int family = AF_INET6;
  return answer(&family, std::min<socklen_t>(room, sizeof family), val, len);
}

bool refused_once_connected(int level, int name) {
  return (level == IPPROTO_TCP && (name == TCP_FASTOPEN || name == TCP_FASTOPEN_CONNECT ||
                                   name == TCP_FASTOPEN_NO_COOKIE)) ||
         (level == IPPROTO_IPV6 && name == IPV6_V6ONLY);
}

int refuse_on_connection(int kfd, int level, int name, const void* val, socklen_t len) {
  const auto& k = real();
  unsigned char old[64];
  socklen_t old_len = sizeof old;
  const bool had = k.getsockopt(kfd, level, name, old, &old_len) == 0;
  if (k.setsockopt(kfd, level, name, val, len) < 0) return -1;  // the kernel's errno for the value
  if (had) k.setsockopt(kfd, level, name, old, old_len);
  return fail(EINVAL);
}

}  // namespace ss::interpose
