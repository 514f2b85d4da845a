// One-buffer and vector calls (send, recvfrom, readv, writev...) as the
// msghdr a datagram path takes: shared by librsocket and the VMA preload.
#pragma once
#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>

namespace ss {

// buf/len into *iov, and a message of that one buffer with `name`.
inline msghdr one_buffer(iovec* iov, const void* buf, size_t len, const sockaddr* name,
                         socklen_t namelen) {
  *iov = {const_cast<void*>(buf), len};
  msghdr m{};
  m.msg_name = const_cast<sockaddr*>(name);
  m.msg_namelen = namelen;
  m.msg_iov = iov;
  m.msg_iovlen = 1;
  return m;
}

// A vector of iovcnt buffers as a message without an address.
inline msghdr iov_only(const iovec* iov, int iovcnt) {
  msghdr m{};
  m.msg_iov = const_cast<iovec*>(iov);
  m.msg_iovlen = static_cast<size_t>(iovcnt);
  return m;
}

// The bytes m's buffers hold.
inline size_t iov_total(const msghdr* m) {
  size_t n = 0;
  for (size_t i = 0; i < m->msg_iovlen; i++) n += m->msg_iov[i].iov_len;
  return n;
}

}  // namespace ss
