// Shared by tools/slipstream-demo and bench/rsocket_bench: one socket API
// table for kernel TCP and for rsockets, a forked loopback server speaking a
// tiny command protocol, and the client side of its three exchanges
// (ping-pong, busy-poll ping-pong, verified stream).
//
// Protocol (same host, so host byte order): the client sends a 16-byte Cmd;
//   kPing/kPingSpin  the server echoes `count` messages of `size` bytes
//                    (kPingSpin: both sides spin on MSG_DONTWAIT);
//   kStream          the server receives `count` messages of `size` bytes,
//                    checksums them and answers a StreamReply;
//   kQuit            the server closes the connection and exits 0.
#pragma once
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ssdemo {

enum class Transport { kKernel, kShm, kTcp };
constexpr Transport kAllTransports[] = {Transport::kKernel, Transport::kShm, Transport::kTcp};

// "kernel", "shm", "tcp".
const char* transport_name(Transport t);
// Parses the names above; false when unknown.
bool parse_transport(const char* s, Transport* t);

// The socket calls a transport uses: the kernel's, or librsocket's r*().
struct Ops {
  int (*socket)(int, int, int);
  int (*bind)(int, const sockaddr*, socklen_t);
  int (*listen)(int, int);
  int (*accept)(int, sockaddr*, socklen_t*);
  int (*connect)(int, const sockaddr*, socklen_t);
  ssize_t (*send)(int, const void*, size_t, int);
  ssize_t (*recv)(int, void*, size_t, int);
  int (*setsockopt)(int, int, int, const void*, socklen_t);
  int (*getsockname)(int, sockaddr*, socklen_t*);
  int (*close)(int);
};
const Ops& ops_for(Transport t);

// For shm/tcp: setenv SLIPSTREAM_PROVIDER and ss::config::reload(), so the
// sockets connected (or accepted) afterwards use that provider. No-op for
// the kernel.
void select_provider(Transport t);

enum Op : uint32_t { kQuit = 0, kPing = 1, kPingSpin = 2, kStream = 3 };
struct Cmd {
  uint32_t op;
  uint32_t size;
  uint64_t count;
};
struct StreamReply {
  uint64_t bytes;
  uint64_t checksum;
};

// A connected socket of either kind. Every call returns 0 or -errno
// (-ENODATA for an end of stream in the middle of a message).
struct Conn {
  const Ops* ops = nullptr;
  int fd = -1;
  int send_all(const void* buf, size_t len, bool spin);
  int recv_all(void* buf, size_t len, bool spin);
  int send_cmd(Op op, uint32_t size, uint64_t count);
  void close();
};

// Order-sensitive checksum of a stream cut into messages (each message's
// length must be a multiple of 32 bytes; the demo and the bench use 64 B,
// 64 KiB and 1 MiB). Four independent lanes keep it faster than memcpy.
uint64_t message_sum(const uint8_t* p, size_t len);
inline uint64_t checksum_step(uint64_t h, uint64_t msg_sum, uint64_t index) {
  h ^= msg_sum + index * 0x9E3779B97F4A7C15ull;
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 29);
}
constexpr uint64_t kChecksumSeed = 0x6a09e667f3bcc908ull;

// Client side of kStream: a pseudo-random pattern; message i starts at
// offset (i % 64) * 64 of it, so consecutive messages differ.
class StreamSource {
 public:
  explicit StreamSource(size_t msg_size);
  size_t msg_size() const { return size_; }
  const uint8_t* message(uint64_t i) const { return pattern_.data() + (i % 64) * 64; }
  // What the server must answer after `count` messages.
  uint64_t expected(uint64_t count) const;

 private:
  size_t size_;
  std::vector<uint8_t> pattern_;
  uint64_t sums_[64];
};

// Server: forks a child that selects `t`, listens on 127.0.0.1:0, passes
// its port back through a pipe, accepts one connection and serves it until
// kQuit or end of stream (exit status 0 when everything went well). The
// child dies with its parent. Returns the child's pid and sets *port, or
// -errno. Call it before this process creates any rsocket.
int spawn_server(Transport t, int* port, int timeout_ms = 10000);
// The same with another server: `main` runs in the child, writes its
// port (an int32, or -errno) to `wfd` and returns the exit status.
using ServerMain = int (*)(Transport t, int wfd);
int spawn_server_with(ServerMain main, Transport t, int* port, int timeout_ms = 10000);
// A server child's failure: says why on stderr and passes -err up the
// port pipe `wfd` (when still open, else -1); returns exit status 1.
int server_failed(const char* server, Transport t, int wfd, const char* what, int err);
// 127.0.0.1:port.
sockaddr_in loopback(int port);
// Reaps a server: 0 when it exited 0, else -1 with a reason in *why.
int reap_server(int pid, int timeout_ms, const char** why);

// Client: select_provider(t), then a socket connected to 127.0.0.1:port
// with TCP_NODELAY. 0 or -errno.
int connect_loopback(Transport t, int port, Conn* out);

// Client exchanges. Each sends its Cmd and checks what comes back; `err`
// (if not null) receives a short reason on failure.
// Ping-pong of `count` round trips; rtt_ns (if not null) gets each one.
int run_pingpong(Conn& c, uint32_t size, uint64_t count, bool spin, std::vector<double>* rtt_ns,
                 const char** err);
// One stream of `count` messages; *seconds from the first send until the
// server's verified answer.
int run_stream(Conn& c, const StreamSource& src, uint64_t count, double* seconds, const char** err);

// Monotonic nanoseconds.
uint64_t now_ns();

}  // namespace ssdemo
