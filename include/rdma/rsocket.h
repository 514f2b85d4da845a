/* Slipstream: rsocket API, ABI-compatible with rdma-core librdmacm's
 * <rdma/rsocket.h> (symbols under version node RDMACM_1.0).
 * See rsocket(7). */
#ifndef SLIPSTREAM_RDMA_RSOCKET_H
#define SLIPSTREAM_RDMA_RSOCKET_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <sys/socket.h>
#include <errno.h>
#include <stdint.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/mman.h>

/* Slipstream: no call throws. The calls that never block are noexcept for
 * C++ callers; those that block (accept, connect, close, the reads and
 * writes, poll, select) are cancellation points, as their socket calls are,
 * and are declared without it, as glibc declares those: pthread_cancel
 * unwinds a thread blocked in one. */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define RSOCKET_NOEXCEPT noexcept
#else
#define RSOCKET_NOEXCEPT
#endif

#ifdef __cplusplus
extern "C" {
#endif

int rsocket(int domain, int type, int protocol) RSOCKET_NOEXCEPT;
int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen) RSOCKET_NOEXCEPT;
int rlisten(int socket, int backlog) RSOCKET_NOEXCEPT;
int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen);
int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen);
int rshutdown(int socket, int how) RSOCKET_NOEXCEPT;
int rclose(int socket);

ssize_t rrecv(int socket, void *buf, size_t len, int flags);
ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
                  struct sockaddr *src_addr, socklen_t *addrlen);
ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags);
ssize_t rsend(int socket, const void *buf, size_t len, int flags);
ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
                const struct sockaddr *dest_addr, socklen_t addrlen);
ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags);
ssize_t rread(int socket, void *buf, size_t count);
ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt);
ssize_t rwrite(int socket, const void *buf, size_t count);
ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt);

int rpoll(struct pollfd *fds, nfds_t nfds, int timeout);
int rselect(int nfds, fd_set *readfds, fd_set *writefds,
            fd_set *exceptfds, struct timeval *timeout);

int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen) RSOCKET_NOEXCEPT;
int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen) RSOCKET_NOEXCEPT;

#define SOL_RDMA 0x10000
enum {
  RDMA_SQSIZE,
  RDMA_RQSIZE,
  RDMA_INLINE,
  RDMA_IOMAPSIZE,
  RDMA_ROUTE
};

/* Slipstream extension, not in librdmacm: rgetsockopt(fd, SOL_RDMA,
 * SS_DGRAM_DROPS, &drops, &len) on a datagram rsocket gives what it
 * dropped (rsocket(7), rgetsockopt(3)). */
#define SS_DGRAM_DROPS 0x5344
struct ss_dgram_drops {
  uint64_t overflow;  /* the receive ring was full (as of the last datagram received) */
  uint64_t malformed; /* not a datagram of ours: short, wrong tag or header, family mismatch */
};

int rsetsockopt(int socket, int level, int optname,
                const void *optval, socklen_t optlen) RSOCKET_NOEXCEPT;
int rgetsockopt(int socket, int level, int optname,
                void *optval, socklen_t *optlen) RSOCKET_NOEXCEPT;
int rfcntl(int socket, int cmd, ... /* arg */) RSOCKET_NOEXCEPT;

off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset) RSOCKET_NOEXCEPT;
int riounmap(int socket, void *buf, size_t len) RSOCKET_NOEXCEPT;
size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags);

#ifdef __cplusplus
}
#endif

#endif /* SLIPSTREAM_RDMA_RSOCKET_H */
