// A peer played by hand on a raw kernel TCP socket, speaking the tcp
// provider's frames (core/prov/util/frame.h): for the hostile-peer and
// keepalive tests, which must see or break the wire themselves.
#pragma once
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>

#include "core/prov/util/frame.h"
#include "librsocket/wire.h"
#include "tests/librsocket/conformance.h"

namespace rsconf {

constexpr uint8_t kTcpKind = 2;  // FrameHeader flags of a tcp hello

// Sends all of `buf`; each wait for room is bounded (10 s).
inline bool raw_send(int fd, const void* buf, size_t len) {
  const auto* p = static_cast<const uint8_t*>(buf);
  while (len) {
    pollfd pf{fd, POLLOUT, 0};
    if (poll(&pf, 1, 10000) <= 0) return false;
    ssize_t n = ::send(fd, p, len, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;  // the server may have dropped us already
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

// Reads exactly `len` bytes; each wait for more is bounded by `ms`.
inline bool raw_recv_exact(int fd, void* buf, size_t len, int ms = 10000) {
  auto* p = static_cast<uint8_t*>(buf);
  while (len) {
    pollfd pf{fd, POLLIN, 0};
    if (poll(&pf, 1, ms) <= 0) return false;
    ssize_t n = ::recv(fd, p, len, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

inline void send_frame(int fd, const ss::prov::util::FrameHeader& h, const void* payload = nullptr,
                       size_t len = 0) {
  uint8_t hdr[ss::prov::util::kFrameHeaderSize];
  ss::prov::util::encode_frame(h, hdr);
  raw_send(fd, hdr, sizeof hdr);
  if (len) raw_send(fd, payload, len);
}

// Connection data of a made-up peer: credits 16, no iomap, made-up targets.
inline ss::rs::ConnData fake_conn_data(uint8_t version = 1) {
  ss::rs::ConnData cd;
  cd.version = version;
  cd.flags = ss::rs::kConnFlagIomap | (ss::rs::host_is_big_endian() ? ss::rs::kConnFlagNet : 0);
  cd.credits = 16;
  cd.target_iomap_size = 0;
  cd.target_sgl = {0x10000, 77, 2};
  cd.data_buf = {0x20000, 78, 65536};
  return cd;
}

inline void send_hello(int fd, const ss::rs::ConnData& cd) {
  uint8_t pd[ss::rs::kConnDataSize];
  cd.encode(pd);
  send_frame(
      fd,
      {ss::prov::util::FrameType::kHello, kTcpKind, static_cast<uint32_t>(ss::rs::kConnDataSize), 0,
       ss::prov::util::kHelloVersion, ss::prov::util::kHelloMagic},
      pd, sizeof pd);
}

// A raw TCP connection to `l`, Nagle off (frames go out as written).
inline KFd raw_connect(const Listener& l) {
  KFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return fd;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (::connect(fd, l.addr.sa(), l.addr.len) != 0) fd.reset();
  return fd;
}

}  // namespace rsconf
