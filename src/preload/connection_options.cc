// A kernel TCP socket (ss_rspreload_options_fd: the descriptor itself, or
// one beside shm's accepted unix stream) takes every option first, so the
// kernel checks the value and keeps it, and answers every option the
// rsocket does not keep (SO_BINDTODEVICE, SO_PROTOCOL, TCP_USER_TIMEOUT,
// IP_TTL, ...); the rsocket then acts on the ones it keeps. That kernel
// socket is not connected: what the kernel says from a connection's state
// comes from the rsocket's (interpose/connected_options.h).
#include "preload/connection_options.h"

#include <linux/filter.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "interpose/connected_options.h"
#include "interpose/program_memory.h"
#include "interpose/real.h"
#include "librsocket/preload_hooks.h"
#include "librsocket/rsocket_own.h"

namespace ss::preload {
namespace {

// Not given to the kernel socket: the options that would change how it
// carries frames (a receive low mark, a cork, a linger, a filter, an
// upper layer): the rsocket's own (SO_RCVLOWAT, SO_LINGER), or
// EOPNOTSUPP with the kernel's default read; set to the value they read
// (a change of nothing), taken.
bool transport_only(int level, int name) {
  if (level == SOL_SOCKET)
    return name == SO_LINGER || name == SO_RCVLOWAT || name == SO_ATTACH_FILTER ||
           name == SO_ATTACH_BPF || name == SO_LOCK_FILTER || name == SO_ZEROCOPY ||
           name == SO_ATTACH_REUSEPORT_CBPF || name == SO_ATTACH_REUSEPORT_EBPF ||
           name == SO_PEEK_OFF;
  if (level == IPPROTO_TCP)
    return name == TCP_CORK || name == TCP_ULP || name == TCP_REPAIR || name == TCP_REPAIR_QUEUE ||
           name == TCP_REPAIR_OPTIONS || name == TCP_QUEUE_SEQ || name == TCP_INQ;
  return false;
}

// Whether a value of len bytes has a shape Linux refuses (EINVAL) for a
// transport-only option, before anything else: a filter program's header
// of another size, an empty name, less than an int.
bool malformed(int level, int name, socklen_t len) {
  if (level == SOL_SOCKET && (name == SO_ATTACH_FILTER || name == SO_ATTACH_REUSEPORT_CBPF))
    return len != sizeof(sock_fprog);
  if (level == IPPROTO_TCP && name == TCP_ULP) return len < 1;
  return len < sizeof(int);
}

// The keepalive timers: the rsocket's probes use the idle time alone and
// read the other two as 1 (upstream's); the kernel keeps all three.
bool kernel_reads(int level, int name) {
  return level == IPPROTO_TCP &&
         (name == TCP_KEEPIDLE || name == TCP_KEEPINTVL || name == TCP_KEEPCNT);
}

int fail(int err) {
  errno = err;
  return -1;
}

// Whether the program's (val, len), readable, is what the option reads
// already: a set that changes nothing.
bool unchanged(int fd, int level, int name, const void* val, socklen_t len) {
  if (len > 512) return false;
  std::vector<char> now(len);
  socklen_t n = len;
  return connection_getsockopt(fd, level, name, now.data(), &n) == 0 && n == len &&
         memcmp(now.data(), val, len) == 0;
}

}  // namespace

int connection_getsockopt(int fd, int level, int name, void* val, socklen_t* len) {
  const auto& k = interpose::real();
  const int kfd = ss_rspreload_options_fd(fd);
  if (kfd < 0) return -1;
  if (!len) return fail(EFAULT);
  if (kernel_reads(level, name)) return k.getsockopt(kfd, level, name, val, len);
  if (interpose::answered_by_connection(level, name)) {
    int domain = 0;
    socklen_t n = sizeof domain;
    rgetsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &n);
    sockaddr_storage peer{};
    socklen_t peer_len = sizeof peer;
    if (rgetpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len)) peer_len = 0;
    return interpose::connection_getsockopt(domain, peer, peer_len, level, name, val, len);
  }
  if (level == IPPROTO_TCP && name == TCP_INFO) {
    // The kernel's (the transport's counters on tcp, none on shm) with
    // the connection's state.
    if (k.getsockopt(kfd, level, name, val, len) < 0) return -1;
    tcp_info mine{};
    socklen_t n = sizeof mine;
    if (*len >= 1 && rgetsockopt(fd, level, name, &mine, &n) == 0)
      static_cast<uint8_t*>(val)[0] = mine.tcpi_state;
    return 0;
  }
  const int rc = rgetsockopt(fd, level, name, val, len);
  if (rc < 0 && (errno == ENOTSUP || errno == ENOPROTOOPT))
    return k.getsockopt(kfd, level, name, val, len);
  return rc;
}

int connection_setsockopt(int fd, int level, int name, const void* val, socklen_t len) {
  const bool own = transport_only(level, name);
  const int kfd = own ? fd : ss_rspreload_options_fd(fd);
  if (kfd < 0) return -1;
  if (own && malformed(level, name, len)) return fail(EINVAL);
  if (own && !interpose::program_readable(val, len)) return fail(EFAULT);
  if (!own && interpose::refused_once_connected(level, name))
    return interpose::refuse_on_connection(kfd, level, name, val, len);
  if (!own && interpose::real().setsockopt(kfd, level, name, val, len) < 0) return -1;
  const int rc = rsetsockopt(fd, level, name, val, len);
  if (rc < 0 && (errno == ENOTSUP || errno == ENOPROTOOPT)) {
    if (!own) return 0;  // the kernel's alone
    const int err = errno;
    if (unchanged(fd, level, name, val, len)) {
      // Repair mode off, as it is, is still a privileged set: the
      // kernel's answer (EPERM without CAP_NET_ADMIN).
      if (level == IPPROTO_TCP && name == TCP_REPAIR) {
        const int ofd = ss_rspreload_options_fd(fd);
        return ofd < 0 ? -1 : interpose::real().setsockopt(ofd, level, name, val, len);
      }
      return 0;
    }
    errno = err;
  }
  return rc;
}

}  // namespace ss::preload
