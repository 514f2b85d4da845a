// Datagram exchanges for rsocket_bench: a forked server on 127.0.0.1
// (kernel UDP, or datagram rsockets over a provider) that echoes ping
// datagrams to their source and counts one-way ones, and the client side
// that drives it over a connected socket. The first byte of each datagram
// says what it is (DgramKind); every call returns 0 or -errno.
#pragma once
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "tools/demo_transport.h"

namespace ssdemo {

enum DgramKind : uint8_t {
  kDgramPing = 'p',    // echoed back as it came
  kDgramOneWay = 'o',  // counted
  kDgramTally = 't',   // answered with the count of one-way datagrams since the last tally
  kDgramQuit = 'q',    // the server exits 0
};

// The datagram calls of a transport: the kernel's, or librsocket's r*().
struct DgramOps {
  int (*socket)(int, int, int);
  int (*bind)(int, const sockaddr*, socklen_t);
  int (*connect)(int, const sockaddr*, socklen_t);
  ssize_t (*send)(int, const void*, size_t, int);
  ssize_t (*recv)(int, void*, size_t, int);
  ssize_t (*sendto)(int, const void*, size_t, int, const sockaddr*, socklen_t);
  ssize_t (*recvfrom)(int, void*, size_t, int, sockaddr*, socklen_t*);
  int (*poll)(pollfd*, nfds_t, int);
  int (*getsockname)(int, sockaddr*, socklen_t*);
  int (*close)(int);
};
const DgramOps& dgram_ops_for(Transport t);

// The server's main for spawn_server_with(): binds 127.0.0.1:0, writes its
// port to `wfd`, serves until kDgramQuit.
int dgram_server_main(Transport t, int wfd);

// A socket connected to the server at 127.0.0.1:port.
struct DgramClient {
  const DgramOps* ops = nullptr;
  int fd = -1;
  // One echo of `len` bytes (out[0] must be kDgramPing): blocking calls,
  // and the answer must equal what was sent (-EBADMSG).
  int ping(const uint8_t* out, uint8_t* in, size_t len);
  // One one-way datagram (out[0] kDgramOneWay), a blocking send.
  int one_way(const uint8_t* out, size_t len);
  // The server's count of one-way datagrams since the last tally, asking
  // again when an answer does not come within 200 ms (at most 50 times).
  int tally(uint64_t* count);
  void close();
};
// select_provider(t), then a connected socket; `warm` pings first (a shm
// destination's first datagrams go over UDP until its owner answers).
int dgram_connect(Transport t, int port, int warm, DgramClient* out);

}  // namespace ssdemo
