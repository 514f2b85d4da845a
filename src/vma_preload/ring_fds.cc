#include "vma_preload/ring_fds.h"

#include <netinet/in.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "core/base/log.h"
#include "interpose/real.h"
#include "interpose/edge.h"
#include "vma_preload/socket_record.h"
#include "vma_preload/netdev_rings.h"
#include "vma_preload/socketxtreme.h"
#include "vma_preload/tcp_listen.h"
#include "vma_preload/tcp_offload.h"
#include "vma_preload/wire_addr.h"
#include "vma_preload/zcopy.h"

namespace ss::vma::preload {
namespace {

// A TCP socket's rings: a listener's, a connection's, or those of the
// netdevs its bound address arrives through (made now: the VMA guide's
// server asks right after bind, before listen).
std::vector<NetdevRings*> tcp_rings(SocketRecord& s) {
  if (TcpListen* l = s.listening()) return l->rings();
  if (XtremeKernelMember* k = s.xtreme_kernel()) return {k->rings()};
  if (TcpOffload* t = s.tcp()) return {t->rings()};
  std::vector<NetdevRings*> out;
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (interpose::real().getsockname(s.fd, reinterpret_cast<sockaddr*>(&a), &len) < 0) return out;
  const net::UdpAddr local = wire_addr(reinterpret_cast<sockaddr*>(&a), len);
  if (local.ip.empty() || local.port == 0) return out;  // not bound: none yet
  t_making_rings = true;
  for (const std::string& dev : netdevs_for(local.ip, s.family == AF_INET6))
    if (NetdevRings* r = netdev_rings(dev); r && r->tcp) out.push_back(r);
  t_making_rings = false;
  return out;
}

// fd's ring descriptors into *out: 0, or -1/EINVAL for a descriptor that
// is not a UDP or TCP socket the preload may offload (one not offloaded
// yet has none). A TCP socket's is its netdevs' xtreme_fd().
int socket_rings(int fd, std::vector<pollfd>* out) {
  const auto s = extra_api_socket(fd);
  if (!s) return -1;
  if (s->family == AF_INET6 && socketxtreme_mode()) {
    // Its completions would need an IPv6 source; it keeps the receive calls.
    SS_WARN_ONCE(
        "VMA Extra API: socketXtreme serves IPv4 sockets only; fd %d "
        "is IPv6 (EOPNOTSUPP)",
        fd);
    errno = EOPNOTSUPP;
    return -1;
  }
  if (s->protocol == IPPROTO_TCP) {
    for (NetdevRings* r : tcp_rings(*s))
      if (const int x = r->xtreme_fd(); x >= 0) out->push_back({x, POLLIN, 0});
    return 0;
  }
  if (UdpOffload* o = s->offload_quiet()) o->ring_fds(out);
  return 0;
}

int get_socket_rings_num(int fd) {
  std::vector<pollfd> rings;
  if (socket_rings(fd, &rings) < 0) return -1;
  return static_cast<int>(rings.size());
}

int get_socket_rings_fds(int fd, int* ring_fds, int ring_fds_sz) {
  if (!ring_fds || ring_fds_sz <= 0) {
    errno = EINVAL;
    return -1;
  }
  std::vector<pollfd> rings;
  if (socket_rings(fd, &rings) < 0) return -1;
  const int n = std::min(ring_fds_sz, static_cast<int>(rings.size()));
  for (int i = 0; i < n; i++) ring_fds[i] = rings[static_cast<size_t>(i)].fd;
  return n;
}

int entry_get_socket_rings_num(int fd) {
  return interpose::edge_call([&] { return get_socket_rings_num(fd); });
}
int entry_get_socket_rings_fds(int fd, int* ring_fds, int ring_fds_sz) {
  return interpose::edge_call([&] { return get_socket_rings_fds(fd, ring_fds, ring_fds_sz); });
}

}  // namespace

void add_ring_entries(vma_api_t* given) {
  given->get_socket_rings_num = entry_get_socket_rings_num;
  given->get_socket_rings_fds = entry_get_socket_rings_fds;
}

}  // namespace ss::vma::preload
