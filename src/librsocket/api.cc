// The C ABI edge: the 27 r-functions of librdmacm's RDMACM_1.0 node.
// Internals return -errno; here that becomes -1 and errno (edge), and no
// exception crosses: every function is noexcept.
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <exception>
#include <utility>

#include "include/rdma/rsocket.h"
#include "core/base/cancel.h"
#include "core/base/exception_errno.h"
#include "core/base/fd_table.h"
#include "core/base/msghdr_of.h"
#include "librsocket/dgram_dispatch.h"
#include "librsocket/fork.h"
#include "librsocket/poll.h"
#include "librsocket/socket.h"

#define SS_EXPORT extern "C" __attribute__((visibility("default")))

using ss::FdKind;
using ss::FdTable;
using ss::iov_only;
using ss::one_buffer;
using ss::rs::DgramSocket;
using ss::rs::Socket;

namespace {

// Every call's one way out: BODY returns a count or -errno, the caller gets
// that count, or -1 and errno. Nothing inside throws on purpose, but `new`,
// std::vector and std::thread may: their exceptions stop here as the errno
// they stand for (core/base/exception_errno.h).
//
// The calls that block are cancellation points, as their socket calls are
// (core/base/cancel.h): not noexcept, exactly as glibc declares accept,
// connect, recv, send, read, write, poll, select and close without
// __THROW: noexcept would turn a cancellation into std::terminate.
using ss::Cancel;

template <Cancel C = Cancel::kNo, typename Body>
auto edge(Body&& body) noexcept(C == Cancel::kNo) -> decltype(body()) {
  using T = decltype(body());
  T rc;
  const ss::NoCancelScope no_cancel(C == Cancel::kPoint);  // acts in the sleeps only
  try {
    rc = body();
  } catch (abi::__forced_unwind&) {
    ss::forced_unwind_onward<C>();
  } catch (...) {
    rc = -ss::current_exception_errno();
  }
  if (rc < 0) {
    errno = static_cast<int>(-rc);
    return static_cast<T>(-1);
  }
  return rc;
}

std::shared_ptr<Socket> lookup(int fd) {
  ss::rs::fork::resume_services();
  return FdTable::instance().get<Socket>(fd, FdKind::kRsocket);
}

// edge() around STREAM or DGRAM on fd's rsocket of that type; EBADF when
// fd is neither. `check` (0 or -errno) vets the arguments first, once fd
// is known to be an rsocket, as the kernel looks at the descriptor first.
// A close another thread made while STREAM sent or received is done when
// the last such call is over (Socket::defer_close), cancelled or not.
template <Cancel C = Cancel::kNo, typename Stream, typename Dgram>
auto on_either(int fd, Stream&& stream, Dgram&& dgram, int check = 0) noexcept(C == Cancel::kNo) {
  struct CloseAfter {
    Socket& s;
    ~CloseAfter() {
      try {
        if (s.take_deferred_close()) s.close();
      } catch (...) {  // out of memory in a destructor: the close is lost, not the process
      }
    }
  };
  return edge<C>([&]() -> decltype(stream(std::declval<Socket&>())) {
    if (auto s = lookup(fd)) {
      if (check) return check;
      CloseAfter after{*s};
      return stream(*s);
    }
    if (auto d = ss::rs::lookup_dgram(fd)) return check ? check : dgram(*d);
    return -EBADF;
  });
}

// What a datagram rsocket does not do (listen, accept, riomap).
template <typename T = int>
T not_on_datagrams(DgramSocket&) {
  return -EOPNOTSUPP;
}

int accept_common(int socket, struct sockaddr* addr, socklen_t* addrlen, int flags) {
  auto s = lookup(socket);
  if (!s) return ss::rs::lookup_dgram(socket) ? -EOPNOTSUPP : -EBADF;
  std::shared_ptr<Socket> child;
  int rc = s->accept(&child, addr, addrlen, flags);
  if (rc) return rc;
  {
    ss::rs::fork::TableGuard table;  // a fork sees it in the table and counted, or neither
    rc = FdTable::instance().insert(child->fd(), FdKind::kRsocket, child);
    if (!rc) child->join_processes();
  }
  if (rc) {
    child->close();
    return rc;
  }
  return child->fd();
}

}  // namespace

SS_EXPORT int rsocket(int domain, int type, int protocol) noexcept {
  return edge([&] {
    const int flags = type & (SOCK_NONBLOCK | SOCK_CLOEXEC);
    type &= ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (domain != AF_INET && domain != AF_INET6) return -EAFNOSUPPORT;
    if (type == SOCK_DGRAM) {
      if (protocol != 0 && protocol != IPPROTO_UDP) return -EPROTONOSUPPORT;
      std::shared_ptr<DgramSocket> d;
      if (int rc = DgramSocket::create(domain, flags, &d)) return rc;
      // On failure the object closes its descriptor.
      if (int rc = FdTable::instance().insert(d->fd(), FdKind::kRsocketDgram, d)) return rc;
      return d->fd();
    }
    if (type != SOCK_STREAM) return -ESOCKTNOSUPPORT;
    if (protocol != 0 && protocol != IPPROTO_TCP) return -EPROTONOSUPPORT;
    // A kernel socket names the rsocket: a unique descriptor, the port
    // reservation, and the connection manager's stream for software providers.
    int fd = ::socket(domain, SOCK_STREAM | SOCK_NONBLOCK | (flags & SOCK_CLOEXEC), 0);
    if (fd < 0) return -errno;
    int rc;
    try {
      auto s = std::make_shared<Socket>(fd, domain);
      if (flags & SOCK_NONBLOCK) s->fcntl(F_SETFL, O_NONBLOCK);
      if (flags & SOCK_CLOEXEC) s->fcntl(F_SETFD, FD_CLOEXEC);
      rc = FdTable::instance().insert(fd, FdKind::kRsocket, s);
    } catch (...) {  // the descriptor is ours until the table holds it
      ::close(fd);
      throw;
    }
    if (rc) {
      ::close(fd);
      return rc;
    }
    return fd;
  });
}

SS_EXPORT int rbind(int socket, const struct sockaddr* addr, socklen_t addrlen) noexcept {
  return on_either(
      socket, [&](Socket& s) { return s.bind(addr, addrlen); },
      [&](DgramSocket& d) { return d.bind(addr, addrlen); });
}

SS_EXPORT int rlisten(int socket, int backlog) noexcept {
  return on_either(
      socket, [&](Socket& s) { return s.listen(backlog); }, not_on_datagrams<>);
}

SS_EXPORT int raccept(int socket, struct sockaddr* addr, socklen_t* addrlen) {
  return edge<Cancel::kPoint>([&] { return accept_common(socket, addr, addrlen, 0); });
}

SS_EXPORT int rconnect(int socket, const struct sockaddr* addr, socklen_t addrlen) {
  return on_either<Cancel::kPoint>(
      socket, [&](Socket& s) { return s.connect(addr, addrlen); },
      [&](DgramSocket& d) { return d.connect(addr, addrlen); });
}

SS_EXPORT int rshutdown(int socket, int how) noexcept {
  return on_either(
      socket, [&](Socket& s) { return s.shutdown(how); },
      [&](DgramSocket& d) { return d.shutdown(how); });
}

SS_EXPORT int rclose(int socket) {
  return edge<Cancel::kPoint>([&] {
    // In a fork child, an inherited verbs connection is cut loose before
    // its close (which must not reach the parent's endpoint), and a close
    // racing another thread's clean-up waits for it.
    ss::rs::fork::resume_services();
    std::shared_ptr<Socket> s;
    bool deferred = false;
    {
      // A fork sees it in the table and counted, or its close deferred
      // (done in the child), or neither.
      ss::rs::fork::TableGuard table;
      s = FdTable::instance().remove<Socket>(socket, FdKind::kRsocket);
      if (s) {
        s->leave_processes();
        deferred = s->defer_close();
      }
    }
    if (!s) {
      auto d = FdTable::instance().remove<DgramSocket>(socket, FdKind::kRsocketDgram);
      if (!d) return -EBADF;  // upstream returns a positive EBADF here
      d->close();             // the descriptor closes with the last call using it
      return 0;
    }
    if (!deferred) s->close();  // else the call using it closes it (on_either)
    return 0;
  });
}

SS_EXPORT ssize_t rrecvfrom(int socket, void* buf, size_t len, int flags, struct sockaddr* src_addr,
                            socklen_t* addrlen) {
  return on_either<Cancel::kPoint>(
      socket,
      [&](Socket& s) -> ssize_t {
        ssize_t n = s.recv(buf, len, flags);
        if (n >= 0 && src_addr && addrlen) *addrlen = 0;  // stream: no source address
        return n;
      },
      [&](DgramSocket& d) -> ssize_t {
        if (src_addr && !addrlen) return -EFAULT;
        iovec iov;
        msghdr m = one_buffer(&iov, buf, len, src_addr, src_addr ? *addrlen : 0);
        ssize_t n = d.recv(&m, flags);
        if (n >= 0 && src_addr) *addrlen = m.msg_namelen;
        return n;
      },
      !buf && len ? -EFAULT : 0);
}

SS_EXPORT ssize_t rrecv(int socket, void* buf, size_t len, int flags) {
  return rrecvfrom(socket, buf, len, flags, nullptr, nullptr);
}

SS_EXPORT ssize_t rrecvmsg(int socket, struct msghdr* msg, int flags) {
  return on_either<Cancel::kPoint>(
      socket,
      [&](Socket& s) -> ssize_t {
        if (msg->msg_iovlen > IOV_MAX) return -EMSGSIZE;
        ssize_t n = s.recvv(msg->msg_iov, static_cast<int>(msg->msg_iovlen), flags);
        if (n >= 0) {
          msg->msg_flags = 0;
          msg->msg_controllen = 0;
          msg->msg_namelen = 0;
        }
        return n;
      },
      [&](DgramSocket& d) -> ssize_t { return d.recv(msg, flags); }, msg ? 0 : -EFAULT);
}

SS_EXPORT ssize_t rsendto(int socket, const void* buf, size_t len, int flags,
                          const struct sockaddr* dest_addr, socklen_t addrlen) {
  return on_either<Cancel::kPoint>(
      socket,
      [&](Socket& s) -> ssize_t {
        if (dest_addr || addrlen) return -EISCONN;  // a stream socket has its peer already
        return s.send(buf, len, flags);
      },
      [&](DgramSocket& d) -> ssize_t {
        iovec iov;
        return d.send(one_buffer(&iov, buf, len, dest_addr, addrlen), flags);
      },
      !buf && len ? -EFAULT : 0);
}

SS_EXPORT ssize_t rsend(int socket, const void* buf, size_t len, int flags) {
  return rsendto(socket, buf, len, flags, nullptr, 0);
}

SS_EXPORT ssize_t rsendmsg(int socket, const struct msghdr* msg, int flags) {
  return on_either<Cancel::kPoint>(
      socket,
      [&](Socket& s) -> ssize_t {
        if (msg->msg_controllen) return -ENOTSUP;  // no ancillary data
        if (msg->msg_iovlen > IOV_MAX) return -EMSGSIZE;
        return s.sendv(msg->msg_iov, static_cast<int>(msg->msg_iovlen), flags);
      },
      [&](DgramSocket& d) -> ssize_t { return d.send(*msg, flags); }, msg ? 0 : -EFAULT);
}

SS_EXPORT ssize_t rread(int socket, void* buf, size_t count) {
  return rrecv(socket, buf, count, 0);
}

SS_EXPORT ssize_t rreadv(int socket, const struct iovec* iov, int iovcnt) {
  return on_either<Cancel::kPoint>(
      socket, [&](Socket& s) -> ssize_t { return s.recvv(iov, iovcnt, 0); },
      [&](DgramSocket& d) -> ssize_t {
        msghdr m = iov_only(iov, iovcnt);
        return d.recv(&m, 0);
      },
      iovcnt<0 || iovcnt> IOV_MAX ? -EINVAL : 0);
}

SS_EXPORT ssize_t rwrite(int socket, const void* buf, size_t count) {
  return rsend(socket, buf, count, 0);
}

SS_EXPORT ssize_t rwritev(int socket, const struct iovec* iov, int iovcnt) {
  return on_either<Cancel::kPoint>(
      socket, [&](Socket& s) -> ssize_t { return s.sendv(iov, iovcnt, 0); },
      [&](DgramSocket& d) -> ssize_t {
        msghdr m = iov_only(iov, iovcnt);
        return d.send(m, 0);
      },
      iovcnt<0 || iovcnt> IOV_MAX ? -EINVAL : 0);
}

SS_EXPORT int rpoll(struct pollfd* fds, nfds_t nfds, int timeout) {
  return edge<Cancel::kPoint>([&] { return ss::rs::poll(fds, nfds, timeout); });
}

SS_EXPORT int rselect(int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds,
                      struct timeval* timeout) {
  return edge<Cancel::kPoint>(
      [&] { return ss::rs::select(nfds, readfds, writefds, exceptfds, timeout); });
}

SS_EXPORT int rgetpeername(int socket, struct sockaddr* addr, socklen_t* addrlen) noexcept {
  return on_either(
      socket, [&](Socket& s) { return s.getpeername(addr, addrlen); },
      [&](DgramSocket& d) { return d.getpeername(addr, addrlen); });
}

SS_EXPORT int rgetsockname(int socket, struct sockaddr* addr, socklen_t* addrlen) noexcept {
  return on_either(
      socket, [&](Socket& s) { return s.getsockname(addr, addrlen); },
      [&](DgramSocket& d) { return d.getsockname(addr, addrlen); });
}

SS_EXPORT int rsetsockopt(int socket, int level, int optname, const void* optval,
                          socklen_t optlen) noexcept {
  return on_either(
      socket, [&](Socket& s) { return s.setsockopt(level, optname, optval, optlen); },
      [&](DgramSocket& d) { return d.setsockopt(level, optname, optval, optlen); });
}

SS_EXPORT int rgetsockopt(int socket, int level, int optname, void* optval,
                          socklen_t* optlen) noexcept {
  return on_either(
      socket, [&](Socket& s) { return s.getsockopt(level, optname, optval, optlen); },
      [&](DgramSocket& d) { return d.getsockopt(level, optname, optval, optlen); });
}

SS_EXPORT int rfcntl(int socket, int cmd, ...) noexcept {
  va_list ap;
  va_start(ap, cmd);
  long arg = (cmd == F_SETFL || cmd == F_SETFD) ? va_arg(ap, long) : 0;
  va_end(ap);
  return on_either(
      socket, [&](Socket& s) { return s.fcntl(cmd, arg); },
      [&](DgramSocket& d) { return d.fcntl(cmd, arg); });
}

SS_EXPORT off_t riomap(int socket, void* buf, size_t len, int prot, int flags,
                       off_t offset) noexcept {
  return on_either(
      socket, [&](Socket& s) -> off_t { return s.iomap(buf, len, prot, flags, offset); },
      not_on_datagrams<off_t>);
}

SS_EXPORT int riounmap(int socket, void* buf, size_t len) noexcept {
  return on_either(
      socket, [&](Socket& s) { return s.iounmap(buf, len); }, not_on_datagrams<>);
}

// size_t, yet upstream's failure is (size_t)-1 with errno, as edge gives.
SS_EXPORT size_t riowrite(int socket, const void* buf, size_t count, off_t offset, int flags) {
  return static_cast<size_t>(on_either<Cancel::kPoint>(
      socket, [&](Socket& s) -> ssize_t { return s.iowrite(buf, count, offset, flags); },
      not_on_datagrams<ssize_t>));
}

// librspreload's private names for the same functions (rsocket_own.h):
// in a program linked with upstream's librdmacm, the public names reach
// librdmacm's definitions first.
#define SS_OWN_ALIAS(f) \
  extern "C" __attribute__((visibility("default"), alias(#f))) decltype(f) ss_rs_##f;
SS_OWN_ALIAS(rsocket)
SS_OWN_ALIAS(rbind)
SS_OWN_ALIAS(rlisten)
SS_OWN_ALIAS(raccept)
SS_OWN_ALIAS(rconnect)
SS_OWN_ALIAS(rshutdown)
SS_OWN_ALIAS(rclose)
SS_OWN_ALIAS(rrecv)
SS_OWN_ALIAS(rrecvfrom)
SS_OWN_ALIAS(rrecvmsg)
SS_OWN_ALIAS(rsend)
SS_OWN_ALIAS(rsendto)
SS_OWN_ALIAS(rsendmsg)
SS_OWN_ALIAS(rread)
SS_OWN_ALIAS(rreadv)
SS_OWN_ALIAS(rwrite)
SS_OWN_ALIAS(rwritev)
SS_OWN_ALIAS(rpoll)
SS_OWN_ALIAS(rselect)
SS_OWN_ALIAS(rgetpeername)
SS_OWN_ALIAS(rgetsockname)
SS_OWN_ALIAS(rsetsockopt)
SS_OWN_ALIAS(rgetsockopt)
SS_OWN_ALIAS(rfcntl)
SS_OWN_ALIAS(riomap)
SS_OWN_ALIAS(riounmap)
SS_OWN_ALIAS(riowrite)
