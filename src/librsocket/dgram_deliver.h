// One received datagram into the caller's msghdr, as recvmsg(2) gives it:
// the payload scattered over the iovecs, the source name, MSG_TRUNC when
// the payload was longer than the buffers (and, with the MSG_TRUNC flag,
// its whole length returned). Shared by the shm ring and verbs paths; and
// the kernel socket's datagram as the checks before delivery need it.
#pragma once
#include <sys/socket.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace ss::rs {

inline ssize_t deliver_datagram(msghdr* msg, int flags, const uint8_t* data, size_t n,
                                const sockaddr_storage& src, socklen_t src_len) {
  size_t room = 0, got = 0;
  for (size_t i = 0; i < msg->msg_iovlen; i++) {
    room += msg->msg_iov[i].iov_len;
    size_t k = std::min(n - got, msg->msg_iov[i].iov_len);
    if (k)
      std::memcpy(msg->msg_iov[i].iov_base, data + got, k);  // an empty iovec's base may be null
    got += k;
  }
  if (msg->msg_name) {
    std::memcpy(msg->msg_name, &src, std::min<size_t>(msg->msg_namelen, src_len));
    msg->msg_namelen = src_len;
  } else {
    msg->msg_namelen = 0;
  }
  msg->msg_controllen = 0;
  msg->msg_flags = n > room ? MSG_TRUNC : 0;
  return static_cast<ssize_t>((flags & MSG_TRUNC) ? n : got);
}

// One datagram off kernel socket `fd` into `buf` (MSG_DONTWAIT and
// MSG_TRUNC, plus `flags`, e.g. MSG_PEEK): its whole length, its source
// in *src; -1 and errno as recvmsg(2).
inline ssize_t recv_kernel_datagram(int fd, void* buf, size_t len, int flags, sockaddr_storage* src,
                                    socklen_t* src_len) {
  iovec v{buf, len};
  msghdr m{};
  m.msg_name = src;
  m.msg_namelen = sizeof *src;
  m.msg_iov = &v;
  m.msg_iovlen = 1;
  ssize_t n = ::recvmsg(fd, &m, MSG_DONTWAIT | MSG_TRUNC | flags);
  *src_len = m.msg_namelen;
  return n;
}

}  // namespace ss::rs
