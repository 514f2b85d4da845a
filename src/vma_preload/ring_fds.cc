#include "vma_preload/ring_fds.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "vma_preload/edge.h"
#include "vma_preload/kernel_socket.h"
#include "vma_preload/zcopy.h"

namespace ss::vma::preload {
namespace {

// fd's ring descriptors into *out: 0, or -1/EINVAL for a descriptor that
// is not a UDP socket the preload may offload (one not offloaded yet has
// none).
int socket_rings(int fd, std::vector<pollfd>* out) {
  const auto s = extra_api_udp_socket(fd);
  if (!s) return -1;
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
  return edge_call([&] { return get_socket_rings_num(fd); });
}
int entry_get_socket_rings_fds(int fd, int* ring_fds, int ring_fds_sz) {
  return edge_call([&] { return get_socket_rings_fds(fd, ring_fds, ring_fds_sz); });
}

}  // namespace

void add_ring_entries(vma_api_t* given) {
  given->get_socket_rings_num = entry_get_socket_rings_num;
  given->get_socket_rings_fds = entry_get_socket_rings_fds;
}

}  // namespace ss::vma::preload
