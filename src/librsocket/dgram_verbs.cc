// A datagram rsocket's verbs side: upstream's exchange over the UDP socket,
// then UD SENDs (dgram_verbs.h).
#include "librsocket/dgram_verbs.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "core/base/log.h"
#include "librsocket/dgram_deliver.h"
#include "librsocket/dgram_ds_wire.h"
#include "librsocket/dgram_shm.h"

namespace ss::rs {

using prov::verbs::UdQp;

bool dgram_verbs_enabled() { return dgram_provider_setting() == "verbs"; }

namespace {

// `a` with a v4-mapped IPv6 address turned into AF_INET (a QP binds, and a
// DsHeader speaks, the network the datagram travels).
sockaddr_storage unmapped(const sockaddr* a, socklen_t len) {
  sockaddr_storage s{};
  std::memcpy(&s, a, std::min<size_t>(len, sizeof s));
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&s);
  if (a->sa_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
    sockaddr_in in{};
    in.sin_family = AF_INET;
    in.sin_port = in6->sin6_port;
    std::memcpy(&in.sin_addr, &in6->sin6_addr.s6_addr[12], 4);
    s = {};
    std::memcpy(&s, &in, sizeof in);
  }
  return s;
}

socklen_t len_of(const sockaddr_storage& a) {
  return a.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

bool wildcard_or_loopback(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) {
    uint32_t ip = ntohl(reinterpret_cast<const sockaddr_in&>(a).sin_addr.s_addr);
    return ip == INADDR_ANY || (ip >> 24) == 127;
  }
  const in6_addr& ip = reinterpret_cast<const sockaddr_in6&>(a).sin6_addr;
  return IN6_IS_ADDR_UNSPECIFIED(&ip) || IN6_IS_ADDR_LOOPBACK(&ip);
}

void set_port(sockaddr_storage* a, uint16_t port_be) {
  reinterpret_cast<sockaddr_in*>(a)->sin_port = port_be;  // same offset in sockaddr_in6
}

uint16_t port_of(const sockaddr_storage& a) {
  return reinterpret_cast<const sockaddr_in&>(a).sin_port;
}

}  // namespace

int DgramVerbs::bound_address(sockaddr_storage* s) const {
  sockaddr_storage self{};
  socklen_t sl = sizeof self;
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&self), &sl) < 0) return -errno;
  *s = unmapped(reinterpret_cast<sockaddr*>(&self), sl);
  return 0;
}

int DgramVerbs::source_for(const sockaddr* dst, socklen_t len, sockaddr_storage* src) {
  sockaddr_storage s;
  if (int rc = bound_address(&s)) return rc;
  if (wildcard_or_loopback(s)) {  // the address the kernel's route picks toward dst
    sockaddr_storage d = unmapped(dst, len);
    int t = ::socket(d.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (t < 0) return -errno;
    sockaddr_storage r{};
    socklen_t rl = sizeof r;
    int rc = ::connect(t, reinterpret_cast<sockaddr*>(&d), len_of(d)) < 0 ||
                     ::getsockname(t, reinterpret_cast<sockaddr*>(&r), &rl) < 0
                 ? -errno
                 : 0;
    ::close(t);
    if (rc) return rc;
    set_port(&r, port_of(s));
    s = r;
  }
  *src = s;
  return 0;
}

int DgramVerbs::qp_for(const sockaddr_storage& src, UdQp** out) {
  if (cut_loose()) return -EOPNOTSUPP;
  for (LocalQp& l : qps_)
    if (l.ip.ss_family == src.ss_family &&
        ds_same_endpoint(reinterpret_cast<const sockaddr*>(&l.ip),
                         reinterpret_cast<const sockaddr*>(&src)))
      return *out = l.qp.get(), 0;
  LocalQp l;
  l.ip = src;
  std::unique_ptr<UdQp> qp;
  if (int rc = UdQp::create(reinterpret_cast<const sockaddr*>(&src), 64, &qp)) {
    char ip[INET6_ADDRSTRLEN] = "?";
    inet_ntop(src.ss_family,
              src.ss_family == AF_INET
                  ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in&>(src).sin_addr)
                  : static_cast<const void*>(&reinterpret_cast<const sockaddr_in6&>(src).sin6_addr),
              ip, sizeof ip);
    SS_INFO("rsocket: fd %d: no UD queue pair on %s: %s%s", fd_, ip, strerror(-rc),
            rc == -EOPNOTSUPP ? " (iWARP has no unreliable datagrams; a fork child no verbs)" : "");
    return rc;
  }
  l.qp = std::move(qp);
  *out = l.qp.get();
  qps_.push_back(std::move(l));
  if (!std::exchange(tracked_, true)) fork::track(weak_from_this());
  return 0;
}

DgramVerbs::~DgramVerbs() {
  if (tracked_) fork::untrack(this);
}

void DgramVerbs::fork_child() {
  new (&mu_) std::mutex();                       // a parent thread may have held it
  if (qps_.empty()) return;                      // none yet: a first one fails here (UdQp::create)
  for (LocalQp& l : qps_) (void)l.qp.release();  // the parent's: never used nor destroyed here
  qps_.clear();
  error_.store(EOPNOTSUPP, std::memory_order_relaxed);
  cut_loose_.store(true, std::memory_order_relaxed);
}

bool DgramVerbs::leave_to_maker() { return cut_loose(); }

int DgramVerbs::prepare(const sockaddr* dst, socklen_t len) {
  std::lock_guard<std::mutex> g(mu_);
  sockaddr_storage src;
  UdQp* qp;
  if (int rc = source_for(dst, len, &src)) return rc;
  return qp_for(src, &qp);
}

int DgramVerbs::prepare_bound() {
  std::lock_guard<std::mutex> g(mu_);
  sockaddr_storage s;
  if (int rc = bound_address(&s)) return rc;
  if (wildcard_or_loopback(s)) return 0;  // the source follows each destination
  UdQp* qp;
  return qp_for(s, &qp);
}

ssize_t DgramVerbs::send(const sockaddr* dst, socklen_t dlen, const iovec* iov, size_t iovcnt,
                         size_t len, int os_flags) {
  std::unique_lock<std::mutex> g(mu_);
  if (cut_loose()) return -EOPNOTSUPP;  // even over UDP: its header names the parent's QP
  sockaddr_storage src;
  UdQp* qp;
  if (int rc = source_for(dst, dlen, &src)) return rc;
  if (int rc = qp_for(src, &qp)) return rc;
  DsHeader h;
  const size_t hl = ds_header_make(&h, reinterpret_cast<sockaddr*>(&src));
  if (!hl) return -EAFNOSUPPORT;
  if (len + hl > qp->max_msg()) return -EMSGSIZE;
  DsPeer* p = peers_.find(dst);
  if (p && !p->ah) {
    ibv_ah* ah = nullptr;
    if (qp->ah_for(reinterpret_cast<sockaddr*>(&p->qp_addr), &ah) == 0) p->ah = ah;
  }
  if (p && p->ah) {
    ibv_ah* ah = static_cast<ibv_ah*>(p->ah);
    const uint32_t qpn = p->qpn;
    g.unlock();
    int rc;
    // A full send queue: a blocking send waits for completions (the device
    // frees them at its own pace), a non-blocking one is told EAGAIN.
    while ((rc = qp->send(ah, qpn, &h, hl, iov, iovcnt)) == -EAGAIN && !(os_flags & MSG_DONTWAIT))
      sched_yield();
    return rc ? rc : static_cast<ssize_t>(len);
  }
  DsUdpHeader u;
  const size_t ul = ds_udp_header_make(&u, kDsOpData, qp->qpn(), reinterpret_cast<sockaddr*>(&src));
  g.unlock();
  std::vector<iovec> v(iovcnt + 1);
  v[0] = {&u, ul};
  std::copy(iov, iov + iovcnt, v.begin() + 1);
  msghdr m{};
  m.msg_name = const_cast<sockaddr*>(dst);
  m.msg_namelen = dlen;
  m.msg_iov = v.data();
  m.msg_iovlen = v.size();
  ssize_t n = ::sendmsg(fd_, &m, os_flags);
  if (n < 0) return -errno;
  return n - static_cast<ssize_t>(ul);
}

bool DgramVerbs::on_udp(const uint8_t* buf, size_t n, const sockaddr* src, size_t* off,
                        DgramFault* fault) {
  DsUdpInfo info;
  *fault = ds_udp_header_check(buf, n, src, &info);
  if (*fault != DgramFault::kNone) return false;
  std::lock_guard<std::mutex> g(mu_);
  DsPeers::Action a = peers_.on_udp_header(src, info);
  sockaddr_storage local;
  UdQp* qp = nullptr;
  if ((a.learned || a.reply_ctrl) &&
      (source_for(src, src->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in),
                  &local) ||
       qp_for(local, &qp)))
    qp = nullptr;  // no QP toward it: our datagrams to it stay on UDP
  if (a.learned) SS_DEBUG("rsocket: fd %d: learned QPN %u (op %d)", fd_, info.qpn, info.op);
  if (a.learned && qp) {
    ibv_ah* ah = nullptr;
    if (DsPeer* p = peers_.find(src);
        p && qp->ah_for(reinterpret_cast<sockaddr*>(&p->qp_addr), &ah) == 0)
      p->ah = ah;
  }
  if (a.reply_ctrl && qp) {
    DsUdpHeader c;
    size_t cl = ds_udp_header_make(&c, kDsOpCtrl, qp->qpn(), reinterpret_cast<sockaddr*>(&local));
    ::sendto(fd_, &c, cl, MSG_DONTWAIT | MSG_NOSIGNAL, src,
             src->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in));
  }
  *off = info.length;
  return a.deliver;
}

ssize_t DgramVerbs::recv(msghdr* msg, int flags, const sockaddr_storage& peer,
                         void (*drop)(void* ctx, DgramFault f), void* ctx) {
  // Cut loose: the UDP socket's datagrams are left to the parent (whose
  // exchange headers they may be).
  if (cut_loose()) return -EOPNOTSUPP;
  // The QPs and the UDP socket take turns at being looked at first: a
  // steady UD stream must not starve the exchange headers (or a sender's
  // first datagrams) queued on the socket. A peek leaves the turn as it
  // is, so the read after it takes the datagram it saw.
  const bool udp_first = udp_first_;
  ssize_t r = udp_first ? recv_udp(msg, flags, drop, ctx) : recv_ud(msg, flags, peer, drop, ctx);
  if (r == -EAGAIN)
    r = udp_first ? recv_ud(msg, flags, peer, drop, ctx) : recv_udp(msg, flags, drop, ctx);
  if (r >= 0 && !(flags & MSG_PEEK)) udp_first_ = !udp_first;
  return r;
}

bool DgramVerbs::ud_head(UdQp* qp, const sockaddr_storage& peer,
                         void (*drop)(void* ctx, DgramFault f), void* ctx, UdHead* h) {
  while (qp->front(&h->data, &h->len) == 0) {
    h->sl = sizeof h->src;
    DgramFault f = ds_header_check(h->data, h->len, domain_, &h->hl, &h->src, &h->sl);
    if (f != DgramFault::kNone) {
      SS_DEBUG("rsocket: fd %d: UD datagram refused: %s", fd_, dgram_fault_name(f));
      drop(ctx, f);
      qp->pop();
      continue;
    }
    if (peer.ss_family && !ds_same_endpoint(reinterpret_cast<const sockaddr*>(&peer),
                                            reinterpret_cast<sockaddr*>(&h->src))) {
      SS_DEBUG("rsocket: fd %d: UD datagram not from the connected peer: dropped", fd_);
      qp->pop();  // not from our connected peer: the kernel drops those too
      continue;
    }
    return true;
  }
  return false;
}

ssize_t DgramVerbs::recv_ud(msghdr* msg, int flags, const sockaddr_storage& peer,
                            void (*drop)(void* ctx, DgramFault f), void* ctx) {
  std::vector<UdQp*> qps;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (LocalQp& l : qps_) qps.push_back(l.qp.get());
  }
  for (size_t k = 0; k < qps.size(); k++) {
    UdQp* qp = qps[(next_qp_ + k) % qps.size()];
    UdHead h;
    if (!ud_head(qp, peer, drop, ctx, &h)) continue;
    ssize_t r = deliver_datagram(msg, flags, h.data + h.hl, h.len - h.hl, h.src, h.sl);
    if (!(flags & MSG_PEEK)) qp->pop();
    next_qp_ = (next_qp_ + k + 1) % qps.size();
    return r;
  }
  return -EAGAIN;
}

ssize_t DgramVerbs::recv_udp(msghdr* msg, int flags, void (*drop)(void* ctx, DgramFault f),
                             void* ctx) {
  const bool peek = flags & MSG_PEEK;
  for (;;) {
    uint8_t buf[kDgramSlot + 1];
    sockaddr_storage src;
    socklen_t sl;
    ssize_t n = recv_kernel_datagram(fd_, buf, sizeof buf, peek ? MSG_PEEK : 0, &src, &sl);
    if (n < 0) return -errno;
    size_t off = 0;
    const auto* from = reinterpret_cast<sockaddr*>(&src);
    if (peek) {  // a data datagram stays queued; the exchange acts when it is taken
      if (take_unless_data(buf, static_cast<size_t>(n), from, &off, drop, ctx)) continue;
    } else {
      DgramFault f = DgramFault::kNone;
      if (!on_udp(buf, static_cast<size_t>(n), from, &off, &f)) {
        if (f != DgramFault::kNone) drop(ctx, f);
        continue;  // bad, or an exchange header only
      }
    }
    return deliver_datagram(msg, flags, buf + off, static_cast<size_t>(n) - off, src, sl);
  }
}

bool DgramVerbs::take_unless_data(const uint8_t* buf, size_t n, const sockaddr* src, size_t* off,
                                  void (*drop)(void* ctx, DgramFault f), void* ctx) {
  DsUdpInfo info{};
  DgramFault f = ds_udp_header_check(buf, n, src, &info);
  *off = info.length;
  if (f == DgramFault::kNone && info.op == kDsOpData) return false;
  ::recv(fd_, nullptr, 0, MSG_DONTWAIT);  // the one just peeked
  if (f == DgramFault::kNone) on_udp(buf, n, src, off, &f);
  if (f != DgramFault::kNone) drop(ctx, f);
  return true;
}

bool DgramVerbs::settle_udp(void (*drop)(void* ctx, DgramFault f), void* ctx) {
  for (;;) {
    uint8_t buf[kDgramSlot + 1];
    sockaddr_storage src;
    socklen_t sl;
    ssize_t n = recv_kernel_datagram(fd_, buf, sizeof buf, MSG_PEEK, &src, &sl);
    if (n < 0) return errno != EAGAIN;  // an error is for the receive to report
    size_t off;
    const auto* from = reinterpret_cast<sockaddr*>(&src);
    if (!take_unless_data(buf, static_cast<size_t>(n), from, &off, drop, ctx)) return true;
  }
}

bool DgramVerbs::readable(const sockaddr_storage& peer, void (*drop)(void* ctx, DgramFault f),
                          void* ctx) {
  std::lock_guard<std::mutex> g(mu_);
  UdHead h;
  for (LocalQp& l : qps_)
    if (ud_head(l.qp.get(), peer, drop, ctx, &h)) return true;
  return false;
}

std::vector<int> DgramVerbs::new_event_fds() {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<int> fds;
  for (LocalQp& l : qps_)
    if (!l.fd_given) fds.push_back(l.qp->event_fd()), l.fd_given = true;
  return fds;
}

void DgramVerbs::arm() {
  std::lock_guard<std::mutex> g(mu_);
  for (LocalQp& l : qps_) l.qp->arm();
}

}  // namespace ss::rs
