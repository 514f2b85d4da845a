#include "core/base/fd_passing.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/base/sandbox.h"

namespace ss {

namespace {
// Room for kMaxPassedFds descriptors in one SCM_RIGHTS message.
union ControlBuffer {
  cmsghdr align;
  char bytes[CMSG_SPACE(kMaxPassedFds * sizeof(int))];
};

// Locked in: one read or write of the first non-empty iovec, after a
// poll when the caller must not wait (fd_passing.h).
ssize_t locked_in_io(int sock, const iovec* iov, int iovcnt, int flags, bool out) {
  if (flags & MSG_DONTWAIT) {
    // EINVAL: RLIMIT_NOFILE 0 allows no poll; our sockets are
    // non-blocking, so the read or write itself says EAGAIN.
    pollfd p{sock, static_cast<short>(out ? POLLOUT : POLLIN), 0};
    const int r = ::poll(&p, 1, 0);
    if (r < 0 && errno != EINVAL) return -errno;
    if (r >= 0 && out && (p.revents & (POLLHUP | POLLERR))) return -EPIPE;
    if (r == 0) return -EAGAIN;
  }
  if (iovcnt <= 0) return 0;
  int i = 0;
  while (i < iovcnt - 1 && iov[i].iov_len == 0) i++;
  const ssize_t n = out ? ::write(sock, iov[i].iov_base, iov[i].iov_len)
                        : ::read(sock, iov[i].iov_base, iov[i].iov_len);
  return n < 0 ? -errno : n;
}

// A message of `iov` (sendmsg and recvmsg take it non-const).
msghdr message_of(const iovec* iov, int iovcnt) {
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = static_cast<size_t>(iovcnt);
  return msg;
}
}  // namespace

ssize_t send_with_fds(int sock, const iovec* iov, int iovcnt, const int* fds, int nfds, int flags) {
  return send_with_fds_to(sock, nullptr, 0, iov, iovcnt, fds, nfds, flags);
}

ssize_t send_with_fds_to(int sock, const sockaddr* to, socklen_t to_len, const iovec* iov,
                         int iovcnt, const int* fds, int nfds, int flags) {
  if (nfds < 0 || nfds > kMaxPassedFds) return -EINVAL;
  if (sandbox::locked_in())
    return nfds || to ? -EOPNOTSUPP : locked_in_io(sock, iov, iovcnt, flags, true);
  msghdr msg = message_of(iov, iovcnt);
  msg.msg_name = const_cast<sockaddr*>(to);
  msg.msg_namelen = to_len;
  ControlBuffer ctl;
  if (nfds) {
    const size_t len = static_cast<size_t>(nfds) * sizeof(int);
    msg.msg_control = ctl.bytes;
    msg.msg_controllen = CMSG_SPACE(len);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(len);
    memcpy(CMSG_DATA(c), fds, len);
  }
  const ssize_t n = ::sendmsg(sock, &msg, flags | MSG_NOSIGNAL);
  return n < 0 ? -errno : n;
}

ssize_t recv_with_fds(int sock, const iovec* iov, int iovcnt, int* fds, int max_fds, int* got_fds,
                      int flags) {
  *got_fds = 0;
  if (max_fds < 0 || max_fds > kMaxPassedFds) return -EINVAL;
  if (sandbox::locked_in()) return locked_in_io(sock, iov, iovcnt, flags, false);
  msghdr msg = message_of(iov, iovcnt);
  ControlBuffer ctl;
  if (max_fds) {
    msg.msg_control = ctl.bytes;
    // CMSG_LEN, not CMSG_SPACE: the kernel installs as many descriptors as
    // the length holds, and the padding of an odd count would hold one more.
    msg.msg_controllen = CMSG_LEN(static_cast<size_t>(max_fds) * sizeof(int));
  }
  const ssize_t n = ::recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC);
  if (n < 0) return -errno;
  int got = 0;
  bool extra = false;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < k; i++) {
      int fd;
      memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      if (got < max_fds) {
        fds[got++] = fd;
      } else {
        ::close(fd);  // beyond what the caller takes (the kernel gave more than asked)
        extra = true;
      }
    }
  }
  const bool truncated = (msg.msg_flags & MSG_CTRUNC) != 0;
  if (!truncated && !extra) {
    *got_fds = got;
    return n;
  }
  for (int i = 0; i < got; i++) ::close(fds[i]);
  // Truncated with room left in the buffer: the kernel stopped at a
  // descriptor it had no slot for; with the buffer full, the peer sent more.
  return truncated && !extra && got < max_fds ? -EMFILE : -EPROTO;
}

}  // namespace ss
