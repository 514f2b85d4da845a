// The C ABI edge: the 27 r-functions of librdmacm's RDMACM_1.0 node.
// Internals return -errno; here that becomes -1 and errno. Nothing throws.
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstring>

#include "core/base/fd_table.h"
#include "include/rdma/rsocket.h"
#include "librsocket/fork.h"
#include "librsocket/poll.h"
#include "librsocket/socket.h"

#define SS_EXPORT extern "C" __attribute__((visibility("default")))

using ss::FdKind;
using ss::FdTable;
using ss::rs::Socket;

namespace {

template <typename T>
T ret(T rc) {
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

}  // namespace

SS_EXPORT int rsocket(int domain, int type, int protocol) {
  const int flags = type & (SOCK_NONBLOCK | SOCK_CLOEXEC);
  type &= ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (domain != AF_INET && domain != AF_INET6) return ret(-EAFNOSUPPORT);
  if (type == SOCK_DGRAM) return ret(-ENOTSUP);  // datagram rsockets: not yet
  if (type != SOCK_STREAM) return ret(-ESOCKTNOSUPPORT);
  if (protocol != 0 && protocol != IPPROTO_TCP) return ret(-EPROTONOSUPPORT);
  // A kernel socket names the rsocket: a unique descriptor, the port
  // reservation, and the connection manager's stream for software providers.
  int fd = ::socket(domain, SOCK_STREAM | SOCK_NONBLOCK | (flags & SOCK_CLOEXEC), 0);
  if (fd < 0) return -1;
  auto s = std::make_shared<Socket>(fd, domain);
  if (flags & SOCK_NONBLOCK) s->fcntl(F_SETFL, O_NONBLOCK);
  if (flags & SOCK_CLOEXEC) s->fcntl(F_SETFD, FD_CLOEXEC);
  int rc = FdTable::instance().insert(fd, FdKind::kRsocket, s);
  if (rc) {
    ::close(fd);
    return ret(rc);
  }
  return fd;
}

SS_EXPORT int rbind(int socket, const struct sockaddr* addr, socklen_t addrlen) {
  auto s = lookup(socket);
  return s ? ret(s->bind(addr, addrlen)) : ret(-EBADF);
}

SS_EXPORT int rlisten(int socket, int backlog) {
  auto s = lookup(socket);
  return s ? ret(s->listen(backlog)) : ret(-EBADF);
}

static int accept_common(int socket, struct sockaddr* addr, socklen_t* addrlen, int flags) {
  auto s = lookup(socket);
  if (!s) return ret(-EBADF);
  std::shared_ptr<Socket> child;
  int rc = s->accept(&child, addr, addrlen, flags);
  if (rc) return ret(rc);
  {
    ss::rs::fork::TableGuard table;  // a fork sees it in the table and counted, or neither
    rc = FdTable::instance().insert(child->fd(), FdKind::kRsocket, child);
    if (!rc) child->join_processes();
  }
  if (rc) {
    child->close();
    return ret(rc);
  }
  return child->fd();
}

SS_EXPORT int raccept(int socket, struct sockaddr* addr, socklen_t* addrlen) {
  return accept_common(socket, addr, addrlen, 0);
}

SS_EXPORT int rconnect(int socket, const struct sockaddr* addr, socklen_t addrlen) {
  auto s = lookup(socket);
  return s ? ret(s->connect(addr, addrlen)) : ret(-EBADF);
}

SS_EXPORT int rshutdown(int socket, int how) {
  auto s = lookup(socket);
  return s ? ret(s->shutdown(how)) : ret(-EBADF);
}

SS_EXPORT int rclose(int socket) {
  std::shared_ptr<Socket> s;
  {
    ss::rs::fork::TableGuard table;  // a fork sees it in the table and counted, or neither
    s = FdTable::instance().remove<Socket>(socket, FdKind::kRsocket);
    if (s) s->leave_processes();
  }
  if (!s) return ret(-EBADF);  // upstream returns a positive EBADF here
  s->close();
  return 0;
}

SS_EXPORT ssize_t rrecv(int socket, void* buf, size_t len, int flags) {
  auto s = lookup(socket);
  if (!s) return ret<ssize_t>(-EBADF);
  if (!buf && len) return ret<ssize_t>(-EFAULT);
  return ret(s->recv(buf, len, flags));
}

SS_EXPORT ssize_t rrecvfrom(int socket, void* buf, size_t len, int flags,
                            struct sockaddr* src_addr, socklen_t* addrlen) {
  ssize_t n = rrecv(socket, buf, len, flags);
  if (n >= 0 && src_addr && addrlen) *addrlen = 0;  // stream: no source address
  return n;
}

SS_EXPORT ssize_t rrecvmsg(int socket, struct msghdr* msg, int flags) {
  auto s = lookup(socket);
  if (!s) return ret<ssize_t>(-EBADF);
  if (!msg) return ret<ssize_t>(-EFAULT);
  if (msg->msg_iovlen > IOV_MAX) return ret<ssize_t>(-EMSGSIZE);
  ssize_t n = s->recvv(msg->msg_iov, static_cast<int>(msg->msg_iovlen), flags);
  if (n >= 0) {
    msg->msg_flags = 0;
    msg->msg_controllen = 0;
    msg->msg_namelen = 0;
  }
  return ret(n);
}

SS_EXPORT ssize_t rsend(int socket, const void* buf, size_t len, int flags) {
  auto s = lookup(socket);
  if (!s) return ret<ssize_t>(-EBADF);
  if (!buf && len) return ret<ssize_t>(-EFAULT);
  return ret(s->send(buf, len, flags));
}

SS_EXPORT ssize_t rsendto(int socket, const void* buf, size_t len, int flags,
                          const struct sockaddr* dest_addr, socklen_t addrlen) {
  if (dest_addr || addrlen) {
    if (!lookup(socket)) return ret<ssize_t>(-EBADF);
    return ret<ssize_t>(-EISCONN);  // a stream socket has its peer already
  }
  return rsend(socket, buf, len, flags);
}

SS_EXPORT ssize_t rsendmsg(int socket, const struct msghdr* msg, int flags) {
  auto s = lookup(socket);
  if (!s) return ret<ssize_t>(-EBADF);
  if (!msg) return ret<ssize_t>(-EFAULT);
  if (msg->msg_controllen) return ret<ssize_t>(-ENOTSUP);  // no ancillary data
  if (msg->msg_iovlen > IOV_MAX) return ret<ssize_t>(-EMSGSIZE);
  return ret(s->sendv(msg->msg_iov, static_cast<int>(msg->msg_iovlen), flags));
}

SS_EXPORT ssize_t rread(int socket, void* buf, size_t count) {
  return rrecv(socket, buf, count, 0);
}

SS_EXPORT ssize_t rreadv(int socket, const struct iovec* iov, int iovcnt) {
  auto s = lookup(socket);
  if (!s) return ret<ssize_t>(-EBADF);
  if (iovcnt < 0 || iovcnt > IOV_MAX) return ret<ssize_t>(-EINVAL);
  return ret(s->recvv(iov, iovcnt, 0));
}

SS_EXPORT ssize_t rwrite(int socket, const void* buf, size_t count) {
  return rsend(socket, buf, count, 0);
}

SS_EXPORT ssize_t rwritev(int socket, const struct iovec* iov, int iovcnt) {
  auto s = lookup(socket);
  if (!s) return ret<ssize_t>(-EBADF);
  if (iovcnt < 0 || iovcnt > IOV_MAX) return ret<ssize_t>(-EINVAL);
  return ret(s->sendv(iov, iovcnt, 0));
}

SS_EXPORT int rpoll(struct pollfd* fds, nfds_t nfds, int timeout) {
  return ret(ss::rs::poll(fds, nfds, timeout));
}

SS_EXPORT int rselect(int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds,
                      struct timeval* timeout) {
  return ret(ss::rs::select(nfds, readfds, writefds, exceptfds, timeout));
}

SS_EXPORT int rgetpeername(int socket, struct sockaddr* addr, socklen_t* addrlen) {
  auto s = lookup(socket);
  return s ? ret(s->getpeername(addr, addrlen)) : ret(-EBADF);
}

SS_EXPORT int rgetsockname(int socket, struct sockaddr* addr, socklen_t* addrlen) {
  auto s = lookup(socket);
  return s ? ret(s->getsockname(addr, addrlen)) : ret(-EBADF);
}

SS_EXPORT int rsetsockopt(int socket, int level, int optname, const void* optval,
                          socklen_t optlen) {
  auto s = lookup(socket);
  return s ? ret(s->setsockopt(level, optname, optval, optlen)) : ret(-EBADF);
}

SS_EXPORT int rgetsockopt(int socket, int level, int optname, void* optval, socklen_t* optlen) {
  auto s = lookup(socket);
  return s ? ret(s->getsockopt(level, optname, optval, optlen)) : ret(-EBADF);
}

SS_EXPORT int rfcntl(int socket, int cmd, ...) {
  auto s = lookup(socket);
  if (!s) return ret(-EBADF);
  va_list ap;
  va_start(ap, cmd);
  long arg = (cmd == F_SETFL || cmd == F_SETFD) ? va_arg(ap, long) : 0;
  va_end(ap);
  return ret(s->fcntl(cmd, arg));
}

SS_EXPORT off_t riomap(int socket, void* buf, size_t len, int prot, int flags, off_t offset) {
  auto s = lookup(socket);
  return s ? ret(s->iomap(buf, len, prot, flags, offset)) : ret<off_t>(-EBADF);
}

SS_EXPORT int riounmap(int socket, void* buf, size_t len) {
  auto s = lookup(socket);
  return s ? ret(s->iounmap(buf, len)) : ret(-EBADF);
}

SS_EXPORT size_t riowrite(int socket, const void* buf, size_t count, off_t offset, int flags) {
  auto s = lookup(socket);
  if (!s) {
    errno = EBADF;
    return static_cast<size_t>(-1);
  }
  ssize_t n = s->iowrite(buf, count, offset, flags);
  if (n < 0) {
    errno = static_cast<int>(-n);
    return static_cast<size_t>(-1);
  }
  return static_cast<size_t>(n);
}
