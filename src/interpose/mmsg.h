// recvmmsg/sendmmsg as Linux runs them (net/socket.c), over a preload's
// own one-message call: for a datagram socket a preload serves itself.
//  recvmmsg: a null vector EFAULT, an invalid timeout EINVAL, vlen 0 is 0;
//  each entry waits as a recvmsg with the flags would (so a blocking call
//  without MSG_WAITFORONE waits for every entry), MSG_WAITFORONE adds
//  MSG_DONTWAIT after the first; the timeout is looked at only after each
//  datagram (CLOCK_MONOTONIC; the time left written back, {0, 0} once
//  passed, and the call ends there); an error after the first datagram
//  ends the call with the count, and the kernel keeps it (but EAGAIN) for
//  the socket's next receive: *late_error.
//  sendmmsg: vlen capped at UIO_MAXIOV, each entry sent with the flags,
//  msg_len set; an error after the first ends the call with the count
//  (that error is lost, as the kernel loses it).
#pragma once
#include <sys/socket.h>
#include <sys/types.h>

#include <cerrno>
#include <climits>
#include <ctime>

namespace ss::interpose {

constexpr unsigned int kMaxMmsg = 1024;  // UIO_MAXIOV

// one(msghdr*, flags): the datagram's length or -1/errno.
template <class One>
int recvmmsg_each(mmsghdr* v, unsigned int vlen, int flags, timespec* tmo, int* late_error,
                  One&& one) {
  timespec end{0, 0};
  if (tmo) {
    if (tmo->tv_sec < 0 || tmo->tv_nsec < 0 || tmo->tv_nsec >= 1000000000L) {
      errno = EINVAL;
      return -1;
    }
    if (tmo->tv_sec || tmo->tv_nsec) {  // {0, 0}: already passed, as the kernel has it
      clock_gettime(CLOCK_MONOTONIC, &end);
      end.tv_sec += tmo->tv_sec;
      end.tv_nsec += tmo->tv_nsec;
      if (end.tv_nsec >= 1000000000L) {
        end.tv_sec++;
        end.tv_nsec -= 1000000000L;
      }
    }
  }
  if (vlen == 0) return 0;
  if (!v) {
    errno = EFAULT;
    return -1;
  }
  const bool wait_for_one = flags & MSG_WAITFORONE;
  flags &= ~MSG_WAITFORONE;
  unsigned int n = 0;
  int err = 0;
  while (n < vlen) {
    const ssize_t r = one(&v[n].msg_hdr, flags);
    if (r < 0) {
      err = errno;
      break;
    }
    v[n].msg_len = static_cast<unsigned int>(r);
    n++;
    if (wait_for_one) flags |= MSG_DONTWAIT;
    if (tmo) {
      timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      time_t s = end.tv_sec - now.tv_sec;
      long ns = end.tv_nsec - now.tv_nsec;
      if (ns < 0) {
        s--;
        ns += 1000000000L;
      }
      if (s < 0) s = ns = 0;
      tmo->tv_sec = s;
      tmo->tv_nsec = ns;
      if (!s && !ns) break;
    }
  }
  if (n == 0) {
    errno = err;
    return -1;
  }
  if (err && err != EAGAIN && err != EWOULDBLOCK && late_error) *late_error = err;
  return static_cast<int>(n);
}

// one(const msghdr*, flags): the bytes sent or -1/errno.
template <class One>
int sendmmsg_each(mmsghdr* v, unsigned int vlen, int flags, One&& one) {
  if (vlen > kMaxMmsg) vlen = kMaxMmsg;
  if (vlen == 0) return 0;
  if (!v) {
    errno = EFAULT;
    return -1;
  }
  unsigned int n = 0;
  for (; n < vlen; n++) {
    const ssize_t r = one(&v[n].msg_hdr, flags);
    if (r < 0) {
      if (n == 0) return -1;
      break;
    }
    v[n].msg_len = static_cast<unsigned int>(r);
  }
  return static_cast<int>(n);
}

}  // namespace ss::interpose
