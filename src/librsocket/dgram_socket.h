// A datagram rsocket (SOCK_DGRAM): UDP's semantics, carried today over the
// rsocket's own kernel UDP socket (its descriptor), each datagram behind a
// DgramHeader (dgram_wire.h). Internally every function returns 0 / a
// count, or -errno. The kernel socket is the receive ring: SO_RCVBUF
// sizes it, the kernel drops into a full one (never blocking the sender)
// and its drop count comes back with every datagram (SO_RXQ_OVFL).
#pragma once
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "librsocket/dgram_wire.h"

namespace ss::rs {

class DgramSocket {
 public:
  // A new datagram rsocket of `domain`; `flags`: SOCK_NONBLOCK, SOCK_CLOEXEC.
  static int create(int domain, int flags, std::shared_ptr<DgramSocket>* out);
  explicit DgramSocket(int fd) : fd_(fd) {}
  ~DgramSocket();  // closes the descriptor: no call is using it any more
  DgramSocket(const DgramSocket&) = delete;
  DgramSocket& operator=(const DgramSocket&) = delete;

  int fd() const { return fd_; }

  int bind(const sockaddr* addr, socklen_t len);
  // A default destination; AF_UNSPEC dissolves it (and the filter on
  // what is received), as UDP.
  int connect(const sockaddr* addr, socklen_t len);
  int shutdown(int how);
  void close();  // rclose: wakes every caller asleep on it

  // msg.msg_name null: the connected destination.
  ssize_t send(const msghdr& msg, int flags);
  // msg->msg_name gets the source address; msg_flags MSG_TRUNC when the
  // datagram was longer than the buffers (the rest is discarded).
  ssize_t recv(msghdr* msg, int flags);

  int getsockname(sockaddr* addr, socklen_t* len);
  int getpeername(sockaddr* addr, socklen_t* len);
  int setsockopt(int level, int name, const void* val, socklen_t len);
  int getsockopt(int level, int name, void* val, socklen_t* len);
  int fcntl(int cmd, long arg);

  // rpoll's interface, the same shape as Socket's (socket.h).
  short readiness(short events);
  int wait_target(short want, int* fd, short* events, int* kick_fd, int* sleep_ms);
  void after_wait(const pollfd&) {}

 private:
  // One receive attempt that never sleeps: -EAGAIN when nothing good is
  // queued. recv_mu_ held.
  ssize_t try_recv(msghdr* msg, int flags);
  // Counts a bad datagram and, when it was only peeked, takes it off the
  // queue. recv_mu_ held.
  void drop(DgramFault fault, bool peeked);
  // Drops bad datagrams at the head of the queue (rpoll: readable means a
  // good one waits). recv_mu_ held.
  void drop_bad_heads();
  void note_overflow(const msghdr& m);
  bool nonblocking(int flags) const {
    return (flags & MSG_DONTWAIT) || nonblock_.load(std::memory_order_relaxed);
  }

  const int fd_;
  // One receiver at a time inside a receive: a datagram peeked and found bad
  // is then taken off the queue, and must be that one.
  std::mutex recv_mu_;
  std::atomic<bool> nonblock_{false};
  std::atomic<bool> shut_rd_{false};     // rshutdown(SHUT_RD) or rclose: reads give 0
  std::atomic<uint8_t> peer_version_{0};  // the connected destination's DgramHeader version; 0: none
  std::atomic<uint64_t> overflow_{0};     // the kernel's drops (SO_RXQ_OVFL), as of the last datagram
  std::atomic<uint64_t> malformed_{0};    // our drops: datagrams dgram_check refused
  std::atomic<bool> warned_{false};       // one warning per socket, however many bad datagrams
};

}  // namespace ss::rs
