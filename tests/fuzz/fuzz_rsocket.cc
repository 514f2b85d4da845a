// Fuzz target: the rsocket protocol engine's view of its peer: the
// connection data in the peer's hello or reply (save_conn_data) and the
// immediates, lengths and target-SGL/iomap entries of what the peer writes
// afterwards (handle_recv, take_target_buffer, the data path). The engine
// runs as in any program: an rsocket listener on the tcp provider accepts
// the fuzzer (or an rsocket connects to it), a raw TCP socket speaking the
// provider's frames, and the application's calls (rrecv, rsend, rpoll,
// rshutdown) drive it. The fuzzer knows what the rsocket's own connection
// data told it (its buffers' addresses and keys), as any peer does.
//
// Input: u8 mode (bit 7 set: the rsocket connects to us and our reply
// carries the private data; clear: we connect and our hello does, its
// 24-byte header next in the input when bit 6 is set; bits 0-5 the
// private data's length, above 56: 40), the private data, then records,
// each a tag byte then its bytes:
//   tag % 8 == 0  raw: u8 n, then n+1 bytes written as they are
//           == 1  a write: u8 flags (bits 0-1 the target: rbuf, target SGL,
//                 iomap table, or u32 key and u64 address from the input;
//                 bit 2 plain write, no immediate), u32 offset, u32 imm,
//                 u8 n, then n bytes of payload
//           == 2  rrecv of u8+1 bytes (MSG_DONTWAIT; odd tags peek)
//           == 3  rsend of u8*64 bytes (MSG_DONTWAIT)
//           == 4  rpoll for POLLIN|POLLOUT, no wait
//           == 5  rshutdown(SHUT_WR)
//           6, 7  what the rsocket sent us is read and dropped
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <rdma/rsocket.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/prov/util/frame.h"
#include "librsocket/wire.h"
#include "tests/fuzz/stream_peer.h"

namespace {

using namespace ss::prov::util;
using ss::rs::ConnData;

constexpr uint8_t kTcpHelloTag = 2;  // tcp's hello tag (tcp_endpoint.h)
int g_listener = -1;                 // an rsocket listener on tcp
sockaddr_in g_addr{};
int g_klistener = -1;  // a kernel listener for rsockets that connect
sockaddr_in g_kaddr{};

bool send_all(int fd, const void* buf, size_t len) {
  const auto* p = static_cast<const uint8_t*>(buf);
  while (len) {
    pollfd pf{fd, POLLOUT, 0};
    if (poll(&pf, 1, 1000) <= 0) return false;
    const ssize_t n = ::send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return false;
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

bool recv_exact(int fd, void* buf, size_t len) {
  auto* p = static_cast<uint8_t*>(buf);
  while (len) {
    pollfd pf{fd, POLLIN, 0};
    if (poll(&pf, 1, 2000) <= 0) return false;
    const ssize_t n = ::recv(fd, p, len, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

void send_frame(int fd, const FrameHeader& h, const void* payload, size_t len) {
  uint8_t hdr[kFrameHeaderSize];
  encode_frame(h, hdr);
  if (send_all(fd, hdr, sizeof hdr) && len) send_all(fd, payload, len);
}

void drain(int fd) {
  uint8_t buf[65536];
  while (::recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0) {
  }
}

// The frame of `type` that must come next: its private data into
// pdata[kMaxPrivateData]; the length, or -1 (anything else came, or
// nothing in time).
int recv_hello(int raw, FrameType type, uint8_t* pdata) {
  uint8_t hdr[kFrameHeaderSize];
  FrameHeader h{};
  if (!recv_exact(raw, hdr, sizeof hdr)) return -1;
  decode_frame(hdr, &h);
  if (h.type != type || h.length > ss::prov::kMaxPrivateData ||
      (type == FrameType::kHelloReply && h.flags) || !recv_exact(raw, pdata, h.length))
    return -1;
  return static_cast<int>(h.length);
}

// The rsocket accepts our connection: our hello carries the fuzzer's
// connection data; its reply names its buffers. The accepted rsocket, or -1.
// `hello`: the hello's header as the input gives it, or null for a good one.
int accept_one(int raw, const uint8_t* hello, const uint8_t* pdata, uint8_t plen, ConnData* cd) {
  if (::connect(raw, reinterpret_cast<sockaddr*>(&g_addr), sizeof g_addr) < 0) return -1;
  if (hello) {
    // Then our side ends there: a hello that promises more than it brings
    // is dropped at once, not after the listener's 10 s.
    send_all(raw, hello, kFrameHeaderSize);
    send_all(raw, pdata, plen);
    ::shutdown(raw, SHUT_WR);
  } else {
    send_frame(raw, {FrameType::kHello, kTcpHelloTag, plen, 0, kHelloVersion, kHelloMagic}, pdata,
               plen);
  }
  uint8_t reply[ss::prov::kMaxPrivateData];
  if (recv_hello(raw, FrameType::kHelloReply, reply) != ss::rs::kConnDataSize) return -1;
  cd->decode(reply);
  pollfd lp{g_listener, POLLIN, 0};
  return rpoll(&lp, 1, 2000) == 1 ? raccept(g_listener, nullptr, nullptr) : -1;
}

// An rsocket connects to us (a kernel listener): its hello names its
// buffers; our reply carries the fuzzer's connection data. The connected
// (or failed) rsocket, or -1; *raw is our end.
int connect_one(int* raw, const uint8_t* pdata, uint8_t plen, ConnData* cd) {
  const int s = rsocket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) return -1;
  rfcntl(s, F_SETFL, O_NONBLOCK);
  if (rconnect(s, reinterpret_cast<sockaddr*>(&g_kaddr), sizeof g_kaddr) == 0 ||
      errno == EINPROGRESS) {
    pollfd kp{g_klistener, POLLIN, 0};
    if (poll(&kp, 1, 2000) == 1) *raw = accept4(g_klistener, nullptr, nullptr, SOCK_CLOEXEC);
  }
  uint8_t hello[ss::prov::kMaxPrivateData];
  if (*raw < 0 || recv_hello(*raw, FrameType::kHello, hello) != ss::rs::kConnDataSize) {
    rclose(s);
    return -1;
  }
  cd->decode(hello);
  send_frame(*raw, {FrameType::kHelloReply, 0, plen, 0, kHelloVersion, kHelloMagic}, pdata, plen);
  pollfd p{s, POLLOUT, 0};
  rpoll(&p, 1, 2000);  // connected, or refused our data
  return s;
}

// One connection: the handshake, then the records.
void play(fuzz::Input& in) {
  int raw = -1;
  // Byte 0: bit 7 set, the rsocket connects; bit 6 set (when it does
  // not), 24 bytes of hello header follow; bits 0-5, the private data's
  // length (above 56: 40).
  const uint8_t mode = in.u8();
  uint8_t hello[kFrameHeaderSize] = {};
  const bool raw_hello = (mode & 0xc0) == 0x40;
  if (raw_hello) {
    const uint8_t* h;
    const size_t n = in.take(sizeof hello, &h);
    memcpy(hello, h, n);
  }
  uint8_t plen = mode & 0x3f;
  if (plen > ss::prov::kMaxPrivateData) plen = ss::rs::kConnDataSize;
  uint8_t pdata[ss::prov::kMaxPrivateData] = {};
  const uint8_t* b;
  const size_t got = in.take(plen, &b);
  memcpy(pdata, b, got);
  ConnData cd;
  int acc;
  if (mode & 0x80) {
    acc = connect_one(&raw, pdata, plen, &cd);
  } else {
    raw = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    acc = raw < 0 ? -1 : accept_one(raw, raw_hello ? hello : nullptr, pdata, plen, &cd);
  }
  if (raw >= 0) {
    int one = 1;
    setsockopt(raw, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  if (acc < 0) {
    if (raw >= 0) ::close(raw);
    return;
  }
  const ss::rs::RsSge targets[3] = {
      cd.data_buf,
      cd.target_sgl,
      {cd.target_sgl.addr + sizeof(ss::rs::RsSge) * cd.target_sgl.length, cd.target_sgl.key, 0}};

  static uint8_t buf[65536];
  while (!in.empty()) {
    const uint8_t tag = in.u8();
    switch (tag % 8) {
      case 0: {
        const size_t n = in.take(in.u8() + 1u, &b);
        send_all(raw, b, n);
        break;
      }
      case 1: {
        const uint8_t flags = in.u8();
        FrameHeader w{(flags & 4) ? FrameType::kWrite : FrameType::kWriteImm, 0, 0, 0, 0, 0};
        if ((flags & 3) == 3) {
          w.rkey = in.u32();
          w.remote_addr = static_cast<uint64_t>(in.u32()) << 32;
          w.remote_addr |= in.u32();
        } else {
          w.rkey = targets[flags & 3].key;
          w.remote_addr = targets[flags & 3].addr;
        }
        w.remote_addr += in.u32();
        w.imm = in.u32();
        w.length = static_cast<uint32_t>(in.take(in.u8(), &b));
        send_frame(raw, w, b, w.length);
        break;
      }
      case 2:
        rrecv(acc, buf, in.u8() + 1u, MSG_DONTWAIT | ((tag & 8) ? MSG_PEEK : 0));
        break;
      case 3:
        rsend(acc, buf, in.u8() * 64u, MSG_DONTWAIT);
        break;
      case 4: {
        pollfd p{acc, POLLIN | POLLOUT, 0};
        rpoll(&p, 1, 0);
        break;
      }
      case 5:
        rshutdown(acc, SHUT_WR);
        break;
      default:
        drain(raw);
        break;
    }
    rrecv(acc, buf, sizeof buf, MSG_DONTWAIT);
  }
  // The peer goes away; the rsocket reads to the end and closes.
  ::close(raw);
  for (int i = 0; i < 4 && rrecv(acc, buf, sizeof buf, MSG_DONTWAIT) > 0; i++) {
  }
  rclose(acc);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("SLIPSTREAM_PROVIDER", "tcp", 1);
  g_listener = rsocket(AF_INET, SOCK_STREAM, 0);
  g_addr.sin_family = AF_INET;
  g_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof g_addr;
  if (g_listener < 0 || rbind(g_listener, reinterpret_cast<sockaddr*>(&g_addr), len) ||
      rlisten(g_listener, 64) ||
      rgetsockname(g_listener, reinterpret_cast<sockaddr*>(&g_addr), &len) ||
      rfcntl(g_listener, F_SETFL, O_NONBLOCK) < 0)
    abort();
  g_klistener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  g_kaddr.sin_family = AF_INET;
  g_kaddr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  len = sizeof g_kaddr;
  if (g_klistener < 0 || ::bind(g_klistener, reinterpret_cast<sockaddr*>(&g_kaddr), len) ||
      ::listen(g_klistener, 64) ||
      getsockname(g_klistener, reinterpret_cast<sockaddr*>(&g_kaddr), &len))
    abort();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  play(in);
  return 0;
}
