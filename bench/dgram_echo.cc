// See dgram_echo.h.
#include "bench/dgram_echo.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <rdma/rsocket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ssdemo {

namespace {

ssize_t kernel_send(int fd, const void* buf, size_t len, int flags) {
  return ::send(fd, buf, len, flags | MSG_NOSIGNAL);
}
ssize_t kernel_sendto(int fd, const void* buf, size_t len, int flags, const sockaddr* a,
                      socklen_t alen) {
  return ::sendto(fd, buf, len, flags | MSG_NOSIGNAL, a, alen);
}

const DgramOps kKernelDgram = {::socket,      ::bind,     ::connect, kernel_send,   ::recv,
                               kernel_sendto, ::recvfrom, ::poll,    ::getsockname, ::close};
const DgramOps kRsocketDgram = {rsocket, rbind,     rconnect, rsend,        rrecv,
                                rsendto, rrecvfrom, rpoll,    rgetsockname, rclose};

// The largest datagram either side handles (the bench sends 64 B).
constexpr size_t kMaxDgram = 2048;

// A call interrupted by a signal (the bench's watchdog alarm) is retried.
template <class Call>
ssize_t retry(Call&& call) {
  ssize_t n;
  do {
    n = call();
  } while (n < 0 && errno == EINTR);
  return n;
}

}  // namespace

const DgramOps& dgram_ops_for(Transport t) {
  return t == Transport::kKernel ? kKernelDgram : kRsocketDgram;
}

int dgram_server_main(Transport t, int wfd) {
  select_provider(t);
  const DgramOps& ops = dgram_ops_for(t);
  auto fail = [&](const char* what, int err) {
    return server_failed("datagram server", t, wfd, what, err);
  };
  int fd = ops.socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return fail("socket", errno);
  sockaddr_in a = loopback(0);
  if (ops.bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0) return fail("bind", errno);
  socklen_t alen = sizeof a;
  if (ops.getsockname(fd, reinterpret_cast<sockaddr*>(&a), &alen) < 0)
    return fail("getsockname", errno);
  int32_t port = ntohs(a.sin_port);
  if (::write(wfd, &port, sizeof port) != sizeof port) return fail("pipe", errno);
  ::close(wfd);
  wfd = -1;
  uint64_t count = 0;
  uint8_t buf[kMaxDgram];
  for (;;) {
    sockaddr_storage src;
    socklen_t slen = sizeof src;
    ssize_t n = retry([&] {
      return ops.recvfrom(fd, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&src), &slen);
    });
    if (n < 0) return fail("recvfrom", errno);
    if (n == 0) continue;
    const auto* to = reinterpret_cast<sockaddr*>(&src);
    switch (buf[0]) {
      case kDgramPing:
        if (retry([&] { return ops.sendto(fd, buf, size_t(n), 0, to, slen); }) < 0)
          return fail("echo", errno);
        break;
      case kDgramOneWay:
        count++;
        break;
      case kDgramTally: {
        uint8_t r[1 + sizeof count] = {kDgramTally};
        memcpy(r + 1, &count, sizeof count);
        count = 0;
        if (retry([&] { return ops.sendto(fd, r, sizeof r, 0, to, slen); }) < 0)
          return fail("tally", errno);
        break;
      }
      case kDgramQuit:
        ops.close(fd);
        return 0;
    }
  }
}

int DgramClient::ping(const uint8_t* out, uint8_t* in, size_t len) {
  if (retry([&] { return ops->send(fd, out, len, 0); }) != ssize_t(len)) return -errno;
  ssize_t n = retry([&] { return ops->recv(fd, in, len, 0); });
  if (n < 0) return -errno;
  return size_t(n) == len && memcmp(in, out, len) == 0 ? 0 : -EBADMSG;
}

int DgramClient::one_way(const uint8_t* out, size_t len) {
  return retry([&] { return ops->send(fd, out, len, 0); }) == ssize_t(len) ? 0 : -errno;
}

int DgramClient::tally(uint64_t* count) {
  const uint8_t ask = kDgramTally;
  for (int tries = 0; tries < 50; tries++) {
    if (retry([&] { return ops->send(fd, &ask, 1, 0); }) != 1) return -errno;
    pollfd p{fd, POLLIN, 0};
    if (retry([&] { return ops->poll(&p, 1, 200); }) < 0) return -errno;
    if (!(p.revents & POLLIN)) continue;
    uint8_t r[1 + sizeof *count];
    ssize_t n = retry([&] { return ops->recv(fd, r, sizeof r, MSG_DONTWAIT); });
    if (n == ssize_t(sizeof r) && r[0] == kDgramTally) {
      memcpy(count, r + 1, sizeof *count);
      return 0;
    }
  }
  return -ETIMEDOUT;
}

void DgramClient::close() {
  if (fd < 0) return;
  const uint8_t quit = kDgramQuit;
  for (int i = 0; i < 3; i++) ops->send(fd, &quit, 1, MSG_DONTWAIT);  // one may be lost
  ops->close(fd);
  fd = -1;
}

int dgram_connect(Transport t, int port, int warm, DgramClient* out) {
  select_provider(t);
  const DgramOps& ops = dgram_ops_for(t);
  int fd = ops.socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return -errno;
  sockaddr_in a = loopback(port);
  if (ops.connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0) {
    int e = errno;
    ops.close(fd);
    return -e;
  }
  out->ops = &ops;
  out->fd = fd;
  uint8_t ping[64] = {kDgramPing}, pong[64];
  for (int i = 0; i < warm; i++) {
    memcpy(ping + 1, &i, sizeof i);
    if (int rc = out->ping(ping, pong, sizeof ping)) {
      ops.close(fd);
      out->fd = -1;
      return rc;
    }
  }
  return 0;
}

}  // namespace ssdemo
