// Datagram rsockets over the kernel's UDP: the header on the way out, the
// checks on the way in, and UDP's errno for misuse (mostly the kernel's
// own: the descriptor is a real UDP socket).
#include "librsocket/dgram_socket.h"

#include "core/base/deadline.h"
#include "librsocket/dgram_deliver.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <new>
#include <chrono>
#include <cstring>
#include <vector>

#include "core/base/log.h"
#include "core/base/own_fd.h"
#include "include/rdma/rsocket.h"
#include "core/base/interruptible_poll.h"
#include "librsocket/settings.h"
#include "librsocket/status_flags.h"

namespace ss::rs {

const char* dgram_fault_name(DgramFault f) {
  switch (f) {
    case DgramFault::kNone:
      return "none";
    case DgramFault::kShort:
      return "shorter than its header";
    case DgramFault::kTag:
      return "wrong tag";
    case DgramFault::kHeader:
      return "bad header";
    case DgramFault::kFamily:
      return "version disagrees with the source address";
    case DgramFault::kOversize:
      return "longer than a slot";
  }
  return "?";
}

DgramFault dgram_check(const DgramHeader& h, size_t received, const sockaddr* src) {
  if (received < sizeof(DgramHeader)) return DgramFault::kShort;
  if (ntohl(h.tag) != kDgramTag) return DgramFault::kTag;
  if (h.length != sizeof(DgramHeader) || h.op != kDgramOpData || h.reserved != 0)
    return DgramFault::kHeader;
  if (h.version != dgram_ip_version(src)) return DgramFault::kFamily;
  if (received > kDgramSlot) return DgramFault::kOversize;
  return DgramFault::kNone;
}

namespace {
// The header's iovec, then the caller's: one array on the stack for the
// usual few, else on the heap.
class IovWithHeader {
 public:
  IovWithHeader(DgramHeader* h, const iovec* iov, size_t n) {
    iovec* v = n < kInline ? inline_ : (heap_.resize(n + 1), heap_.data());
    v[0] = {h, sizeof *h};
    for (size_t i = 0; i < n; i++) v[i + 1] = iov[i];
    v_ = v;
    n_ = n + 1;
  }
  iovec* data() { return v_; }
  size_t size() const { return n_; }

 private:
  static constexpr size_t kInline = 8;
  iovec inline_[kInline];
  std::vector<iovec> heap_;
  iovec* v_;
  size_t n_;
};

int iov_total(const iovec* iov, size_t n, size_t* total) {
  size_t t = 0;
  for (size_t i = 0; i < n; i++) {
    if (!iov[i].iov_base && iov[i].iov_len) return -EFAULT;
    t += iov[i].iov_len;
    if (t < iov[i].iov_len) return -EINVAL;
  }
  *total = t;
  return 0;
}

int os_result(int rc) { return rc < 0 ? -errno : rc; }

// The length of a destination as the kernel's UDP takes it: EINVAL beyond
// a sockaddr_storage or short of its family's (sockaddr_in6 without its
// scope id passes, RFC 2133's size); else the family's own size, so one
// address is always one key to the shared-memory sender.
int dest_len(const sockaddr* a, socklen_t len) {
  if (len > sizeof(sockaddr_storage)) return -EINVAL;
  if (a->sa_family == AF_INET)
    return len < sizeof(sockaddr_in) ? -EINVAL : int(sizeof(sockaddr_in));
  if (a->sa_family == AF_INET6)
    return len < offsetof(sockaddr_in6, sin6_scope_id) ? -EINVAL : int(sizeof(sockaddr_in6));
  return static_cast<int>(len);
}
}  // namespace

int DgramSocket::create(int domain, int flags, std::shared_ptr<DgramSocket>* out) {
  int fd = ::socket(domain, SOCK_DGRAM | (flags & SOCK_CLOEXEC), 0);
  if (fd < 0) return -errno;
  // The settings' files are read now, as a stream rsocket's are: its
  // first receive may find no descriptor left to read them with.
  (void)settings::get(settings::Id::kPollingTime);
  // Every datagram carries the kernel's drop count for this socket.
  int on = 1;
  if (::setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &on, sizeof on) < 0) {
    int err = errno;
    ::close(fd);
    return -err;
  }
  try {
    *out = std::make_shared<DgramSocket>(fd, domain);
  } catch (...) {  // the descriptor is ours until the object holds it
    ::close(fd);
    throw;
  }
  (*out)->nonblock_ = (flags & SOCK_NONBLOCK) != 0;
  return 0;
}

DgramSocket::~DgramSocket() {
  if (wait_fd_ >= 0) ::close(wait_fd_);
  ::close(fd_);
}

void DgramSocket::open_receiver() {
  if (!shm_ || rx_.is_open()) return;
  int rcvbuf = 0;
  socklen_t l = sizeof rcvbuf;
  ::getsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, &l);
  uint32_t slots = 2;  // SO_RCVBUF's bytes in slots, a power of two
  while (slots < 4096 && size_t(slots) * 2 * kDgramSlot <= size_t(rcvbuf)) slots *= 2;
  // Another socket holding the name (SO_REUSEPORT) keeps it: this one
  // then receives over UDP only.
  if (int rc = rx_.open(fd_, slots))
    SS_DEBUG("rsocket: fd %d: no shared-memory rendezvous (%s)", fd_, strerror(-rc));
  if (wait_fd_ >= 0 && rx_.is_open()) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ::epoll_ctl(wait_fd_, EPOLL_CTL_ADD, rx_.listen_fd(), &ev);
  }
}

int DgramSocket::bind(const sockaddr* addr, socklen_t len) {
  if (!addr) return -EFAULT;
  int rc = os_result(::bind(fd_, addr, len));
  if (rc == 0) {
    std::lock_guard<std::mutex> g(recv_mu_);
    open_receiver();
  }
  // No device there is no failure of bind: the datagrams go over UDP.
  if (rc == 0 && verbs_) (void)verbs_->prepare_bound();
  return rc;
}

int DgramSocket::connect(const sockaddr* addr, socklen_t len) {
  if (!addr) return -EFAULT;
  if (len < sizeof(sa_family_t)) return -EINVAL;
  // Before the kernel's connect, which would set the parent's destination.
  if (verbs_ && verbs_->cut_loose()) return -EOPNOTSUPP;
  int rc = os_result(::connect(fd_, addr, len));
  if (rc) return rc;
  peer_version_ = addr->sa_family == AF_UNSPEC ? 0 : dgram_ip_version(addr);
  sockaddr_storage peer{};
  socklen_t pl = 0;
  if (addr->sa_family != AF_UNSPEC) {
    pl = sizeof peer;
    if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&peer), &pl) < 0)  // our family's form
      pl = 0, peer = {};
  }
  {
    std::lock_guard<std::mutex> n(name_mu_);
    send_peer_ = peer;
    send_peer_len_ = pl;
  }
  {
    std::lock_guard<std::mutex> g(recv_mu_);
    peer_ = peer;
    open_receiver();  // connect bound it
  }
  // Over verbs the QP toward the peer is made now, so that a device that
  // cannot carry it (iWARP, or none) fails rconnect, as upstream's does.
  if (verbs_ && addr->sa_family != AF_UNSPEC) return verbs_->prepare(addr, len);
  return 0;
}

int DgramSocket::own_name(sockaddr_storage* name) {
  std::lock_guard<std::mutex> g(name_mu_);
  if (!name_.ss_family) {
    sockaddr_storage n{};
    socklen_t l = sizeof n;
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&n), &l) < 0) return -errno;
    if (reinterpret_cast<sockaddr_in*>(&n)->sin_port == 0) {  // same offset in sockaddr_in6
      sockaddr_storage any{};
      any.ss_family = static_cast<sa_family_t>(domain_);
      if (::bind(fd_, reinterpret_cast<sockaddr*>(&any),
                 domain_ == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6)) < 0 &&
          errno != EINVAL)  // EINVAL: another thread bound it meanwhile
        return -errno;
      l = sizeof n;
      if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&n), &l) < 0) return -errno;
      std::lock_guard<std::mutex> r(recv_mu_);
      open_receiver();
    }
    name_ = n;
  }
  *name = name_;
  return 0;
}

int DgramSocket::shutdown(int how) {
  if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR) return -EINVAL;
  // The kernel wakes its pollers and fails later sends with EPIPE; it
  // answers ENOTCONN for an unconnected socket, yet shuts it all the same.
  int rc = os_result(::shutdown(fd_, how));
  if (rc == 0 || rc == -ENOTCONN) {
    if (how != SHUT_WR) shut_rd_ = true;
    if (how != SHUT_RD) shut_wr_ = true;  // the kernel's check does not see the ring path
  }
  return rc;
}

// No shutdown(2): the kernel socket may be a fork's other process's too,
// and a close ends only this process's use (the last user closes it).
void DgramSocket::close() {
  std::lock_guard<std::mutex> g(recv_mu_);
  rx_.close_ring();
  shut_rd_ = true;  // under recv_mu_: a later wait_target sees it and does not sleep
  shut_wr_ = true;
  kick_.wake();  // this process's sleepers look again and see it
}

ssize_t DgramSocket::send(const msghdr& msg, int flags) {
  if (flags & MSG_OOB) return -EOPNOTSUPP;
  if (msg.msg_controllen) return -ENOTSUP;  // no ancillary data
  if (msg.msg_iovlen > IOV_MAX - 1) return -EMSGSIZE;
  size_t len;
  if (int rc = iov_total(msg.msg_iov, msg.msg_iovlen, &len)) return rc;
  if (len > kDgramMaxPayload) return -EMSGSIZE;
  if (shut_wr_) return -EPIPE;
  uint8_t version;
  if (msg.msg_name) {
    if (msg.msg_namelen < sizeof(sa_family_t)) return -EINVAL;
    if (int rc = dest_len(static_cast<const sockaddr*>(msg.msg_name), msg.msg_namelen); rc < 0)
      return rc;
    version = dgram_ip_version(static_cast<const sockaddr*>(msg.msg_name));
    if (!version) return -EAFNOSUPPORT;
  } else {
    version = peer_version_.load(std::memory_order_relaxed);
    if (!version) return -EDESTADDRREQ;
  }
  if (verbs_) {
    sockaddr_storage self, dst{};
    socklen_t dlen;
    if (int rc = own_name(&self)) return rc;  // bound, as UDP's first send does
    if (msg.msg_name) {
      memcpy(&dst, msg.msg_name, msg.msg_namelen);
      dlen = static_cast<socklen_t>(dest_len(reinterpret_cast<sockaddr*>(&dst), msg.msg_namelen));
    } else {
      std::lock_guard<std::mutex> n(name_mu_);
      if (!send_peer_len_) return -EDESTADDRREQ;
      dst = send_peer_;
      dlen = send_peer_len_;
    }
    return verbs_->send(reinterpret_cast<sockaddr*>(&dst), dlen, msg.msg_iov, msg.msg_iovlen, len,
                        MSG_NOSIGNAL | (nonblocking(flags) ? MSG_DONTWAIT : 0));
  }
  if (shm_) {
    sockaddr_storage dst{}, self{};
    socklen_t dlen;
    if (msg.msg_name) {
      memcpy(&dst, msg.msg_name, msg.msg_namelen);  // checked above: it fits
      dlen = static_cast<socklen_t>(dest_len(reinterpret_cast<sockaddr*>(&dst), msg.msg_namelen));
    } else {  // connected: the name connect() recorded (no syscall per datagram)
      std::lock_guard<std::mutex> n(name_mu_);
      if (!send_peer_len_) return -EDESTADDRREQ;
      dst = send_peer_;
      dlen = send_peer_len_;
    }
    if (dst.ss_family == domain_ && own_name(&self) == 0 &&
        tx_.send(reinterpret_cast<sockaddr*>(&dst), dlen, reinterpret_cast<sockaddr*>(&self),
                 msg.msg_iov, msg.msg_iovlen, len))
      return static_cast<ssize_t>(len);
  }
  DgramHeader h{htonl(kDgramTag), version, kDgramOpData, sizeof(DgramHeader), 0};
  IovWithHeader v(&h, msg.msg_iov, msg.msg_iovlen);
  msghdr m{};
  m.msg_name = msg.msg_name;
  m.msg_namelen = msg.msg_name ? msg.msg_namelen : 0;
  m.msg_iov = v.data();
  m.msg_iovlen = v.size();
  // A blocking send sleeps in the kernel (only while its send buffer is
  // full; a full receiver drops instead), where signals and cancellation
  // behave as for any socket call.
  const int os_flags = MSG_NOSIGNAL | (nonblocking(flags) ? MSG_DONTWAIT : 0);
  ssize_t n = ::sendmsg(fd_, &m, os_flags);
  if (n < 0) return -errno;
  return n - static_cast<ssize_t>(sizeof h);
}

void DgramSocket::note_overflow(const msghdr& m) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(const_cast<msghdr*>(&m), c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SO_RXQ_OVFL) continue;
    uint32_t drops;
    memcpy(&drops, CMSG_DATA(c), sizeof drops);
    // The count is the kernel's at the time the datagram was queued: a
    // later one never carries less (receivers on several threads may see
    // them out of order).
    uint64_t seen = overflow_.load(std::memory_order_relaxed);
    while (drops > seen && !overflow_.compare_exchange_weak(seen, drops)) {
    }
  }
}

void DgramSocket::drop(DgramFault fault, bool peeked) {
  if (peeked) ::recv(fd_, nullptr, 0, MSG_DONTWAIT);  // the one just peeked (recv_mu_ held)
  count_malformed(fault);
}

void DgramSocket::count_malformed(DgramFault fault) {
  malformed_.fetch_add(1, std::memory_order_relaxed);
  if (!warned_.exchange(true))
    SS_WARN("rsocket: fd %d: datagram dropped (%s); further ones are only counted", fd_,
            dgram_fault_name(fault));
}

namespace {
// A slot's source as a sockaddr of our family (v4-mapped on AF_INET6).
bool slot_source(const DgramSlot& s, uint8_t version, int domain, sockaddr_storage* out,
                 socklen_t* len) {
  *out = {};
  if (domain == AF_INET) {
    if (version != 4) return false;
    auto* in = reinterpret_cast<sockaddr_in*>(out);
    in->sin_family = AF_INET;
    in->sin_port = s.port;
    memcpy(&in->sin_addr, s.addr, 4);
    *len = sizeof *in;
    return true;
  }
  if (version != 4 && version != 6) return false;
  auto* in6 = reinterpret_cast<sockaddr_in6*>(out);
  in6->sin6_family = AF_INET6;
  in6->sin6_port = s.port;
  if (version == 4) {
    in6->sin6_addr.s6_addr[10] = in6->sin6_addr.s6_addr[11] = 0xff;
    memcpy(in6->sin6_addr.s6_addr + 12, s.addr, 4);
  } else {
    memcpy(&in6->sin6_addr, s.addr, 16);
  }
  *len = sizeof *in6;
  return true;
}

bool same_peer(const sockaddr_storage& a, const sockaddr_storage& b) {
  if (a.ss_family != b.ss_family) return false;
  if (a.ss_family == AF_INET) {
    auto &x = reinterpret_cast<const sockaddr_in&>(a), &y = reinterpret_cast<const sockaddr_in&>(b);
    return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
  }
  auto &x = reinterpret_cast<const sockaddr_in6&>(a), &y = reinterpret_cast<const sockaddr_in6&>(b);
  return x.sin6_port == y.sin6_port && memcmp(&x.sin6_addr, &y.sin6_addr, 16) == 0;
}
}  // namespace

DgramSlot* DgramSocket::ring_head(sockaddr_storage* src, socklen_t* src_len) {
  for (DgramSlot* s; (s = rx_.peek());) {
    // Read once: a sender shares this memory and could change it meanwhile.
    const uint32_t len = s->len;
    const uint8_t version = s->version;
    if (len > kDgramMaxPayload || !slot_source(*s, version, domain_, src, src_len)) {
      count_malformed(len > kDgramMaxPayload ? DgramFault::kOversize : DgramFault::kFamily);
    } else if (!peer_.ss_family || same_peer(peer_, *src)) {
      return s;
    }
    rx_.release(s);  // bad, or not from our connected peer (the kernel drops those too)
  }
  return nullptr;
}

ssize_t DgramSocket::try_recv(msghdr* msg, int flags, bool repeat) {
  if (verbs_) return verbs_->recv(msg, flags, peer_, &count_malformed_cb, this);
  DgramHeader h;
  sockaddr_storage src;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(uint32_t))];
  IovWithHeader v(&h, msg->msg_iov, msg->msg_iovlen);
  size_t room;
  if (int rc = iov_total(msg->msg_iov, msg->msg_iovlen, &room)) return rc;
  socklen_t src_len;
  auto from_ring = [&](DgramSlot* s) {
    const size_t payload = std::min<size_t>(s->len, kDgramMaxPayload);
    ssize_t r = deliver_datagram(msg, flags, s->data, payload, src, src_len);
    if (!(flags & MSG_PEEK)) rx_.release(s);
    return r;
  };
  // A ring that stays busy must not starve the kernel socket (senders on
  // other hosts, or not yet switched to the ring): a ring delivery counts
  // as a chance too, so every Nth call looks there first.
  DgramSlot* head = ring_head(&src, &src_len);
  if (head && !kernel_look_due()) return from_ring(head);
  if (!head && repeat && !kernel_look_due()) return -EAGAIN;
  if (serve_due()) serve_senders();
  for (;;) {
    msghdr m{};
    m.msg_name = &src;
    m.msg_namelen = sizeof src;
    m.msg_iov = v.data();
    m.msg_iovlen = v.size();
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    const bool peek = flags & MSG_PEEK;
    // MSG_TRUNC: the whole length, however little the buffers take.
    ssize_t n = ::recvmsg(fd_, &m, MSG_DONTWAIT | MSG_TRUNC | (peek ? MSG_PEEK : 0));
    if (n < 0) {
      const int err = errno;
      // What a sender published meanwhile is taken now, not at the next call.
      if (DgramSlot* s = err == EAGAIN ? ring_head(&src, &src_len) : nullptr) return from_ring(s);
      return -err;
    }
    note_overflow(m);
    DgramFault fault = dgram_check(h, static_cast<size_t>(n), reinterpret_cast<sockaddr*>(&src));
    if (fault != DgramFault::kNone) {
      drop(fault, peek);
      continue;
    }
    const size_t payload = static_cast<size_t>(n) - sizeof h;
    if (msg->msg_name) {
      memcpy(msg->msg_name, &src, std::min<size_t>(msg->msg_namelen, m.msg_namelen));
      msg->msg_namelen = m.msg_namelen;
    } else {
      msg->msg_namelen = 0;
    }
    msg->msg_controllen = 0;
    msg->msg_flags = payload > room ? MSG_TRUNC : 0;
    return static_cast<ssize_t>((flags & MSG_TRUNC) ? payload : std::min(payload, room));
  }
}

ssize_t DgramSocket::recv(msghdr* msg, int flags) {
  if (flags & (MSG_OOB | MSG_ERRQUEUE)) return -EOPNOTSUPP;
  if (msg->msg_iovlen > IOV_MAX - 1) return -EMSGSIZE;
  // A blocking receive busy-polls for polling_time before it sleeps, as
  // the stream engine does.
  // Its looks are repeats from the start: ring data is returned without
  // a syscall (UDP orders nothing between the two paths); the kernel
  // socket is looked at every dgram_kernel_ratio-th pass, and fully
  // (wait_target) before any sleep. A non-blocking call's one look covers
  // both, so that EAGAIN means both queues are empty.
  auto spin_until = std::chrono::steady_clock::time_point::min();
  for (bool repeat = !nonblocking(flags);; repeat = true) {
    ssize_t n;
    {
      std::lock_guard<std::mutex> g(recv_mu_);
      n = try_recv(msg, flags, repeat);
    }
    if (n != -EAGAIN) return n;
    if (shut_rd_) return 0;  // as a UDP read after shutdown
    if (nonblocking(flags)) return -EAGAIN;
    const auto now = std::chrono::steady_clock::now();
    if (spin_until == std::chrono::steady_clock::time_point::min())
      spin_until = now + std::chrono::microseconds(settings::get(settings::Id::kPollingTime));
    if (now < spin_until) continue;
    int ms = -1;
    PollableSleep sleep(*this, POLLIN, &ms);
    const WaitTarget& t = sleep.target;
    if (t.fd < 0) {  // became readable meanwhile, or no wait set could be made
      if (t.tag) return -static_cast<ssize_t>(t.tag);
      continue;
    }
    pollfd p[2] = {{t.fd, t.events, 0}, {t.kick_fd, POLLIN, 0}};
    int rc = interruptible_poll(p, 2, ms);
    sleep.kicked = t.kick_fd >= 0 && (p[1].revents & POLLIN);
    if (rc < 0) return rc;
  }
}

bool DgramSocket::drop_bad_heads() {
  for (;;) {
    DgramHeader h;
    sockaddr_storage src;
    socklen_t sl;
    ssize_t n = recv_kernel_datagram(fd_, &h, sizeof h, MSG_PEEK, &src, &sl);
    if (n < 0) return errno != EAGAIN;  // an error is for the receive to report
    DgramFault fault = dgram_check(h, static_cast<size_t>(n), reinterpret_cast<sockaddr*>(&src));
    if (fault == DgramFault::kNone) return true;
    drop(fault, true);
  }
}

short DgramSocket::readiness(short events) {
  std::lock_guard<std::mutex> g(recv_mu_);
  return readiness_locked(events, true);
}

short DgramSocket::readiness_repeat(short events) {
  std::lock_guard<std::mutex> g(recv_mu_);
  return readiness_locked(events, false);
}

bool DgramSocket::EveryNth::due(bool always) {
  if (hint || always || ++skipped >= settings::get(settings::Id::kDgramKernelRatio)) {
    hint = false;
    skipped = 0;
    return true;
  }
  return false;
}

bool DgramSocket::kernel_look_due() { return kernel_look_.due(rx_.event_fd() < 0); }

bool DgramSocket::serve_due() { return serve_.due(rx_.event_fd() < 0); }

short DgramSocket::readiness_locked(short events, bool full) {
  // Cut loose in a fork child: the call says why (the UDP socket's
  // datagrams, maybe exchange headers, are left to the parent).
  if (verbs_ && verbs_->cut_loose())
    return static_cast<short>(POLLERR | (events & (POLLIN | POLLOUT)));
  sockaddr_storage src;
  socklen_t len;
  if (events & POLLIN) {
    if (ring_head(&src, &len) || (verbs_ && verbs_->readable(peer_, &count_malformed_cb, this)))
      return static_cast<short>(POLLIN | (events & POLLOUT));
    // Spinning on readability alone: the ring, and the kernel now and then.
    if (!full && events == POLLIN && !shut_rd_ && !kernel_look_due()) return 0;
  }
  // One syscall for the kernel socket and, when reading, the rendezvous.
  pollfd p[2] = {{fd_, static_cast<short>(events | POLLRDHUP), 0},
                 {(events & POLLIN) ? rx_.listen_fd() : -1, POLLIN, 0}};
  if (::poll(p, 2, 0) < 0) return 0;
  if (p[1].revents & POLLIN) serve_senders();
  short r = p[0].revents & static_cast<short>(events | POLLERR | POLLHUP | POLLNVAL);
  // Readable means a receive delivers: bad datagrams (and over verbs the
  // exchange headers, which are no data there) are taken off first.
  if ((r & POLLIN) && !(verbs_ ? verbs_->settle_udp(&count_malformed_cb, this) : drop_bad_heads()))
    r &= ~POLLIN;
  if (r & (POLLIN | POLLERR)) kernel_look_.hint = true;  // the next receive looks there
  // What a sender published meanwhile counts now.
  if ((events & POLLIN) && !(r & POLLIN) && ring_head(&src, &len)) r |= POLLIN;
  if (shut_rd_ && (events & POLLIN)) r |= POLLIN;  // a read returns 0 at once
  return r;
}

void DgramSocket::serve_senders() {
  const bool had_ring = rx_.event_fd() >= 0;
  rx_.serve();
  if (had_ring || rx_.event_fd() < 0) return;
  if (wait_fd_ >= 0) wait_set();
  rx_.set_sleeping(sleeping_ > 0);
}

int DgramSocket::wait_set() {
  if (wait_fd_ < 0) {
    int ep = own_epoll();
    if (ep < 0) return -errno;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ::epoll_ctl(ep, EPOLL_CTL_ADD, fd_, &ev);
    if (rx_.is_open()) ::epoll_ctl(ep, EPOLL_CTL_ADD, rx_.listen_fd(), &ev);
    wait_fd_ = ep;
  }
  if (verbs_) {
    for (int qfd : verbs_->new_event_fds()) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ::epoll_ctl(wait_fd_, EPOLL_CTL_ADD, qfd, &ev);
    }
    verbs_->arm();  // the look that follows catches what came before
  }
  if (!wait_has_event_ && rx_.event_fd() >= 0) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ::epoll_ctl(wait_fd_, EPOLL_CTL_ADD, rx_.event_fd(), &ev);
    wait_has_event_ = true;
  }
  return 0;
}

// tag: an errno when no wait set could be made (fd kReady: the caller
// looks again, and a blocking receive returns it).
WaitTarget DgramSocket::wait_target(short want, int* sleep_ms) {
  WaitTarget t;
  std::lock_guard<std::mutex> g(recv_mu_);
  if (readiness_locked(want, true)) return t;
  // Out of descriptors for the wait set: the kernel socket alone, and a
  // look at the rings and the rendezvous every few ms (as the kernel's
  // UDP, a receive must not fail for want of a descriptor).
  const int set = wait_set();
  const bool no_set = set == -EMFILE || set == -ENFILE;
  if (set && !no_set) {
    t.tag = static_cast<uintptr_t>(-set);
    return t;
  }
  // Raised before the last look: a sender publishing after it wakes us.
  if (sleeping_++ == 0) rx_.set_sleeping(true);
  if (readiness_locked(want, true)) {
    if (--sleeping_ == 0) rx_.set_sleeping(false);
    return t;
  }
  if ((want & POLLIN) && no_set) {
    t.fd = fd_;
    t.events = POLLIN;
    cut_sleep_ms(sleep_ms);
  } else if (want & POLLIN) {
    t.fd = wait_fd_;
    t.events = POLLIN;
  } else {  // writability: the kernel socket says
    t.fd = fd_;
    t.events = want;
  }
  if (kick_.join() == 0)
    t.kick_fd = kick_.fd();
  else  // out of descriptors for the kick: rclose seen that late
    cut_sleep_ms(sleep_ms);
  return t;
}

// The rx event stays readable until the last sleeper leaves (drained
// earlier, another one asleep on it would miss its datagram), and only a
// wait on the wait set (a reader's) drains it.
void DgramSocket::after_wait(const WaitTarget& armed, bool kicked) {
  std::lock_guard<std::mutex> g(recv_mu_);
  kernel_look_.hint = true;  // whatever woke us, the next look covers everything
  serve_.hint = true;
  if (armed.kick_fd >= 0) kick_.leave(kicked);
  if (--sleeping_ > 0) return;
  rx_.set_sleeping(false);
  if (armed.fd >= 0 && armed.fd == wait_fd_ && rx_.event_fd() >= 0) {
    uint64_t n;
    if (::read(rx_.event_fd(), &n, sizeof n) < 0) {
      // EAGAIN: nobody wrote it
    }
  }
}

int DgramSocket::getsockname(sockaddr* addr, socklen_t* len) {
  if (!addr || !len) return -EFAULT;
  return os_result(::getsockname(fd_, addr, len));
}

int DgramSocket::getpeername(sockaddr* addr, socklen_t* len) {
  if (!addr || !len) return -EFAULT;
  return os_result(::getpeername(fd_, addr, len));
}

namespace {
// Options the kernel's UDP socket answers itself, with its own checks.
bool passed_through(int level, int name, bool setting) {
  switch (level) {
    case SOL_SOCKET:
      switch (name) {
        case SO_RCVBUF:
        case SO_SNDBUF:
        case SO_REUSEADDR:
        case SO_REUSEPORT:
        case SO_BROADCAST:
        case SO_PRIORITY:
          return true;
        case SO_TYPE:
        case SO_ERROR:
        case SO_DOMAIN:
        case SO_PROTOCOL:
          return !setting;
      }
      return false;
    case IPPROTO_IP:
      return name == IP_TOS || name == IP_TTL;
    case IPPROTO_IPV6:
      return name == IPV6_V6ONLY || name == IPV6_TCLASS || name == IPV6_UNICAST_HOPS;
  }
  return false;
}
}  // namespace

int DgramSocket::setsockopt(int level, int name, const void* val, socklen_t len) {
  if (!passed_through(level, name, true)) return -ENOPROTOOPT;
  return os_result(::setsockopt(fd_, level, name, val, len));
}

int DgramSocket::getsockopt(int level, int name, void* val, socklen_t* len) {
  if (!val || !len) return -EFAULT;
  if (level == SOL_RDMA && name == SS_DGRAM_DROPS) {
    uint64_t ring_overflow;
    {
      std::lock_guard<std::mutex> g(recv_mu_);
      ring_overflow = rx_.overflow();
    }
    ss_dgram_drops d{overflow_.load() + ring_overflow, malformed_.load()};
    socklen_t n = std::min<socklen_t>(*len, sizeof d);
    memcpy(val, &d, n);
    *len = n;
    return 0;
  }
  if (!passed_through(level, name, false)) return -ENOPROTOOPT;
  if (level == SOL_SOCKET && name == SO_ERROR && verbs_ && *len >= sizeof(int))
    if (int e = verbs_->take_error()) {
      memcpy(val, &e, sizeof e);
      *len = sizeof e;
      return 0;
    }
  return os_result(::getsockopt(fd_, level, name, val, len));
}

int DgramSocket::fcntl(int cmd, long arg) {
  switch (cmd) {
    case F_GETFD:
      return os_result(::fcntl(fd_, F_GETFD));
    case F_SETFD:
      return os_result(::fcntl(fd_, F_SETFD, static_cast<int>(arg) & FD_CLOEXEC));
  }
  return status_flags_fcntl(cmd, arg, &nonblock_);
}

void DgramSocket::fork_child() {
  new (&name_mu_) std::mutex();
  new (&recv_mu_) std::mutex();
  tx_.fork_child();
  rx_.fork_child();
  if (verbs_) verbs_->fork_child();
  kick_.fork_child();
  sleeping_ = 0;  // the parent's sleepers: none of this process's threads
}

}  // namespace ss::rs
