// The table of learned destination QPs (dgram_ds_peers.h).
#include "librsocket/dgram_ds_peers.h"

#include <netinet/in.h>

#include <cstring>

namespace ss::rs {

namespace {
// The IPv4 address of `a` (plain or v4-mapped) into *v4, true; else false.
bool as_v4(const sockaddr* a, uint32_t* v4, uint16_t* port) {
  if (a->sa_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(a);
    *v4 = in->sin_addr.s_addr;
    *port = in->sin_port;
    return true;
  }
  auto* in6 = reinterpret_cast<const sockaddr_in6*>(a);
  if (a->sa_family != AF_INET6 || !IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) return false;
  std::memcpy(v4, &in6->sin6_addr.s6_addr[12], 4);
  *port = in6->sin6_port;
  return true;
}

socklen_t len_of(const sockaddr* a) {
  return a->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}
}  // namespace

bool ds_same_endpoint(const sockaddr* a, const sockaddr* b) {
  uint32_t x4 = 0, y4 = 0;
  uint16_t xp = 0, yp = 0;
  const bool x_is4 = as_v4(a, &x4, &xp), y_is4 = as_v4(b, &y4, &yp);
  if (x_is4 || y_is4) return x_is4 && y_is4 && x4 == y4 && xp == yp;
  if (a->sa_family != AF_INET6 || b->sa_family != AF_INET6) return false;
  auto* x = reinterpret_cast<const sockaddr_in6*>(a);
  auto* y = reinterpret_cast<const sockaddr_in6*>(b);
  return x->sin6_port == y->sin6_port && std::memcmp(&x->sin6_addr, &y->sin6_addr, 16) == 0;
}

DsPeer* DsPeers::find(const sockaddr* dst) {
  for (DsPeer& p : peers_)
    if (ds_same_endpoint(reinterpret_cast<const sockaddr*>(&p.udp), dst)) return &p;
  return nullptr;
}

DsPeers::Action DsPeers::on_udp_header(const sockaddr* src, const DsUdpInfo& info) {
  Action a{info.op == kDsOpData, info.op == kDsOpData, false};
  const sockaddr* qp_addr = reinterpret_cast<const sockaddr*>(&info.qp_addr);
  DsPeer* p = find(src);
  if (p && p->qpn == info.qpn &&
      ds_same_endpoint(reinterpret_cast<const sockaddr*>(&p->qp_addr), qp_addr))
    return a;
  if (!p) {
    if (peers_.size() >= capacity_) peers_.erase(peers_.begin());  // the oldest goes
    peers_.push_back({});
    p = &peers_.back();
    std::memcpy(&p->udp, src, len_of(src));
  }
  std::memset(&p->qp_addr, 0, sizeof p->qp_addr);
  std::memcpy(&p->qp_addr, qp_addr, len_of(qp_addr));
  p->qpn = info.qpn;
  p->ah = nullptr;  // the old one (if any) led elsewhere: the owner makes another
  a.learned = true;
  return a;
}

}  // namespace ss::rs
