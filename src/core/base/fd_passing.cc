#include "core/base/fd_passing.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ss {

namespace {
// Room for kMaxPassedFds descriptors in one SCM_RIGHTS message.
union ControlBuffer {
  cmsghdr align;
  char bytes[CMSG_SPACE(kMaxPassedFds * sizeof(int))];
};

// A message of `iov` (sendmsg and recvmsg take it non-const).
msghdr message_of(const iovec* iov, int iovcnt) {
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = static_cast<size_t>(iovcnt);
  return msg;
}
}  // namespace

ssize_t send_with_fds(int sock, const iovec* iov, int iovcnt, const int* fds, int nfds,
                      int flags) {
  if (nfds < 0 || nfds > kMaxPassedFds) return -EINVAL;
  msghdr msg = message_of(iov, iovcnt);
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

ssize_t recv_with_fds(int sock, const iovec* iov, int iovcnt, int* fds, int max_fds,
                      int* got_fds, int flags) {
  *got_fds = 0;
  if (max_fds < 0 || max_fds > kMaxPassedFds) return -EINVAL;
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
