#include "vma_preload/udp_offload.h"

#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <set>
#include <string>

#include <mellanox/vma_extra.h>

#include "core/base/interruptible_poll.h"
#include "core/base/log.h"
#include "core/base/msghdr_of.h"
#include "core/base/spin_phase.h"
#include "interpose/real.h"
#include "libvmacompat/settings.h"
#include "vma_preload/socket_record.h"
#include "vma_preload/netdev_rings.h"
#include "vma_preload/socket_flags.h"
#include "interpose/program_memory.h"
#include "interpose/signal_count.h"
#include "vma_preload/socketxtreme.h"
#include "vma_preload/wire_addr.h"

namespace ss::vma::preload {
namespace {

using interpose::real;
namespace vs = vma::settings;

}  // namespace

std::unique_ptr<UdpOffload> UdpOffload::attach(int fd, int family, const sockaddr_storage& bound,
                                               RxExtras* extras) {
  const net::UdpAddr local = wire_addr(reinterpret_cast<const sockaddr*>(&bound), sizeof bound);
  if (local.ip.empty() || local.port == 0) return nullptr;
  bool dual = false;
  if (family == AF_INET6 && local.ip.family == AF_INET6 && is_any(local.ip)) {
    int v6only = 0;
    socklen_t len = sizeof v6only;
    dual = real().getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &len) == 0 && !v6only;
  }
  // What the kernel let share the port (SO_REUSEADDR/SO_REUSEPORT) may
  // share the endpoint's too: several members of one group and port.
  int reuse = 0, reuse_port = 0;
  socklen_t rlen = sizeof reuse, plen = sizeof reuse_port;
  real().getsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, &rlen);
  real().getsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &reuse_port, &plen);
  std::unique_ptr<UdpOffload> o(new UdpOffload(fd, family, extras));
  for (const std::string& dev : netdevs_for(local.ip, dual)) {
    NetdevRings* r = netdev_rings(dev);
    if (!r) continue;
    std::unique_ptr<net::UdpEndpoint> ep;
    if (const int err = r->stack->bind(local, dual, &ep, reuse || reuse_port); err < 0) {
      SS_WARN("fd %d: %s refused port %u (%s); the kernel serves it there", fd, dev.c_str(),
              local.port, std::strerror(-err));
      continue;
    }
    o->legs_.push_back({r, std::move(ep)});
  }
  if (o->legs_.empty()) return nullptr;
  // socketXtreme reports IPv4 only (vma_completion_t's source is a sockaddr_in).
  o->xtreme_ = family == AF_INET && socketxtreme_mode();
  if (o->xtreme_)
    for (Leg& l : o->legs_) xtreme_join(l.rings, fd, l.ep.get(), extras);
  return o;
}

UdpOffload::~UdpOffload() {
  if (xtreme_)
    for (Leg& l : legs_) xtreme_leave(l.rings, l.ep.get());
  if (wait_fd_ >= 0) real().close(wait_fd_);
}

void UdpOffload::for_each_leg(const std::function<void(int, net::UdpEndpoint&)>& f) {
  for (Leg& l : legs_) f(l.rings->ifindex, *l.ep);
}

void UdpOffload::connect(const sockaddr* peer, socklen_t len) {
  const net::UdpAddr p = wire_addr(peer, len);
  connected_.store(false, std::memory_order_release);
  peer_ = p;
  for (Leg& l : legs_) l.ep->connect(p);
  connected_.store(!p.ip.empty(), std::memory_order_release);
}

bool UdpOffload::head_locked() {
  if (head_) return true;
  if (extras_->callback.running_here()) return false;  // called from inside it
  for (size_t i = 0; i < legs_.size(); i++) {
    Leg& l = legs_[(next_leg_ + i) % legs_.size()];
    net::Datagram d;
    while (l.ep->recv_zcopy(&d) == 1) {
      if (!callback_passes(l, &d)) continue;
      head_ = std::move(d);
      next_leg_ = (next_leg_ + i + 1) % legs_.size();
      return true;
    }
  }
  return false;
}

bool UdpOffload::callback_passes(Leg& l, net::Datagram* d) {
  if (!extras_->callback.active()) return true;
  const auto queued = static_cast<uint32_t>(l.ep->queued());
  return extras_->callback.pass(fd_, d, l.ep->local(), queued, 0, &extras_->held) ==
         VMA_PACKET_RECV;
}

bool UdpOffload::ring_readable() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  return head_locked();
}

size_t UdpOffload::drain(const char* why) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  size_t dropped = head_ ? 1 : 0;
  head_.reset();
  for (Leg& l : legs_) {
    net::Datagram d;
    size_t here = 0;
    while (l.ep->recv_zcopy(&d) == 1) here++;
    dropped += here;
    SS_INFO("%s: fd %d handed back to the kernel (%s); %zu datagram(s) on the rings dropped",
            l.rings->ifname.c_str(), fd_, why, here);
  }
  return dropped;
}

bool UdpOffload::lend_to_kernel(bool lend) {
  bool moved = false;
  for (Leg& l : legs_) {
    const int n = l.ep->lend_to_kernel(lend);
    if (n < 0)
      SS_WARN("%s: fd %d: its port stays with the kernel socket (steering: %s)",
              l.rings->ifname.c_str(), fd_, strerror(-n));
    moved |= n > 0;
  }
  return moved;
}

ssize_t UdpOffload::copy_head_locked(msghdr* m, int flags, net::Datagram* zcopy) {
  const auto* p = static_cast<const uint8_t*>(head_->buf.data());
  const size_t full = head_->buf.size();
  size_t done = 0;
  // A buffer the kernel could not write: EFAULT, the datagram kept for the
  // next receive (the kernel would drop it).
  for (size_t i = 0; i < m->msg_iovlen && done < full && !zcopy; i++) {
    const size_t n = std::min(m->msg_iov[i].iov_len, full - done);
    if (interpose::copy_to_program(m->msg_iov[i].iov_base, p + done, n)) return -EFAULT;
    done += n;
  }
  if (m->msg_name && m->msg_namelen > 0) {
    sockaddr_storage ss;
    const socklen_t len = program_addr(head_->src, family_, &ss);
    if (interpose::copy_to_program(m->msg_name, &ss, std::min(len, m->msg_namelen))) return -EFAULT;
    m->msg_namelen = len;
  }
  m->msg_controllen = 0;
  if (zcopy) {  // the frame goes to the caller, uncopied
    m->msg_flags = 0;
    *zcopy = std::move(*head_);
    head_.reset();
    return static_cast<ssize_t>(full);
  }
  m->msg_flags = done < full ? MSG_TRUNC : 0;
  if (!(flags & MSG_PEEK)) head_.reset();  // the frame goes back to its fill ring
  return static_cast<ssize_t>((flags & MSG_TRUNC) ? full : done);
}

void UdpOffload::ring_fds(std::vector<pollfd>* fds) const {
  for (const Leg& l : legs_) {
    if (xtreme_)
      if (const int x = l.rings->xtreme_fd(); x >= 0) {
        fds->push_back({x, POLLIN, 0});
        continue;
      }
    l.rings->poll_fds(fds);
  }
}

int UdpOffload::wait(int timeout_ms, bool restartable) {
  const WaitTarget t = wait_target(POLLIN, &timeout_ms);
  if (t.fd < 0) return 0;  // a datagram is there
  struct Armed {           // left however the sleep ends (a cancellation too)
    UdpOffload* u;
    const WaitTarget& t;
    ~Armed() { u->after_wait(t); }
  } const armed{this, t};
  pollfd p[2] = {{t.fd, t.events, 0}, {t.kick_fd, POLLIN, 0}};  // -1: poll skips it
  const int r = interruptible_poll(p, 2, timeout_ms, restartable);
  return r == -EINTR ? -EINTR : 0;
}

ssize_t UdpOffload::recvmsg(SocketRecord& s, msghdr* m, int flags, net::Datagram* zcopy,
                            bool rings_only) {
  if (const int e = s.take_late_error()) {  // before any datagram, as the kernel's sk_err
    errno = e;
    return -1;
  }
  // The header and its iovec array as the kernel checks them: EFAULT for
  // memory it could not use, never a crash (the buffers: at the copy).
  if (!interpose::program_writable(m, sizeof *m)) {
    errno = EFAULT;
    return -1;
  }
  if (m->msg_iovlen > IOV_MAX) {
    errno = EMSGSIZE;
    return -1;
  }
  if (!interpose::program_readable(m->msg_iov, m->msg_iovlen * sizeof(iovec))) {
    errno = EFAULT;
    return -1;
  }
  if (flags & MSG_PEEK) zcopy = nullptr;  // a peek copies
  using clock = std::chrono::steady_clock;
  const int64_t ratio = vs::get(vs::Id::kRxUdpPollOsRatio);
  int64_t polls = vs::get(vs::Id::kRxPoll);  // ring polls before a sleep (-1: for good)
  bool first = true, sleeping = false;
  clock::time_point deadline = clock::time_point::max();
  uint64_t handlers = interpose::handlers_ran();  // a handler running in the spin interrupts it
  SpinLimit spin;
  for (;;) {
    {
      std::lock_guard<std::recursive_mutex> lock(mu_);
      if (head_locked()) {
        const size_t bytes = head_->buf.size();
        const ssize_t r = copy_head_locked(m, flags, zcopy);
        if (r < 0) {
          errno = static_cast<int>(-r);
          return -1;
        }
        if (!(flags & MSG_PEEK)) {
          s.stats.add(stats::kRxPackets);
          s.stats.add(stats::kRxBytes, bytes);
        }
        return r;
      }
    }
    const uint64_t look = looks_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (first || sleeping || (ratio > 0 && look % static_cast<uint64_t>(ratio) == 0)) {
      // Rings only: a datagram waiting there is not copied (EIO, as libvma).
      char c;
      const ssize_t r = rings_only ? real().recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT)
                                   : real().recvmsg(fd_, m, flags | MSG_DONTWAIT);
      if (r >= 0 && rings_only) {
        errno = EIO;
        return -1;
      }
      if (r >= 0) {
        if (!(flags & MSG_PEEK)) {
          s.stats.add(stats::kRxOsPackets);
          s.stats.add(stats::kRxOsBytes, static_cast<uint64_t>(r));
        }
        return r;
      }
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        s.stats.add(stats::kRxOsErrors);
        return -1;
      }
    }
    if (first) {
      first = false;
      if (nonblocking(fd_, flags)) {
        s.stats.add(stats::kRxEagain);
        errno = EAGAIN;
        return -1;
      }
      if (const int t = rcv_timeout_ms(fd_); t >= 0)
        deadline = clock::now() + std::chrono::milliseconds(t);
      continue;
    }
    const auto now = clock::now();
    if (now >= deadline) {
      errno = EAGAIN;
      return -1;
    }
    // A handler ran while we spun: the kernel's sleep would have been
    // interrupted (signal(7): not restarted when SO_RCVTIMEO is set).
    if (interpose::spin_interrupted(&handlers, deadline == clock::time_point::max())) {
      errno = EINTR;
      return -1;
    }
    if ((polls < 0 || polls-- > 0) && spin.go_on(now)) continue;
    spin.end();
    // Sleep on the kernel socket, the rings' wake-ups and our endpoints'
    // kicks (another thread's poll may take a frame for us off a ring).
    sleeping = true;
    int slice = -1;
    if (deadline != clock::time_point::max())
      slice = static_cast<int>(std::clamp<int64_t>(
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1, 1,
          INT32_MAX));
    // A handler's signal fails the call as the kernel's (signal(7): not
    // restarted when SO_RCVTIMEO is set).
    if (wait(slice, deadline == clock::time_point::max()) == -EINTR) {
      errno = EINTR;
      return -1;
    }
  }
}

ssize_t UdpOffload::sendmsg(SocketRecord& s, const msghdr* m, int flags) {
  const bool dummy = flags & VMA_SND_FLAGS_DUMMY;
  net::UdpAddr dst;
  if (m->msg_name && m->msg_namelen > 0)
    dst = wire_addr(static_cast<const sockaddr*>(m->msg_name), m->msg_namelen);
  else if (connected_.load(std::memory_order_acquire))
    dst = peer_;
  if (dummy && dst.ip.empty()) {
    errno = EDESTADDRREQ;
    return -1;
  }
  const size_t total = ss::iov_total(m);
  uint8_t payload[2048];
  // Ancillary data (a TTL, TOS or source for this datagram) is the
  // kernel's to apply: such a send goes through the kernel socket.
  if (!dst.ip.empty() && !(flags & ~(MSG_DONTWAIT | MSG_NOSIGNAL | VMA_SND_FLAGS_DUMMY)) &&
      total <= sizeof payload && m->msg_controllen == 0) {
    size_t off = 0;
    for (size_t i = 0; i < m->msg_iovlen; i++) {
      std::memcpy(payload + off, m->msg_iov[i].iov_base, m->msg_iov[i].iov_len);
      off += m->msg_iov[i].iov_len;
    }
    for (Leg& l : legs_) {
      const net::SendResult r = l.rings->tx->send(*l.ep, dst, {payload, total}, dummy);
      // A dummy whose next hop is being resolved has warmed what it can.
      if (r.status == net::SendStatus::kSent || (dummy && r.status == net::SendStatus::kUseKernel &&
                                                 r.why == net::ToKernel::kNeighbourPending)) {
        if (dummy) {
          s.stats.add(stats::kTxDummy);
        } else {
          s.stats.add(stats::kTxPackets);
          s.stats.add(stats::kTxBytes, total);
        }
        return static_cast<ssize_t>(total);
      }
      if (r.status == net::SendStatus::kError) {
        if (dummy) {
          s.stats.add(stats::kTxErrors);
          errno = r.err;
          return -1;
        }
        break;  // the kernel gives its own answer
      }
    }
  }
  // A dummy the rings do not carry would be the kernel's, which would send
  // it: libvma refuses a dummy on its way to the OS.
  if (dummy) {
    s.stats.add(stats::kTxOsErrors);
    errno = EINVAL;
    return -1;
  }
  const ssize_t r = real().sendmsg(fd_, m, flags);
  if (r >= 0) {
    s.stats.add(stats::kTxOsPackets);
    s.stats.add(stats::kTxOsBytes, static_cast<uint64_t>(r));
  } else {
    s.stats.add(stats::kTxOsErrors);
  }
  return r;
}

}  // namespace ss::vma::preload
