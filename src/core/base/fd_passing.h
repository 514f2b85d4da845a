// Descriptor passing over unix sockets (SCM_RIGHTS), in one place for the
// shm provider's stream, the datagram ring rendezvous and the tests that
// play their peers. What a peer attaches is bounded by the caller: the
// kernel installs no more descriptors than the receive buffer holds, every
// one arrives close-on-exec, and a message that brought too many, or fewer
// than it carried, leaves none behind in this process.
#pragma once
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "core/base/api.h"

namespace ss {

// Most descriptors one message carries here (the kernel's own bound is
// 253): what the callers need, and the size of the control buffers kept on
// the stack.
inline constexpr int kMaxPassedFds = 16;

// One sendmsg of `iov` with fds[0..nfds) attached (nothing when nfds is 0),
// MSG_NOSIGNAL added to `flags`. The kernel takes the descriptors with the
// first byte sent; the caller's copies stay the caller's. Returns the bytes
// sent or -errno (-EINVAL for nfds outside 0..kMaxPassedFds); EINTR is
// returned, not retried, like every other errno.
SS_API ssize_t send_with_fds(int sock, const iovec* iov, int iovcnt, const int* fds, int nfds,
                             int flags);
// The same to address `to` (a datagram socket's peer; null: the
// connected one).
SS_API ssize_t send_with_fds_to(int sock, const sockaddr* to, socklen_t to_len, const iovec* iov,
                                int iovcnt, const int* fds, int nfds, int flags);

// One recvmsg into `iov`, MSG_CMSG_CLOEXEC added to `flags`, taking up to
// `max_fds` (0..kMaxPassedFds) descriptors into fds[0..*got_fds), the
// caller's to close. Returns the bytes read (0: end of stream) or -errno
// (EINTR not retried), then with *got_fds 0 and every descriptor that came
// already closed:
//   -EMFILE  the message carried more than the kernel could install (it
//            truncated, and fewer than max_fds came): this process is out
//            of descriptors, as the call that needed one would be told;
//   -EPROTO  the message carried more than max_fds: the peer's fault (the
//            kernel dropped those past our buffer, we close the rest).
// A message refused so is consumed with its bytes: the caller fails the
// connection it came on. The socket must not have SO_PASSCRED set (its
// credentials would not fit the buffer).
SS_API ssize_t recv_with_fds(int sock, const iovec* iov, int iovcnt, int* fds, int max_fds,
                             int* got_fds, int flags);

// Locked in (sandbox.h), both take the calls such filters allow: a poll
// (MSG_DONTWAIT: -EAGAIN when the socket is not ready; POLLHUP or POLLERR
// before a send: -EPIPE, as MSG_NOSIGNAL's send would say) and one read or
// write of the first non-empty iovec. No descriptor travels: a send with
// one gets -EOPNOTSUPP; a received one the kernel drops (read(2) takes no
// SCM_RIGHTS), and the frame it came with finds none.

}  // namespace ss
