// Datagram rsockets over the kernel's UDP: the header on the way out, the
// checks on the way in, and UDP's errno for misuse (mostly the kernel's
// own: the descriptor is a real UDP socket).
#include "librsocket/dgram_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/base/log.h"
#include "include/rdma/rsocket.h"
#include "librsocket/interruptible_sleep.h"

namespace ss::rs {

const char* dgram_fault_name(DgramFault f) {
  switch (f) {
    case DgramFault::kNone: return "none";
    case DgramFault::kShort: return "shorter than its header";
    case DgramFault::kTag: return "wrong tag";
    case DgramFault::kHeader: return "bad header";
    case DgramFault::kFamily: return "version disagrees with the source address";
    case DgramFault::kOversize: return "longer than a slot";
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
}  // namespace

int DgramSocket::create(int domain, int flags, std::shared_ptr<DgramSocket>* out) {
  int fd = ::socket(domain, SOCK_DGRAM | (flags & SOCK_CLOEXEC), 0);
  if (fd < 0) return -errno;
  // Every datagram carries the kernel's drop count for this socket.
  int on = 1;
  if (::setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &on, sizeof on) < 0) {
    int err = errno;
    ::close(fd);
    return -err;
  }
  try {
    *out = std::make_shared<DgramSocket>(fd);
  } catch (...) {  // the descriptor is ours until the object holds it
    ::close(fd);
    throw;
  }
  (*out)->nonblock_ = (flags & SOCK_NONBLOCK) != 0;
  return 0;
}

DgramSocket::~DgramSocket() { ::close(fd_); }

int DgramSocket::bind(const sockaddr* addr, socklen_t len) {
  if (!addr) return -EFAULT;
  return os_result(::bind(fd_, addr, len));
}

int DgramSocket::connect(const sockaddr* addr, socklen_t len) {
  if (!addr) return -EFAULT;
  if (len < sizeof(sa_family_t)) return -EINVAL;
  int rc = os_result(::connect(fd_, addr, len));
  if (rc == 0) peer_version_ = addr->sa_family == AF_UNSPEC ? 0 : dgram_ip_version(addr);
  return rc;
}

int DgramSocket::shutdown(int how) {
  if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR) return -EINVAL;
  // The kernel wakes its pollers and fails later sends with EPIPE; it
  // answers ENOTCONN for an unconnected socket, yet shuts it all the same.
  int rc = os_result(::shutdown(fd_, how));
  if (how != SHUT_WR && (rc == 0 || rc == -ENOTCONN)) shut_rd_ = true;
  return rc;
}

void DgramSocket::close() {
  shut_rd_ = true;
  ::shutdown(fd_, SHUT_RDWR);  // wakes whoever sleeps on it; the last user closes it
}

ssize_t DgramSocket::send(const msghdr& msg, int flags) {
  if (flags & MSG_OOB) return -EOPNOTSUPP;
  if (msg.msg_controllen) return -ENOTSUP;  // no ancillary data
  if (msg.msg_iovlen > IOV_MAX - 1) return -EMSGSIZE;
  size_t len;
  if (int rc = iov_total(msg.msg_iov, msg.msg_iovlen, &len)) return rc;
  if (len > kDgramMaxPayload) return -EMSGSIZE;
  uint8_t version;
  if (msg.msg_name) {
    if (msg.msg_namelen < sizeof(sa_family_t)) return -EINVAL;
    version = dgram_ip_version(static_cast<const sockaddr*>(msg.msg_name));
    if (!version) return -EAFNOSUPPORT;
  } else {
    version = peer_version_.load(std::memory_order_relaxed);
    if (!version) return -EDESTADDRREQ;
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
  malformed_.fetch_add(1, std::memory_order_relaxed);
  if (!warned_.exchange(true))
    SS_WARN("rsocket: fd %d: datagram dropped (%s); further ones are only counted", fd_,
            dgram_fault_name(fault));
}

ssize_t DgramSocket::try_recv(msghdr* msg, int flags) {
  DgramHeader h;
  sockaddr_storage src;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(uint32_t))];
  IovWithHeader v(&h, msg->msg_iov, msg->msg_iovlen);
  size_t room;
  if (int rc = iov_total(msg->msg_iov, msg->msg_iovlen, &room)) return rc;
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
    if (n < 0) return -errno;
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
  for (;;) {
    ssize_t n;
    {
      std::lock_guard<std::mutex> g(recv_mu_);
      n = try_recv(msg, flags);
    }
    if (n != -EAGAIN) return n;
    if (shut_rd_) return 0;  // as a UDP read after shutdown
    if (nonblocking(flags)) return -EAGAIN;
    pollfd p{fd_, POLLIN, 0};
    if (int rc = interruptible_poll(&p, 1, -1); rc < 0) return rc;
  }
}

void DgramSocket::drop_bad_heads() {
  for (;;) {
    DgramHeader h;
    sockaddr_storage src;
    iovec v{&h, sizeof h};
    msghdr m{};
    m.msg_name = &src;
    m.msg_namelen = sizeof src;
    m.msg_iov = &v;
    m.msg_iovlen = 1;
    ssize_t n = ::recvmsg(fd_, &m, MSG_DONTWAIT | MSG_TRUNC | MSG_PEEK);
    if (n < 0) return;
    DgramFault fault = dgram_check(h, static_cast<size_t>(n), reinterpret_cast<sockaddr*>(&src));
    if (fault == DgramFault::kNone) return;
    drop(fault, true);
  }
}

short DgramSocket::readiness(short events) {
  if (events & POLLIN) {
    std::lock_guard<std::mutex> g(recv_mu_);
    drop_bad_heads();
  }
  pollfd p{fd_, static_cast<short>(events | POLLRDHUP), 0};
  if (::poll(&p, 1, 0) < 0) return 0;
  short r = p.revents & static_cast<short>(events | POLLERR | POLLHUP | POLLNVAL);
  if (shut_rd_ && (events & POLLIN)) r |= POLLIN;  // a read returns 0 at once
  return r;
}

int DgramSocket::wait_target(short want, int* fd, short* events, int* kick_fd, int* sleep_ms) {
  (void)sleep_ms;  // no deadline of its own
  *kick_fd = -1;
  if (readiness(want)) {
    *fd = -1;
    return 0;
  }
  *fd = fd_;
  *events = want;
  return 0;
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
    ss_dgram_drops d{overflow_.load(), malformed_.load()};
    socklen_t n = std::min<socklen_t>(*len, sizeof d);
    memcpy(val, &d, n);
    *len = n;
    return 0;
  }
  if (!passed_through(level, name, false)) return -ENOPROTOOPT;
  return os_result(::getsockopt(fd_, level, name, val, len));
}

int DgramSocket::fcntl(int cmd, long arg) {
  switch (cmd) {
    case F_GETFL:
      return O_RDWR | (nonblock_ ? O_NONBLOCK : 0);
    case F_SETFL:
      nonblock_ = (arg & O_NONBLOCK) != 0;
      return 0;
    case F_GETFD:
      return os_result(::fcntl(fd_, F_GETFD));
    case F_SETFD:
      return os_result(::fcntl(fd_, F_SETFD, static_cast<int>(arg) & FD_CLOEXEC));
  }
  return -ENOTSUP;
}

}  // namespace ss::rs
