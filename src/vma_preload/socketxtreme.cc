#include "vma_preload/socketxtreme.h"

#include <netinet/in.h>
#include <sys/epoll.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/base/fd_table.h"
#include "core/base/log.h"
#include "libvmacompat/settings.h"
#include "libvmacompat/xtreme_buffs.h"
#include "vma_preload/edge.h"
#include "vma_preload/kernel_socket.h"
#include "vma_preload/netdev_rings.h"
#include "vma_preload/rx_extras.h"

namespace ss::vma::preload {
namespace {

namespace vs = vma::settings;

// The process's lent buffers (never freed: a program may free a buffer
// while the process exits).
XtremeBuffs& buffs() {
  static XtremeBuffs* b = new XtremeBuffs;
  return *b;
}

// Off: one warning per entry, then -1/EOPNOTSUPP, as libvma's stubs.
template <const char* kName>
bool refused_off() {
  if (socketxtreme_mode()) return false;
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true, std::memory_order_relaxed))
    SS_WARN("VMA Extra API: %s needs VMA_SOCKETXTREME=1 (EOPNOTSUPP)", kName);
  errno = EOPNOTSUPP;
  return true;
}

// In a fork child (fork_child.cc) the rings and their frames are the
// parent's: none is the child's to poll, hold or free.
bool refused_in_child(int err) {
  if (!in_fork_child()) return false;
  errno = err;
  return true;
}

constexpr char kPoll[] = "socketxtreme_poll";
constexpr char kFreePackets[] = "socketxtreme_free_vma_packets";
constexpr char kRef[] = "socketxtreme_ref_vma_buff";
constexpr char kFree[] = "socketxtreme_free_vma_buff";

// -1/errno for a negative result.
int result(int r) {
  if (r >= 0) return r;
  errno = -r;
  return -1;
}

// Counts `packets` datagrams of `bytes` received offloaded on fd's vmastat
// block (its record looked up: the member keeps only the fd).
void count_rx(int fd, uint64_t packets, uint64_t bytes) {
  if (const auto s = FdTable::instance().get<KernelSocket>(fd, FdKind::kVmaKernel)) {
    s->stats.add(stats::kRxPackets, packets);
    s->stats.add(stats::kRxBytes, bytes);
  }
}

// d as completion c of member x: its frame lent, one buffer. False when
// no frame could be had for it (the datagram is dropped).
bool complete(const NetdevRings::XtremeMember& x, net::Datagram&& d, vma_completion_t* c) {
  const net::UdpAddr src = d.src;
  vma_buff_t* b = nullptr;
  if (const int err = buffs().lend(std::move(d), &b); err < 0) {
    SS_DEBUG("socketxtreme_poll: fd %d: a datagram dropped (%s)", x.fd, std::strerror(-err));
    return false;
  }
  std::memset(c, 0, sizeof *c);
  c->packet.num_bufs = 1;
  c->packet.total_len = b->len;
  c->packet.buff_lst = b;
  c->events = static_cast<uint64_t>(VMA_SOCKETXTREME_PACKET) | EPOLLIN;
  c->user_data = x.extras->user_data(x.fd);
  c->src.sin_family = AF_INET;
  c->src.sin_port = htons(src.port);
  std::memcpy(&c->src.sin_addr, src.ip.bytes, sizeof c->src.sin_addr);
  return true;
}

int socketxtreme_poll(int ring_fd, vma_completion_t* comps, unsigned int n, int /*flags*/) {
  if (refused_off<kPoll>() || refused_in_child(EBADFD)) return -1;
  NetdevRings* r = netdev_rings_of_ring_fd(ring_fd);
  if (!r) {
    errno = EBADFD;  // as libvma: not one of the rings' fds
    return -1;
  }
  if (n == 0) return 0;
  if (!comps) {
    errno = EINVAL;
    return -1;
  }
  unsigned int got = 0;
  // Each member's take, counted after the lock: a socket's record may be
  // its last reference, and dropping it leaves xtreme_mu's list.
  struct Taken {
    int fd;
    uint64_t packets, bytes;
  };
  std::vector<Taken> taken;
  {
    std::lock_guard<std::mutex> lock(r->xtreme_mu);
    const size_t m = r->xtreme.size();
    if (m == 0) {
      r->stack->poll_rx();  // the other sockets' datagrams still leave the rings
      return 0;
    }
    const size_t first = r->xtreme_next % m;
    for (size_t i = 0; i < m && got < n; i++) {
      const NetdevRings::XtremeMember& x = r->xtreme[(first + i) % m];
      net::Datagram d;
      Taken t{x.fd, 0, 0};
      while (got < n && x.ep->recv_zcopy(&d) == 1)
        if (complete(x, std::move(d), &comps[got])) {
          t.packets++;
          t.bytes += comps[got++].packet.total_len;
        }
      if (t.packets) taken.push_back(t);
    }
    r->xtreme_next = first + 1;  // the next poll starts at the next socket
  }
  for (const Taken& t : taken) count_rx(t.fd, t.packets, t.bytes);
  return static_cast<int>(got);
}

int free_vma_packets(vma_packet_desc_t* pkts, int num) {
  if (refused_off<kFreePackets>() || refused_in_child(ENOENT)) return -1;
  return result(buffs().free_packets(pkts, num));
}

int ref_vma_buff(vma_buff_t* b) {
  if (refused_off<kRef>() || refused_in_child(ENOENT)) return -1;
  return result(buffs().ref(b));
}

int free_vma_buff(vma_buff_t* b) {
  if (refused_off<kFree>() || refused_in_child(ENOENT)) return -1;
  return result(buffs().unref(b));
}

// The entries as the table holds them: -1/errno, never an exception.
int entry_poll(int fd, vma_completion_t* comps, unsigned int n, int flags) {
  return edge_call([&] { return socketxtreme_poll(fd, comps, n, flags); });
}
int entry_free_vma_packets(vma_packet_desc_t* pkts, int num) {
  return edge_call([&] { return free_vma_packets(pkts, num); });
}
int entry_ref_vma_buff(vma_buff_t* b) {
  return edge_call([&] { return ref_vma_buff(b); });
}
int entry_free_vma_buff(vma_buff_t* b) {
  return edge_call([&] { return free_vma_buff(b); });
}

}  // namespace

bool socketxtreme_mode() { return vs::get(vs::Id::kSocketXtreme) != 0; }

void xtreme_join(NetdevRings* rings, int fd, net::UdpEndpoint* ep, const RxExtras* extras) {
  std::lock_guard<std::mutex> lock(rings->xtreme_mu);
  rings->xtreme.push_back({fd, ep, extras});
}

void xtreme_leave(NetdevRings* rings, net::UdpEndpoint* ep) {
  std::lock_guard<std::mutex> lock(rings->xtreme_mu);
  auto& v = rings->xtreme;
  v.erase(std::remove_if(v.begin(), v.end(), [&](const auto& x) { return x.ep == ep; }), v.end());
}

void add_xtreme_entries(vma_api_t* given) {
  given->socketxtreme_poll = entry_poll;
  given->socketxtreme_free_vma_packets = entry_free_vma_packets;
  given->socketxtreme_ref_vma_buff = entry_ref_vma_buff;
  given->socketxtreme_free_vma_buff = entry_free_vma_buff;
}

}  // namespace ss::vma::preload
