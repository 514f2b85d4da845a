// The Extra API's socketXtreme entries (vma_extra(7)): socketxtreme_poll,
// socketxtreme_free_vma_packets, socketxtreme_ref_vma_buff and
// socketxtreme_free_vma_buff. As libvma they are always in the table with
// their mask bits set, and fail with -1/EOPNOTSUPP (warned once) unless
// VMA_SOCKETXTREME=1. In that mode every offloaded IPv4 UDP socket joins
// the socketXtreme members of each netdev it has rings on
// (NetdevRings::xtreme), and socketxtreme_poll on any ring fd of that
// netdev (get_socket_rings_fds) reports its datagrams as completions,
// each UMEM frame lent as a vma_buff_t (libvmacompat/xtreme_buffs.h).
// A datagram is taken once: by socketxtreme_poll or by a receive call on
// the socket, whichever asks first.
//
// TCP: every listener and connection of the rings joins its netdev's TCP
// members (NetdevRings::xtreme_tcp), and its ring descriptor is the
// netdev's xtreme_fd(). socketxtreme_poll accepts for the listeners
// (VMA_SOCKETXTREME_NEW_CONNECTION_ACCEPTED on the new descriptor: no
// accept() call, which fails with EINVAL on such a listener from then on)
// and reports each connection's in-order data as one packet completion
// (a chain of lent buffers, their bytes out of the window until freed)
// and its events' rising edges (EPOLLOUT, EPOLLRDHUP, EPOLLHUP, EPOLLERR).
// A listener's peers that reach its kernel socket instead are polled on
// the same ring descriptor (xtreme_kernel.h).
#pragma once
#include <mellanox/vma_extra.h>

namespace ss::net {
class UdpEndpoint;
namespace tcp {
class Socket;
}
}  // namespace ss::net

namespace ss::vma {
class XtremeBuffs;
}

namespace ss::vma::preload {

struct NetdevRings;
struct RxExtras;

// The most buffers one TCP packet completion chains (its total_len, 16
// bits, bounds its bytes).
constexpr size_t kXtremeMostBufs = 64;

// Whether VMA_SOCKETXTREME is on.
bool socketxtreme_mode();
// The process's lent buffers.
XtremeBuffs& xtreme_buffs();
// Membership of socket fd's endpoint ep on rings (udp_offload.cc); extras:
// the socket's (its SO_VMA_USER_DATA), outliving the membership.
void xtreme_join(NetdevRings* rings, int fd, net::UdpEndpoint* ep, const RxExtras* extras);
void xtreme_leave(NetdevRings* rings, net::UdpEndpoint* ep);
// A TCP listener's or connection's membership of rings (tcp_listen.cc,
// tcp_offload.cc): its descriptor and its object `who`. A poll looks at
// every listener; a connection from xtreme_tcp_watch on (called once its
// socket record shows it: a poll before would not find it), at the
// changes the stack lists for its handle `sock`. Watched handles (a
// listener's legs too) wake a program asleep on the ring as they change.
void xtreme_tcp_join(NetdevRings* rings, int fd, const void* who, bool listener);
void xtreme_tcp_watch(NetdevRings* rings, const void* who, net::tcp::Socket* sock);
void xtreme_tcp_leave(NetdevRings* rings, const void* who);

// Puts the four entries into the table the preload builds.
void add_xtreme_entries(vma_api_t* given);

}  // namespace ss::vma::preload
