#include "vma_preload/tcp_offload.h"

#include <fcntl.h>
#include <net/if.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <vector>

#include "core/base/fd_table.h"
#include "core/base/log.h"
#include "core/net/tcp/handover_codec.h"
#include "core/base/msghdr_of.h"
#include "interpose/program_memory.h"
#include "interpose/real.h"
#include "vma_preload/netdev_rings.h"
#include "vma_preload/port_holds.h"
#include "vma_preload/rx_extras.h"
#include "vma_preload/socket_record.h"
#include "vma_preload/socket_flags.h"
#include "vma_preload/socketxtreme.h"
#include "vma_preload/tcp_repair.h"
#include "vma_preload/wire_addr.h"

namespace ss::vma::preload {
namespace {

using interpose::real;
using net::tcp::State;

// Where a connect of fd to `to` goes on the rings: 0 with the netdev and
// the 4-tuple (fd bound to a port first when it had none); 1 when the
// rings do not serve that peer (the kernel's connect); -errno.
int plan_connect(int fd, int family, const sockaddr* to, socklen_t len, bool nonblocking,
                 NetdevRings** out, net::tcp::FourTuple* t) {
  const net::UdpAddr peer = wire_addr(to, len);
  if (peer.ip.empty()) return 1;  // AF_UNSPEC and the like: the kernel's answer
  // An IPv6 socket reaches an IPv4 peer by its IPv4-mapped address (Java's
  // sockets all do) unless IPV6_V6ONLY: then the kernel's ENETUNREACH.
  if (family == AF_INET6 && peer.ip.family == AF_INET) {
    int v6only = 0;
    socklen_t olen = sizeof v6only;
    if (real().getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &olen) != 0 || v6only) return 1;
  } else if (peer.ip.family != family) {
    return 1;
  }
  const int ifindex = route_ifindex(peer.ip);
  char ifname[IF_NAMESIZE];
  if (ifindex <= 0 || !if_indextoname(static_cast<unsigned>(ifindex), ifname)) return 1;
  NetdevRings* r = netdev_rings(ifname);
  if (!r || !r->tcp) return 1;
  // The path now: a same-host peer, another device or a next hop not
  // resolved yet stays the kernel's (its connect resolves the next hop).
  net::Flow flow;
  flow.dst = peer.ip;
  sockaddr_storage bound{};
  socklen_t blen = sizeof bound;
  if (real().getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &blen) < 0) return -errno;
  net::UdpAddr local = wire_addr(reinterpret_cast<sockaddr*>(&bound), blen);
  if (!local.ip.empty() && !is_any(local.ip)) {
    if (local.ip.family != peer.ip.family)
      return 1;  // bound to an IPv6 address: the kernel's answer
    flow.src = local.ip;
  }
  net::TxPath path;
  net::ToKernel why;
  // A next hop the kernel is resolving (the lookup asked it) is waited
  // for, as the kernel's connect waits for its neighbour: up to 1 s for a
  // blocking connect, 20 ms for a non-blocking one; then the kernel's.
  const auto give_up =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(nonblocking ? 20 : 1000);
  int rc;
  while ((rc = r->resolver->resolve(flow, &path, &why)) > 0 &&
         why == net::ToKernel::kNeighbourPending && std::chrono::steady_clock::now() < give_up) {
    const timespec ms{0, 1'000'000};
    nanosleep(&ms, nullptr);
  }
  if (rc != 0) {
    if (rc > 0) SS_DEBUG("connect fd %d: kernel (%s)", fd, net::to_kernel_name(why));
    return rc > 0 ? 1 : rc;
  }
  // The port: the program's bind, else one the kernel gives for the
  // route's source address. Held by the kernel socket, unconnected.
  if (local.port == 0) {
    sockaddr_storage src{};
    const socklen_t slen = program_addr({path.src, 0}, family, &src);
    int v6only = -1;
    socklen_t olen = sizeof v6only;
    if (family == AF_INET6) real().getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &olen);
    if (real().bind(fd, reinterpret_cast<sockaddr*>(&src), slen) < 0) return -errno;
    if (v6only == 0)
      if (const auto rec = FdTable::instance().get<SocketRecord>(fd, FdKind::kVmaSocket))
        rec->v6only_by_bind.store(true, std::memory_order_relaxed);
    blen = sizeof bound;
    if (real().getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &blen) < 0) return -errno;
    local = wire_addr(reinterpret_cast<sockaddr*>(&bound), blen);
  }
  t->local = is_any(local.ip) ? path.src : local.ip;
  t->local_port = local.port;
  t->remote = peer.ip;
  t->remote_port = peer.port;
  *out = r;
  return 0;
}

}  // namespace

int TcpOffload::open(int fd, int family, const sockaddr* to, socklen_t len, bool nonblocking,
                     std::unique_ptr<TcpOffload>* out) {
  NetdevRings* r = nullptr;
  net::tcp::FourTuple t;
  if (const int rc = plan_connect(fd, family, to, len, nonblocking, &r, &t); rc != 0) return rc;
  const net::tcp::Config cfg = tcp_config_of(fd);
  net::tcp::Socket* s = nullptr;
  net::ToKernel why;
  const int rc = r->tcp->connect(t, cfg, &s, &why);
  if (rc > 0) return 1;
  if (rc < 0) return rc;
  out->reset(new TcpOffload(r, s, family, /*active=*/true));
  tcp_serve_netdev(r);
  SS_DEBUG("connect fd %d: offloaded on %s, local port %u", fd, r->ifname.c_str(), t.local_port);
  return 0;
}

int TcpOffload::reopen(int fd, const sockaddr* to, socklen_t len, bool nonblocking) {
  NetdevRings* r = nullptr;
  net::tcp::FourTuple t;
  const int planned = plan_connect(fd, family_, to, len, nonblocking, &r, &t);
  if (planned < 0) return planned;
  // The ended connection goes either way (its port's flow too): a peer
  // another netdev or the kernel serves is the kernel's connect.
  const bool here = planned == 0 && r == rings_;
  net::ToKernel why;
  const int rc = rings_->tcp->reconnect(sock_, here ? &t : nullptr, tcp_config_of(fd), &why);
  if (!here) return rc < 0 ? rc : 1;
  xtreme_seen_.store(0, std::memory_order_relaxed);  // the new connection's edges rise anew
  if (rc == 0)
    SS_DEBUG("connect fd %d: offloaded again on %s, local port %u", fd, rings_->ifname.c_str(),
             t.local_port);
  return rc;
}

void TcpOffload::keep_port(int fd) {
  if (!active_ || hold_fd_ >= 0 || moved()) return;
  const int hold = hold_port(fd);
  if (hold < 0) {
    SS_DEBUG("fd %d: no descriptor holds its port while the connection closes (%s)", fd,
             std::strerror(errno));
    return;
  }
  hold_fd_ = hold;
}

void TcpOffload::attach(const stats::SocketStats* s, int fd, RxExtras* extras) {
  stats_ = s;
  fd_ = fd;
  extras_ = extras;
  // socketXtreme reports IPv4 only (vma_completion_t's source is a sockaddr_in).
  if (family_ == AF_INET && socketxtreme_mode() && !xtreme_) {
    xtreme_ = true;
    xtreme_tcp_join(rings_, fd, this, /*listener=*/false);
  }
}

void TcpOffload::xtreme_watch() {
  if (xtreme_) xtreme_tcp_watch(rings_, this, sock_);
}

void TcpOffload::xtreme_take(size_t most, std::vector<mem::Buffer>* out) {
  if (LentOwner* o = lent_owner_.load(std::memory_order_acquire))
    if (const size_t freed = o->collect()) give_back(freed);
  run_callback();
  {
    std::lock_guard lock(xtreme_mu_);
    for (mem::Buffer& v : xtreme_kept_) out->push_back(std::move(v));
    xtreme_kept_.clear();
  }
  if (out->size() < most) rings_->tcp->recv_lent(sock_, most - out->size(), out);
}

void TcpOffload::xtreme_keep(std::vector<mem::Buffer> views) {
  if (views.empty()) return;
  std::lock_guard lock(xtreme_mu_);
  for (mem::Buffer& v : xtreme_kept_) views.push_back(std::move(v));
  xtreme_kept_ = std::move(views);
}

short TcpOffload::xtreme_events() {
  return rings_->tcp->events(sock_) & (POLLOUT | POLLRDHUP | POLLHUP | POLLERR);
}

short TcpOffload::xtreme_edges(short now) {
  const short before = xtreme_seen_.exchange(now, std::memory_order_relaxed);
  return static_cast<short>(now & ~before);
}

net::tcp::FourTuple TcpOffload::tuple() const { return rings_->tcp->tuple(sock_); }

LentOwner* TcpOffload::lent_owner() {
  LentOwner* o = lent_owner_.load(std::memory_order_acquire);
  if (o) return o;
  LentOwner* made = LentOwner::make();
  made->set_wake([](void* r) { static_cast<NetdevRings*>(r)->xtreme_kick(); }, rings_);
  if (lent_owner_.compare_exchange_strong(o, made, std::memory_order_acq_rel)) return made;
  made->unref();  // another thread's came first
  return o;
}

void TcpOffload::wake_at_free_if_shut() {
  LentOwner* o = lent_owner_if_made();
  if (!o || o->quiet() || !rings_->tcp->receive_window_shut(sock_))
    return;  // quiet: no free to come
  o->arm_wake();
  if (o->owed()) rings_->xtreme_kick();  // freed before the arm
}

TcpOffload::~TcpOffload() {
  if (xtreme_) xtreme_tcp_leave(rings_, this);
  if (LentOwner* o = lent_owner_.load(std::memory_order_acquire))
    o->unref();  // buffers out keep it
  const int hold = hold_fd_;
  std::function<void()> freed;
  if (hold >= 0) freed = [hold] { release_port(hold); };
  if (moved()) {         // the kernel's connection holds the port
    release_port(hold);  // made by a close the hand-over overtook
    rings_->tcp->close(sock_);
    return;
  }
  rings_->tcp->close(sock_, abort_at_close_.load(std::memory_order_relaxed), std::move(freed));
}

int TcpOffload::hand_to_kernel(int fd) {
  net::tcp::Stack& st = *rings_->tcp;
  const net::tcp::FourTuple t = st.tuple(sock_);
  const int r = st.hand_over(sock_, [&](const net::tcp::Handover& h) {
    const int done = repair_into_kernel(fd, family_, t, h);
    // Under the stack's lock: a call the hand-over wakes sees it moved.
    if (done == 0) moved_.store(true, std::memory_order_release);
    return done;
  });
  if (r < 0) return r;
  publish();
  return 0;
}

int TcpOffload::hand_to_stack(std::vector<uint8_t>* out) {
  net::tcp::Stack& st = *rings_->tcp;
  const net::tcp::FourTuple t = st.tuple(sock_);
  const int r = st.hand_over(
      sock_,
      [&](const net::tcp::Handover& h) {
        *out = net::tcp::encode_handover(t, h);
        moved_.store(true, std::memory_order_release);  // under the stack's lock, as hand_to_kernel
        return 0;
      },
      /*to_kernel=*/false);
  if (r < 0) return r;
  publish();
  return 0;
}

int TcpOffload::take(NetdevRings* r, int fd, int family, const net::tcp::FourTuple& t,
                     const net::tcp::Handover& h, std::unique_ptr<TcpOffload>* out) {
  net::tcp::Socket* s = nullptr;
  net::ToKernel why;
  const int rc = r->tcp->adopt(t, h, tcp_config_of(fd), &s, &why);
  if (rc != 0) return rc > 0 ? -EHOSTUNREACH : rc;
  out->reset(new TcpOffload(r, s, family, /*active=*/false));
  tcp_serve_netdev(r);
  return 0;
}

void TcpOffload::begin_close(int fd) {
  ::linger l{};
  socklen_t len = sizeof l;
  if (real().getsockopt(fd, SOL_SOCKET, SO_LINGER, &l, &len) < 0) l.l_onoff = 0;
  if (l.l_onoff && l.l_linger <= 0) {
    abort_at_close_.store(true, std::memory_order_relaxed);
    return;
  }
  net::tcp::Stack& st = *rings_->tcp;
  progress();
  uint8_t unread;
  if (st.recv(sock_, {&unread, 1}, /*peek=*/true) > 0) return;  // the close resets
  // The FIN goes now, as the kernel's close sends it, not after the
  // bookkeeping before the last reference goes: a peer that read its
  // answer must not close first (its port would then wait in TIME-WAIT).
  // Not while another thread is blocked in a send or recv: it keeps the
  // connection open until it returns, as Linux's holds the file.
  if (!l.l_onoff && waiting_.load() > 0) return;
  if (st.shutdown_write(sock_) < 0 || !l.l_onoff) return;
  linger_wait(static_cast<int>(std::min<int64_t>(int64_t{l.l_linger} * 1000, INT32_MAX)));
}

int TcpOffload::connect_result(int fd, bool nonblocking, bool again, const sockaddr* to,
                               socklen_t len) {
  net::tcp::Stack& st = *rings_->tcp;
  if (again) {
    const Phase p = phase_.load(std::memory_order_relaxed);
    if (p == Phase::kConnected) return -EISCONN;
    if (p == Phase::kUnconnected) {  // its failure reported: Linux connects anew
      if (const int r = reopen(fd, to, len, nonblocking); r != 0) return r;
      phase_.store(Phase::kConnecting, std::memory_order_relaxed);
      again = false;
    }
  }
  // A non-blocking connect never completes in its own call (Linux's).
  if (!again && nonblocking) return -EINPROGRESS;
  progress();
  State s = st.state(sock_);
  if (s == State::kSynSent && nonblocking) return -EALREADY;
  if (s == State::kSynSent) {
    // SA_RESTART restarts it (signal(7)); else EINTR, and it goes on meanwhile.
    if (const int w = wait_for(POLLOUT, -1, true, /*quiet=*/false); w < 0) return w;
    s = st.state(sock_);
  }
  // The call that sees the attempt end reports it: 0, or its error (once;
  // ECONNABORTED when SO_ERROR took it first).
  if (s == State::kClosed) {
    phase_.store(Phase::kUnconnected, std::memory_order_relaxed);
    const int err = st.take_error(sock_);
    return err ? -err : -ECONNABORTED;
  }
  phase_.store(Phase::kConnected, std::memory_order_relaxed);
  return 0;
}

ssize_t TcpOffload::recvmsg(int fd, msghdr* m, int flags) {
  const PublishAtEnd publish{this};
  if (!interpose::program_writable(m, sizeof *m) ||
      !interpose::program_readable(m->msg_iov, m->msg_iovlen * sizeof(iovec))) {
    errno = EFAULT;
    return -1;
  }
  m->msg_namelen = 0;  // TCP names no source
  m->msg_controllen = 0;
  m->msg_flags = 0;
  const size_t total = ss::iov_total(m);
  if (total == 0) return 0;
  const bool peek = flags & MSG_PEEK, waitall = (flags & MSG_WAITALL) && !peek;
  net::tcp::Stack& st = *rings_->tcp;
  std::vector<uint8_t> peeked;
  size_t got = 0;
  for (;;) {
    run_callback();
    ssize_t n;
    if (peek) {                             // one look from the start of the stream, then scattered
      constexpr size_t kPeekMax = 4 << 20;  // more than a receive window holds
      peeked.resize(std::min(total, kPeekMax));
      n = st.recv(sock_, {peeked.data(), peeked.size()}, true);
      for (size_t i = 0, at = 0; n > 0 && i < m->msg_iovlen && at < static_cast<size_t>(n); i++) {
        const size_t c = std::min(m->msg_iov[i].iov_len, static_cast<size_t>(n) - at);
        if (interpose::copy_to_program(m->msg_iov[i].iov_base, peeked.data() + at, c) < 0) {
          errno = EFAULT;
          return -1;
        }
        at += c;
      }
    } else {
      n = 0;
      size_t skip = got;
      for (size_t i = 0; i < m->msg_iovlen; i++) {
        const iovec& v = m->msg_iov[i];
        if (skip >= v.iov_len) {
          skip -= v.iov_len;
          continue;
        }
        uint8_t* p = static_cast<uint8_t*>(v.iov_base) + skip;
        const size_t want = v.iov_len - skip;
        skip = 0;
        if (!interpose::program_writable(p, want)) {
          if (got + static_cast<size_t>(n))
            return static_cast<ssize_t>(got + static_cast<size_t>(n));
          errno = EFAULT;
          return -1;
        }
        const ssize_t k = st.recv(sock_, {p, want}, false, /*keep_error=*/got + n > 0);
        if (k < 0 && n == 0) n = k;
        if (k <= 0) break;
        n += k;
        if (static_cast<size_t>(k) < want) break;
      }
    }
    if (n > 0) {
      got += static_cast<size_t>(n);
      if (!waitall || got >= total) return static_cast<ssize_t>(got);
      continue;
    }
    if (n == 0) return static_cast<ssize_t>(got);  // end of stream
    // shutdown(SHUT_RD): what was queued came first; then the end.
    if (n == -EAGAIN && read_shut_.load(std::memory_order_relaxed))
      return static_cast<ssize_t>(got);
    if (n != -EAGAIN) {
      if (got) return static_cast<ssize_t>(got);
      errno = static_cast<int>(-n);
      return -1;
    }
    if (got && nonblocking(fd, flags)) return static_cast<ssize_t>(got);
    if (const int w = await_readable(fd, flags); w < 0) {
      if (got) return static_cast<ssize_t>(got);
      errno = -w;
      return -1;
    }
  }
}

ssize_t TcpOffload::recv_lent(int fd, int flags, size_t most, std::vector<mem::Buffer>* out) {
  const PublishAtEnd publish{this};
  net::tcp::Stack& st = *rings_->tcp;
  for (;;) {
    run_callback();
    const ssize_t n = st.recv_lent(sock_, most, out);
    if (n >= 0) return n;
    if (n == -EAGAIN && read_shut_.load(std::memory_order_relaxed)) return 0;
    const int w = n == -EAGAIN ? await_readable(fd, flags) : static_cast<int>(n);
    if (w < 0) {
      errno = -w;
      return -1;
    }
  }
}

void TcpOffload::give_back(size_t bytes) { rings_->tcp->give_back(sock_, bytes); }

void TcpOffload::run_callback() {
  RxExtras* x = extras_;
  // A read from inside the callback: the bytes kept so far, nothing else
  // changed (not even its own unregistering, until it returns).
  if (!x || x->callback.running_here()) return;
  net::tcp::Stack& st = *rings_->tcp;
  if (!x->callback.active()) {
    if (offering_.exchange(false, std::memory_order_relaxed)) st.stop_offering(sock_);
    return;
  }
  offering_.store(true, std::memory_order_relaxed);
  using Offer = net::tcp::ReceiveQueue::Offer;
  const net::tcp::FourTuple t = st.tuple(sock_);
  const net::UdpAddr local{t.local, t.local_port};
  for (;;) {
    net::Datagram d{st.next_offer(sock_), {t.remote, t.remote_port}};
    if (!d.buf) return;
    const size_t len = d.buf.size();
    const vma_recv_callback_retval_t v = x->callback.pass(fd_, &d, local, 0, 0, &x->held);
    st.settle_offer(sock_,
                    v == VMA_PACKET_DROP   ? Offer::kDrop
                    : v == VMA_PACKET_HOLD ? Offer::kTake
                                           : Offer::kKeep,
                    len);
  }
}

ssize_t TcpOffload::sendmsg(int fd, const msghdr* m, int flags) {
  const PublishAtEnd publish{this};
  if (!interpose::program_readable(m, sizeof *m) ||
      !interpose::program_readable(m->msg_iov, m->msg_iovlen * sizeof(iovec))) {
    errno = EFAULT;
    return -1;
  }
  net::tcp::Stack& st = *rings_->tcp;
  progress();  // the ACKs that came open the window: read here, not by another thread
  size_t sent = 0, i = 0, at = 0;  // iov i, its first byte not sent yet
  while (i < m->msg_iovlen) {
    const iovec& v = m->msg_iov[i];
    if (at >= v.iov_len) {
      i++;
      at = 0;
      continue;
    }
    const auto* p = static_cast<const uint8_t*>(v.iov_base) + at;
    const size_t want = v.iov_len - at;
    if (!interpose::program_readable(p, want)) {
      if (sent) return static_cast<ssize_t>(sent);
      errno = EFAULT;
      return -1;
    }
    const ssize_t n = st.send(sock_, {p, want}, /*keep_error=*/sent > 0);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      at += static_cast<size_t>(n);
      continue;
    }
    if (n == -EAGAIN) {  // the window is full: only now the flags and timeout (syscalls)
      if (xtreme_) {
        // The program saw no room: socketXtreme's next look with room
        // reports EPOLLOUT rising, however soon the room came back.
        xtreme_seen_.fetch_and(static_cast<short>(~POLLOUT), std::memory_order_relaxed);
        // A poll on another thread may have looked with the room back
        // before that: it looks again, a sleeper woken for it.
        if (st.events(sock_) & POLLOUT) {
          st.wake(sock_);
          rings_->xtreme_kick();
        }
      }
      if (nonblocking(fd, flags)) break;
      const int timeout = rcv_timeout_ms(fd, SO_SNDTIMEO);
      const int w = wait_for(POLLOUT, timeout, timeout < 0, /*quiet=*/true);
      if (w < 0) {
        if (sent) return static_cast<ssize_t>(sent);
        errno = -w;
        return -1;
      }
      continue;
    }
    if (sent) return static_cast<ssize_t>(sent);
    if (n == -EPIPE && !(flags & MSG_NOSIGNAL) && !tcp_exiting()) raise(SIGPIPE);
    errno = static_cast<int>(-n);
    return -1;
  }
  if (sent == 0 && ss::iov_total(m) > 0) {
    errno = EAGAIN;
    return -1;
  }
  return static_cast<ssize_t>(sent);
}

int TcpOffload::shutdown(int how) {
  if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR) return -EINVAL;
  const State s = rings_->tcp->state(sock_);
  if (s == State::kClosed || s == State::kSynSent) return -ENOTCONN;
  if (how != SHUT_WR) {
    read_shut_.store(true, std::memory_order_relaxed);
    rings_->tcp->wake(sock_);  // a receive asleep in another thread returns
  }
  if (how != SHUT_RD) {
    const int r = rings_->tcp->shutdown_write(sock_);
    if (r < 0) return r;
  }
  return 0;
}

int TcpOffload::name(bool peer, sockaddr_storage* out) {
  if (peer) {
    const State s = rings_->tcp->state(sock_);
    if (s == State::kSynSent || s == State::kClosed) return -ENOTCONN;
  }
  const net::tcp::FourTuple t = rings_->tcp->tuple(sock_);
  return program_addr(
      peer ? net::UdpAddr{t.remote, t.remote_port} : net::UdpAddr{t.local, t.local_port}, family_,
      out);
}

namespace {
// Linux's number for a state (TCP_ESTABLISHED ...: TCP_INFO, vma_stats).
uint8_t linux_state(State s) {
  switch (s) {
    case State::kEstablished:
      return TCP_ESTABLISHED;
    case State::kSynSent:
      return TCP_SYN_SENT;
    case State::kSynReceived:
      return TCP_SYN_RECV;
    case State::kFinWait1:
      return TCP_FIN_WAIT1;
    case State::kFinWait2:
      return TCP_FIN_WAIT2;
    case State::kTimeWait:
      return TCP_TIME_WAIT;
    case State::kCloseWait:
      return TCP_CLOSE_WAIT;
    case State::kLastAck:
      return TCP_LAST_ACK;
    case State::kClosing:
      return TCP_CLOSING;
    case State::kClosed:
      return TCP_CLOSE;
  }
  return TCP_CLOSE;
}
}  // namespace

void TcpOffload::publish() {
  if (!stats_ || !*stats_) return;
  net::tcp::Info i;
  const net::tcp::Counters c = rings_->tcp->connection_counters(sock_, &i);
  std::lock_guard lock(published_mu_);
  net::tcp::Counters& p = published_;
  const stats::SocketStats& st = *stats_;
  st.add(stats::kRxPackets, c.segs_in - p.segs_in);
  st.add(stats::kRxBytes, c.bytes_in - p.bytes_in);
  st.add(stats::kTxPackets, c.segs_out - p.segs_out);
  st.add(stats::kTxBytes, c.bytes_out - p.bytes_out);
  st.add(stats::kTxRetransmits, c.retrans_segs - p.retrans_segs);
  st.add(stats::kTcpRtoExpiries, c.rto_expiries - p.rto_expiries);
  st.add(stats::kTcpOutOfOrder, c.ooo_segs - p.ooo_segs);
  st.add(stats::kTcpSackRecoveries, c.sack_recoveries - p.sack_recoveries);
  st.add(stats::kTcpDupackRecoveries, c.dupack_recoveries - p.dupack_recoveries);
  st.add(stats::kTcpZeroWindowProbes, c.zero_window_probes - p.zero_window_probes);
  p = c;
  st.set(stats::kTcpState, linux_state(i.state));
  st.set(stats::kTcpSrttUs, i.srtt_us);
  st.set(stats::kTcpRttVarUs, i.rttvar_us);
  st.set(stats::kTcpRtoUs, i.rto_us);
  st.set(stats::kTcpCwnd, i.snd_cwnd);
  st.set(stats::kTcpSndWnd, i.snd_wnd);
  st.set(stats::kTcpRcvWnd, i.rcv_wnd);
}

int TcpOffload::take_error() { return rings_->tcp->take_error(sock_); }

void TcpOffload::info(LinuxTcpInfo* full) {
  *full = LinuxTcpInfo{};
  tcp_info* out = &full->base;
  net::tcp::Info i;
  const net::tcp::Counters c = rings_->tcp->connection_counters(sock_, &i);
  out->tcpi_state = linux_state(i.state);
  out->tcpi_ca_state = i.in_recovery ? TCP_CA_Recovery : TCP_CA_Open;
  out->tcpi_backoff = static_cast<uint8_t>(std::min<uint32_t>(i.backoffs, 255));
  out->tcpi_options =
      static_cast<uint8_t>((i.timestamps ? TCPI_OPT_TIMESTAMPS : 0) | (i.sack ? TCPI_OPT_SACK : 0) |
                           (i.window_scaling ? TCPI_OPT_WSCALE : 0));
  out->tcpi_snd_wscale = i.snd_wscale & 0xf;
  out->tcpi_rcv_wscale = i.rcv_wscale & 0xf;
  out->tcpi_rto = i.rto_us;
  out->tcpi_snd_mss = i.snd_mss;
  out->tcpi_rcv_mss = i.rcv_mss;
  out->tcpi_unacked = i.unacked;
  out->tcpi_sacked = i.sacked;
  out->tcpi_lost = i.lost;
  const bool v6_wire = rings_->tcp->tuple(sock_).remote.family == AF_INET6;
  out->tcpi_pmtu = i.advmss + (v6_wire ? 60 : 40);
  out->tcpi_rtt = i.srtt_us;
  out->tcpi_rttvar = i.rttvar_us;
  out->tcpi_snd_ssthresh = i.snd_ssthresh;
  out->tcpi_snd_cwnd = i.snd_cwnd;
  out->tcpi_advmss = i.advmss;
  out->tcpi_reordering = 3;
  out->tcpi_rcv_space = i.rcv_wnd;
  out->tcpi_total_retrans = static_cast<uint32_t>(c.retrans_segs);
  full->max_pacing_rate = ~uint64_t{0};  // no SO_MAX_PACING_RATE: unbounded
  full->bytes_acked = c.bytes_acked;
  full->bytes_received = c.bytes_in;
  full->segs_out = static_cast<uint32_t>(c.segs_out);
  full->segs_in = static_cast<uint32_t>(c.segs_in);
  full->min_rtt = i.min_rtt_us;  // UINT32_MAX before a sample, as Linux's
  full->data_segs_in = static_cast<uint32_t>(c.data_segs_in);
  full->data_segs_out = static_cast<uint32_t>(c.data_segs_out);
  full->bytes_sent = c.bytes_out + c.bytes_retrans;
  full->bytes_retrans = c.bytes_retrans;
  full->dsack_dups = static_cast<uint32_t>(c.dsacks_in);
  full->rcv_ooopack = static_cast<uint32_t>(c.ooo_segs);
  full->snd_wnd = i.snd_wnd;
  full->rcv_wnd = i.rcv_wnd;
  full->total_rto = static_cast<uint16_t>(std::min<uint64_t>(c.rto_expiries, 0xffff));
}

void TcpOffload::set_option(net::tcp::Option o, int64_t value) {
  rings_->tcp->set_option(sock_, o, value);
}

}  // namespace ss::vma::preload
