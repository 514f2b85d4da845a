// rsetsockopt / rgetsockopt / rfcntl: the options upstream rsockets
// supports, with socket(7) errno for misuse.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/prov/selection.h"
#include "include/rdma/rsocket.h"
#include "librsocket/keepalive_service.h"
#include "librsocket/socket.h"
#include "librsocket/status_flags.h"

namespace ss::rs {

namespace {
int read_int(const void* val, socklen_t len, int* out) {
  if (!val) return -EFAULT;
  if (len < sizeof(int)) return -EINVAL;
  memcpy(out, val, sizeof(int));
  return 0;
}

int write_value(void* val, socklen_t* len, const void* src, socklen_t size) {
  if (!val || !len) return -EFAULT;
  socklen_t n = std::min(*len, size);
  memcpy(val, src, n);
  *len = n;
  return 0;
}

int write_int(void* val, socklen_t* len, int v) { return write_value(val, len, &v, sizeof v); }

bool is_timeout_option(int name) {
  return name == SO_RCVTIMEO || name == SO_SNDTIMEO
#if defined(SO_RCVTIMEO_NEW) && SO_RCVTIMEO_NEW != SO_RCVTIMEO
         || name == SO_RCVTIMEO_NEW || name == SO_SNDTIMEO_NEW
#endif
      ;
}

bool is_receive_timeout(int name) {
#if defined(SO_RCVTIMEO_NEW) && SO_RCVTIMEO_NEW != SO_RCVTIMEO
  if (name == SO_RCVTIMEO_NEW) return true;
#endif
  return name == SO_RCVTIMEO;
}

// SO_RCVTIMEO/SO_SNDTIMEO as a blocking call's bound (Options): 0 for
// ever (a zero timeval), -1 at once (a negative tv_sec, as the kernel
// takes it). Called after the kernel accepted the value (errnos are its).
int64_t timeout_us(const void* val) {
  timeval tv;
  memcpy(&tv, val, sizeof tv);
  if (tv.tv_sec < 0) return -1;
  if (tv.tv_sec > INT64_MAX / 1000000 - 1) return 0;  // beyond any wait: for ever
  return int64_t{tv.tv_sec} * 1000000 + tv.tv_usec;
}
}  // namespace

int Socket::setsockopt(int level, int name, const void* val, socklen_t len) {
  int rc = setsockopt_locked(level, name, val, len);
  // Keepalive registration takes the service's lock: outside ours.
  if (rc == 0 && (level == SOL_SOCKET && name == SO_KEEPALIVE)) {
    if (opt_.keepalive)
      rc = KeepaliveService::instance().add(shared_from_this(), keepalive_interval());
    else
      KeepaliveService::instance().remove(this);
  }
  if (rc == 0 && level == IPPROTO_TCP && name == TCP_KEEPIDLE && opt_.keepalive)
    rc = KeepaliveService::instance().add(shared_from_this(), keepalive_interval());
  return rc;
}

unsigned Socket::keepalive_interval() const {
  return opt_.keepidle ? opt_.keepidle : default_keepalive_seconds();
}

int Socket::setsockopt_locked(int level, int name, const void* val, socklen_t len) {
  std::lock_guard<FutexMutex> g(mu_);
  int v = 0;
  int rc;
  const bool opening = state_ & (kOpening | kConnected | kDisconnected | kError | kConnectError);
  switch (level) {
    case SOL_SOCKET:
      if (is_timeout_option(name)) {
        // The rsocket's own kernel socket checks the value (EINVAL, EDOM)
        // and keeps it for getsockopt, rounded as the kernel rounds.
        if (::setsockopt(fd_, SOL_SOCKET, name, val, len) < 0) return -errno;
        (is_receive_timeout(name) ? opt_.rcvtimeo_us : opt_.sndtimeo_us) = timeout_us(val);
        return 0;
      }
      if (name == SO_LINGER) {
        if (!val) return -EFAULT;
        if (len < sizeof(linger)) return -EINVAL;
        linger l;
        memcpy(&l, val, sizeof l);
        opt_.linger = l.l_onoff != 0;
        opt_.linger_s = l.l_linger;
        return 0;
      }
      // A name not kept here says so before its value is read (upstream's
      // order): a value of another shape (SO_BINDTODEVICE's name) is not
      // an int.
      if (name != SO_REUSEADDR && name != SO_RCVBUF && name != SO_SNDBUF && name != SO_KEEPALIVE &&
          name != SO_OOBINLINE && name != SO_RCVLOWAT)
        return -ENOTSUP;
      if ((rc = read_int(val, len, &v))) return rc;
      switch (name) {
        case SO_REUSEADDR:
          if (::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &v, sizeof v) < 0) return -errno;
          opt_.reuseaddr = v != 0;
          return 0;
        case SO_RCVBUF:
          if (!rbuf_ && v > 0)
            opt_.rbuf_size = static_cast<uint32_t>(std::min(v, INT32_MAX / 2)) * 2;
          return 0;
        case SO_SNDBUF:
          if (!sbuf_ && v > 0)
            opt_.sbuf_size = std::max<uint32_t>(
                static_cast<uint32_t>(std::min(v, INT32_MAX / 2)) * 2, 2 * kSndLowat);
          return 0;
        case SO_KEEPALIVE:
          opt_.keepalive = v != 0;
          return 0;
        case SO_OOBINLINE:
          opt_.oobinline = v != 0;
          return 0;
        case SO_RCVLOWAT:
          // As Linux: a negative mark is the largest, 0 is 1, and none
          // above half the receive buffer (a full one must be readable).
          opt_.rcvlowat = std::clamp<int64_t>(v < 0 ? INT32_MAX : v, 1, opt_.rbuf_size / 2);
          kick_waiters();  // a lower mark may satisfy a receive or poll now
          return 0;
      }
      return -ENOTSUP;
    case IPPROTO_IP:
      if (name != IP_TOS) return -ENOTSUP;
      if ((rc = read_int(val, len, &v))) return rc;
      opt_.tos = v & 0xFF;
      return 0;
    case IPPROTO_TCP:
      if (name == TCP_CONGESTION) return 0;  // a name (any length): accepted and ignored
      if (name != TCP_NODELAY && name != TCP_KEEPIDLE && name != TCP_KEEPCNT &&
          name != TCP_KEEPINTVL && name != TCP_MAXSEG)
        return -ENOTSUP;
      if ((rc = read_int(val, len, &v))) return rc;
      switch (name) {
        case TCP_NODELAY:
          opt_.nodelay = v != 0;
          return 0;
        case TCP_KEEPIDLE:
          if (v <= 0) return -EINVAL;
          opt_.keepidle = static_cast<uint32_t>(v);
          return 0;
        case TCP_KEEPCNT:
        case TCP_KEEPINTVL:
        case TCP_MAXSEG:
          return 0;  // accepted and ignored, as upstream
      }
      return -ENOTSUP;
    case IPPROTO_IPV6:
      if (name != IPV6_V6ONLY) return -ENOTSUP;
      if ((rc = read_int(val, len, &v))) return rc;
      if (domain_ != AF_INET6) return -ENOPROTOOPT;
      if (::setsockopt(fd_, IPPROTO_IPV6, IPV6_V6ONLY, &v, sizeof v) < 0) {
        // Bound (Linux refuses any change then): the value it already
        // has is taken, as librspreload carries a bound listener's (the
        // kernel sets it binding to an IPv6 address).
        const int err = errno;
        int now = -1;
        socklen_t n = sizeof now;
        if (::getsockopt(fd_, IPPROTO_IPV6, IPV6_V6ONLY, &now, &n) < 0 || now != (v != 0))
          return -err;
      }
      opt_.v6only = v != 0;
      return 0;
    case SOL_RDMA:
      if (name == RDMA_ROUTE) {
        if (!val) return -EFAULT;
        if (len == 0 || len % sizeof(ibv_path_data)) return -EINVAL;
        if (opening) return -EINVAL;
        // Only the verbs provider follows path records.
        if (!prov::can_route()) return -ENOTSUP;
        opt_.route.assign(static_cast<const uint8_t*>(val), static_cast<const uint8_t*>(val) + len);
        return 0;
      }
      if ((rc = read_int(val, len, &v))) return rc;
      if (opening) return -EINVAL;
      switch (name) {
        case RDMA_SQSIZE:
          opt_.sq_size = std::min<uint32_t>(static_cast<uint32_t>(v), kQpMaxSize);
          return 0;
        case RDMA_RQSIZE:
          opt_.rq_size = std::min<uint32_t>(static_cast<uint32_t>(v), kQpMaxSize);
          return 0;
        case RDMA_INLINE:
          opt_.inline_size = std::min<uint32_t>(static_cast<uint32_t>(v), kQpMaxSize);
          return 0;
        case RDMA_IOMAPSIZE:
          if (v < 0) return -EINVAL;
          // Only sizes the 8-bit wire encoding can carry.
          opt_.iomap_size = decode_iomap_size(encode_iomap_size(std::min(v, 32512)));
          return 0;
      }
      return -ENOTSUP;
  }
  return -ENOTSUP;
}

int Socket::getsockopt(int level, int name, void* val, socklen_t* len) {
  std::lock_guard<FutexMutex> g(mu_);
  if (!len) return -EFAULT;
  switch (level) {
    case SOL_SOCKET:
      switch (name) {
        case SO_REUSEADDR:
          return write_int(val, len, opt_.reuseaddr);
        case SO_RCVBUF:
          return write_int(val, len, static_cast<int>(opt_.rbuf_size));
        case SO_SNDBUF:
          return write_int(val, len, static_cast<int>(opt_.sbuf_size));
        case SO_KEEPALIVE:
          return write_int(val, len, opt_.keepalive);
        case SO_OOBINLINE:
          return write_int(val, len, opt_.oobinline);
        case SO_RCVLOWAT:
          return write_int(val, len, opt_.rcvlowat);
        case SO_BROADCAST:
          return write_int(val, len, 0);
        case SO_TYPE:
          return write_int(val, len, SOCK_STREAM);
        case SO_DOMAIN:
          return write_int(val, len, domain_);
        case SO_ACCEPTCONN:
          return write_int(val, len, phase() == kListening);
        case SO_ERROR: {
          int e = err_;
          err_ = 0;
          return write_int(val, len, e);
        }
        case SO_LINGER: {
          linger l{opt_.linger, opt_.linger_s};
          return write_value(val, len, &l, sizeof l);
        }
      }
      if (is_timeout_option(name))
        return ::getsockopt(fd_, SOL_SOCKET, name, val, len) < 0 ? -errno : 0;
      return -ENOTSUP;
    case IPPROTO_IP:
      if (name == IP_TOS) return write_int(val, len, opt_.tos);
      return -ENOTSUP;
    case IPPROTO_TCP:
      switch (name) {
        case TCP_NODELAY:
          return write_int(val, len, opt_.nodelay);
        case TCP_KEEPIDLE:
          return write_int(val, len, static_cast<int>(opt_.keepidle));
        case TCP_KEEPCNT:
        case TCP_KEEPINTVL:
          return write_int(val, len, 1);  // ignored when set; upstream reads them as 1
        case TCP_MAXSEG:
          return write_int(val, len, 2048);
        case TCP_INFO: {
          tcp_info info{};
          info.tcpi_state = lingering()             ? TCP_FIN_WAIT2
                            : (state_ & kConnected) ? TCP_ESTABLISHED
                                                    : TCP_CLOSE;
          info.tcpi_snd_cwnd = opt_.sq_size;
          return write_value(val, len, &info, sizeof info);
        }
      }
      return -ENOTSUP;
    case IPPROTO_IPV6:
      if (name == IPV6_V6ONLY) return write_int(val, len, opt_.v6only);
      return -ENOTSUP;
    case SOL_RDMA:
      switch (name) {
        case RDMA_SQSIZE:
          return write_int(val, len, static_cast<int>(opt_.sq_size));
        case RDMA_RQSIZE:
          return write_int(val, len, static_cast<int>(opt_.rq_size));
        case RDMA_INLINE:
          return write_int(val, len, static_cast<int>(opt_.inline_size));
        case RDMA_IOMAPSIZE:
          return write_int(val, len, static_cast<int>(opt_.iomap_size));
        case RDMA_ROUTE:
          return get_route(val, len);
      }
      return -ENOTSUP;
  }
  return -ENOTSUP;
}

// The connection's path records, else the ones the application set.
int Socket::get_route(void* val, socklen_t* len) const {
  if (!val) return -EFAULT;
  if (ep_ && (ep_->caps() & prov::kCapRoute)) {
    size_t n = *len;
    int rc = ep_->route(val, &n);
    if (rc == 0) *len = static_cast<socklen_t>(n);
    return rc;
  }
  if (opt_.route.empty()) return -ENOTSUP;
  return write_value(val, len, opt_.route.data(), static_cast<socklen_t>(opt_.route.size()));
}

int Socket::fcntl(int cmd, long arg) {
  if (cmd == F_GETFD) return fd_flags_.load(std::memory_order_relaxed);
  std::lock_guard<FutexMutex> g(mu_);
  if (cmd == F_SETFD) {
    fd_flags_ = static_cast<int>(arg) & FD_CLOEXEC;
    // The descriptor is a real fd: exec must see the flag.
    return ::fcntl(fd_, F_SETFD, fd_flags_.load()) < 0 ? -errno : 0;
  }
  return status_flags_fcntl(cmd, arg, &nonblock_);
}

int Socket::queued_bytes(bool in) {
  Lock lk(mu_);
  if (phase() == kListening) return -EINVAL;
  if (!ep_ || !rbuf_) return 0;  // not connected yet: nothing either way
  if (!(state_ & kConnectError) && phase() != kConnecting) process_cq(lk);
  return static_cast<int>(in ? rbuf_queued_ : opt_.sbuf_size - sbuf_bytes_avail_);
}

namespace {
// A name as the socket's family gives it: an AF_INET6 socket reached by an
// IPv4 peer (a dual-stack listener's connection over shm) reports IPv4
// addresses as v4-mapped IPv6 ones, as the kernel's does.
int copy_name(int domain, sockaddr_storage ss, socklen_t ss_len, sockaddr* addr, socklen_t* len) {
  if (domain == AF_INET6 && ss.ss_family == AF_INET) {
    sockaddr_in in;
    memcpy(&in, &ss, sizeof in);
    sockaddr_in6 in6{};
    in6.sin6_family = AF_INET6;
    in6.sin6_port = in.sin_port;
    in6.sin6_addr.s6_addr[10] = 0xff;
    in6.sin6_addr.s6_addr[11] = 0xff;
    memcpy(&in6.sin6_addr.s6_addr[12], &in.sin_addr, 4);
    memcpy(&ss, &in6, sizeof in6);
    ss_len = sizeof in6;
  }
  socklen_t n = std::min(*len, ss_len);
  memcpy(addr, &ss, n);
  *len = ss_len;
  return 0;
}
}  // namespace

int Socket::getsockname(sockaddr* addr, socklen_t* len) {
  std::lock_guard<FutexMutex> g(mu_);
  if (!addr || !len) return -EFAULT;
  sockaddr_storage ss{};
  socklen_t ss_len = sizeof ss;
  // A connection's own name comes from its provider (shm has no kernel socket).
  int rc = ep_ ? ep_->local_name(&ss, &ss_len) : -ENOTCONN;
  if (rc && exec_name_len_) return copy_name(domain_, exec_name_, exec_name_len_, addr, len);
  if (rc && ::getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &ss_len) < 0) return -errno;
  return copy_name(domain_, ss, ss_len, addr, len);
}

int Socket::getpeername(sockaddr* addr, socklen_t* len) {
  std::lock_guard<FutexMutex> g(mu_);
  if (!addr || !len) return -EFAULT;
  if (!(state_ & (kConnected | kDisconnected | kError))) return -ENOTCONN;
  if (peer_len_) return copy_name(domain_, peer_addr_, peer_len_, addr, len);
  sockaddr_storage ss{};
  socklen_t ss_len = sizeof ss;
  if (!ep_ || ep_->peer_name(&ss, &ss_len)) return -ENOTCONN;
  return copy_name(domain_, ss, ss_len, addr, len);
}

}  // namespace ss::rs
