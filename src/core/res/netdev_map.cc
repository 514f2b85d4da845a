#include "core/res/netdev_map.h"

#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <unistd.h>

#include <cstring>

#include "core/res/verbs_manager.h"

namespace ss::res {

namespace {

// The source address the kernel picks for `dst` (a connected UDP socket
// sends nothing).
bool source_for(const sockaddr* dst, socklen_t len, sockaddr_storage* src) {
  if (len > sizeof(sockaddr_storage)) return false;
  sockaddr_storage to{};
  memcpy(&to, dst, len);
  if (to.ss_family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&to);
    if (!in->sin_port) in->sin_port = htons(9);
  } else if (to.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&to);
    if (!in6->sin6_port) in6->sin6_port = htons(9);
  } else {
    return false;
  }
  int fd = ::socket(to.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  socklen_t slen = sizeof *src;
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&to), len) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(src), &slen) == 0;
  ::close(fd);
  return ok;
}

// rdma_cm's own answer: binding an id to a local address attaches the
// device that serves that address (RoCE, iWARP or IPoIB alike), as a
// listener bound there would get; loopback and wildcard attach none.
bool rdma_cm_serves(const sockaddr_storage& src) {
  rdma_event_channel* ch = rdma_create_event_channel();
  if (!ch) return false;
  rdma_cm_id* id = nullptr;
  bool found = false;
  if (rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP) == 0) {
    sockaddr_storage a = src;
    if (a.ss_family == AF_INET)
      reinterpret_cast<sockaddr_in*>(&a)->sin_port = 0;
    else
      reinterpret_cast<sockaddr_in6*>(&a)->sin6_port = 0;
    found = rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&a)) == 0 && id->verbs;
    rdma_destroy_id(id);
  }
  rdma_destroy_event_channel(ch);
  return found;
}

}  // namespace

bool rdma_serves(const sockaddr* dst, socklen_t len) {
  if (device_count() <= 0) return false;
  sockaddr_storage src{};
  if (!source_for(dst, len, &src)) return false;
  return rdma_cm_serves(src);
}

}  // namespace ss::res
