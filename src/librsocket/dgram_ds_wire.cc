// Upstream's datagram headers: building them, and checking received ones
// before anything in them is believed.
#include "librsocket/dgram_ds_wire.h"

#include <arpa/inet.h>

#include <cstring>

namespace ss::rs {

namespace {
const sockaddr_in6& as6(const sockaddr* sa) { return *reinterpret_cast<const sockaddr_in6*>(sa); }
const sockaddr_in& as4(const sockaddr* sa) { return *reinterpret_cast<const sockaddr_in*>(sa); }
}  // namespace

size_t ds_udp_header_make(DsUdpHeader* h, uint8_t op, uint32_t qpn, const sockaddr* qp_addr) {
  if (qpn >> 24) return 0;
  std::memset(h, 0, sizeof *h);
  h->tag = htonl(kDsUdpTag);
  h->op = op;
  h->qpn = htonl(qpn);
  if (qp_addr->sa_family == AF_INET) {
    h->version = 4;
    h->length = kDsUdpLen4;
    std::memcpy(h->addr, &as4(qp_addr).sin_addr, 4);
  } else if (qp_addr->sa_family == AF_INET6) {
    h->version = 6;
    h->length = kDsUdpLen6;
    std::memcpy(h->addr, &as6(qp_addr).sin6_addr, 16);
  } else {
    return 0;
  }
  return h->length;
}

DgramFault ds_udp_header_check(const void* buf, size_t received, const sockaddr* src,
                               DsUdpInfo* out) {
  DsUdpHeader h{};
  if (received < kDsUdpLen4) return DgramFault::kShort;
  std::memcpy(&h, buf, received < sizeof h ? received : sizeof h);
  if (ntohl(h.tag) != kDsUdpTag) return DgramFault::kTag;
  if (h.version != 4 && h.version != 6) return DgramFault::kHeader;
  if (h.length != (h.version == 4 ? kDsUdpLen4 : kDsUdpLen6)) return DgramFault::kHeader;
  if (h.op != kDsOpData && h.op != kDsOpCtrl) return DgramFault::kHeader;
  if (ntohl(h.qpn) >> 24) return DgramFault::kHeader;
  if (received < h.length) return DgramFault::kShort;
  if (h.version != dgram_ip_version(src)) return DgramFault::kFamily;
  if (received > kDgramSlot) return DgramFault::kOversize;
  out->op = h.op;
  out->length = h.length;
  out->qpn = ntohl(h.qpn);
  std::memset(&out->qp_addr, 0, sizeof out->qp_addr);
  if (h.version == 4) {
    auto* a = reinterpret_cast<sockaddr_in*>(&out->qp_addr);
    a->sin_family = AF_INET;
    std::memcpy(&a->sin_addr, h.addr, 4);
  } else {
    auto* a = reinterpret_cast<sockaddr_in6*>(&out->qp_addr);
    a->sin6_family = AF_INET6;
    std::memcpy(&a->sin6_addr, h.addr, 16);
  }
  return DgramFault::kNone;
}

size_t ds_header_make(DsHeader* h, const sockaddr* self) {
  std::memset(h, 0, sizeof *h);
  if (self->sa_family == AF_INET) {
    h->version = 4;
    h->length = kDsLen4;
    h->port = as4(self).sin_port;
    std::memcpy(&h->v4_or_flowinfo, &as4(self).sin_addr, 4);
  } else if (self->sa_family == AF_INET6) {
    h->version = 6;
    h->length = kDsLen6;
    h->port = as6(self).sin6_port;
    h->v4_or_flowinfo = as6(self).sin6_flowinfo;
    std::memcpy(h->addr6, &as6(self).sin6_addr, 16);
  } else {
    return 0;
  }
  return h->length;
}

DgramFault ds_header_check(const void* buf, size_t received, int domain, size_t* hdr_len,
                           sockaddr_storage* src, socklen_t* src_len) {
  DsHeader h{};
  if (received < kDsLen4) return DgramFault::kShort;
  std::memcpy(&h, buf, received < sizeof h ? received : sizeof h);
  if (!((h.version == 4 && h.length == kDsLen4) || (h.version == 6 && h.length == kDsLen6)))
    return DgramFault::kHeader;
  if (received < h.length) return DgramFault::kShort;
  if (received > kDgramSlot) return DgramFault::kOversize;
  if (h.version == 6 && domain != AF_INET6) return DgramFault::kFamily;
  std::memset(src, 0, sizeof *src);
  if (h.version == 4 && domain == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(src);
    a->sin_family = AF_INET;
    a->sin_port = h.port;
    std::memcpy(&a->sin_addr, &h.v4_or_flowinfo, 4);
    *src_len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in6*>(src);
    a->sin6_family = AF_INET6;
    a->sin6_port = h.port;
    if (h.version == 4) {  // v4-mapped for an IPv6 socket, as the kernel gives it
      a->sin6_addr.s6_addr[10] = a->sin6_addr.s6_addr[11] = 0xff;
      std::memcpy(&a->sin6_addr.s6_addr[12], &h.v4_or_flowinfo, 4);
    } else {
      a->sin6_flowinfo = h.v4_or_flowinfo;
      std::memcpy(&a->sin6_addr, h.addr6, 16);
    }
    *src_len = sizeof *a;
  }
  *hdr_len = h.length;
  return DgramFault::kNone;
}

}  // namespace ss::rs
