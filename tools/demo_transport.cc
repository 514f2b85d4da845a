// See demo_transport.h.
#include "tools/demo_transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <rdma/rsocket.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/base/config.h"

namespace ssdemo {

namespace {

// Kernel sends never raise SIGPIPE (a vanished peer is an error, not a signal).
ssize_t kernel_send(int fd, const void* buf, size_t len, int flags) {
  return ::send(fd, buf, len, flags | MSG_NOSIGNAL);
}

const Ops kKernelOps = {::socket,    ::bind, ::listen,     ::accept,      ::connect,
                        kernel_send, ::recv, ::setsockopt, ::getsockname, ::close};
const Ops kRsocketOps = {rsocket, rbind, rlisten,     raccept,      rconnect,
                         rsend,   rrecv, rsetsockopt, rgetsockname, rclose};

constexpr uint32_t kMaxMessage = 64u << 20;

// Reads exactly `len` bytes from a pipe, waiting at most timeout_ms.
int read_pipe(int fd, void* buf, size_t len, int timeout_ms) {
  size_t got = 0;
  while (got < len) {
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, timeout_ms);
    if (r == 0) return -ETIMEDOUT;
    if (r < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    ssize_t n = ::read(fd, static_cast<char*>(buf) + got, len - got);
    if (n == 0) return -ENODATA;
    if (n < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    got += static_cast<size_t>(n);
  }
  return 0;
}

void set_nodelay(const Ops& ops, int fd) {
  int one = 1;
  ops.setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// The same buffers for every transport, as rstream sets them (512 KiB,
// doubled by the stack): before connect/listen, so accepted sockets inherit.
void set_buffers(const Ops& ops, int fd) {
  int size = 512 * 1024;
  ops.setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
  ops.setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
}

// Serves one connection until kQuit (0) or a clean end of stream between
// commands (0); anything else is an error (-errno) with a message on stderr.
int serve(Conn& c, Transport t) {
  std::vector<uint8_t> buf;
  const char* who = transport_name(t);
  for (;;) {
    Cmd cmd;
    int rc = c.recv_all(&cmd, sizeof cmd, false);
    if (rc == 1) return 0;  // the client went away between commands
    if (rc) {
      fprintf(stderr, "server (%s): reading a command: %s\n", who, strerror(-rc));
      return rc;
    }
    if (cmd.op == kQuit) return 0;
    if (cmd.size == 0 || cmd.size > kMaxMessage) {
      fprintf(stderr, "server (%s): bad message size %u\n", who, cmd.size);
      return -EPROTO;
    }
    buf.resize(cmd.size);
    switch (cmd.op) {
      case kPing:
      case kPingSpin: {
        const bool spin = cmd.op == kPingSpin;
        for (uint64_t i = 0; i < cmd.count; i++) {
          rc = c.recv_all(buf.data(), cmd.size, spin);
          if (!rc) rc = c.send_all(buf.data(), cmd.size, spin);
          if (rc) {
            fprintf(stderr, "server (%s): ping-pong %llu/%llu: %s\n", who,
                    static_cast<unsigned long long>(i), static_cast<unsigned long long>(cmd.count),
                    rc == 1 ? "end of stream" : strerror(-rc));
            return rc == 1 ? -ENODATA : rc;
          }
        }
        break;
      }
      case kStream: {
        uint64_t h = kChecksumSeed;
        for (uint64_t i = 0; i < cmd.count; i++) {
          rc = c.recv_all(buf.data(), cmd.size, false);
          if (rc) {
            fprintf(stderr, "server (%s): stream message %llu/%llu: %s\n", who,
                    static_cast<unsigned long long>(i), static_cast<unsigned long long>(cmd.count),
                    rc == 1 ? "end of stream" : strerror(-rc));
            return rc == 1 ? -ENODATA : rc;
          }
          h = checksum_step(h, message_sum(buf.data(), cmd.size), i);
        }
        StreamReply r{cmd.count * cmd.size, h};
        rc = c.send_all(&r, sizeof r, false);
        if (rc) {
          fprintf(stderr, "server (%s): stream answer: %s\n", who, strerror(-rc));
          return rc;
        }
        break;
      }
      default:
        fprintf(stderr, "server (%s): unknown command %u\n", who, cmd.op);
        return -EPROTO;
    }
  }
}

// The forked child: listen, pass the port (or -errno) up the pipe, serve.
int server_main(Transport t, int wfd) {
  select_provider(t);
  const Ops& ops = ops_for(t);
  auto fail = [&](const char* what, int err) { return server_failed("server", t, wfd, what, err); };
  int lfd = ops.socket(AF_INET, SOCK_STREAM, 0);
  if (lfd < 0) return fail("socket", errno);
  int one = 1;
  if (t == Transport::kKernel) ops.setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  set_buffers(ops, lfd);
  sockaddr_in a = loopback(0);
  if (ops.bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0) return fail("bind", errno);
  if (ops.listen(lfd, 4) < 0) return fail("listen", errno);
  socklen_t alen = sizeof a;
  if (ops.getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &alen) < 0)
    return fail("getsockname", errno);
  int32_t port = ntohs(a.sin_port);
  if (::write(wfd, &port, sizeof port) != sizeof port) return fail("pipe", errno);
  ::close(wfd);
  int fd;
  do {
    fd = ops.accept(lfd, nullptr, nullptr);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return fail("accept", errno);
  ops.close(lfd);
  set_nodelay(ops, fd);
  Conn c{&ops, fd};
  int rc = serve(c, t);
  c.close();
  return rc ? 1 : 0;
}

}  // namespace

sockaddr_in loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

int server_failed(const char* server, Transport t, int wfd, const char* what, int err) {
  fprintf(stderr, "%s (%s): %s: %s\n", server, transport_name(t), what, strerror(err));
  int32_t v = -err;
  if (wfd >= 0 && ::write(wfd, &v, sizeof v) < 0) {
    // the parent has stopped waiting for the port
  }
  return 1;
}

const char* transport_name(Transport t) {
  switch (t) {
    case Transport::kKernel:
      return "kernel";
    case Transport::kShm:
      return "shm";
    case Transport::kTcp:
      return "tcp";
  }
  return "?";
}

bool parse_transport(const char* s, Transport* t) {
  for (Transport x : kAllTransports)
    if (strcmp(s, transport_name(x)) == 0) {
      *t = x;
      return true;
    }
  return false;
}

const Ops& ops_for(Transport t) { return t == Transport::kKernel ? kKernelOps : kRsocketOps; }

void select_provider(Transport t) {
  if (t == Transport::kKernel) return;
  setenv("SLIPSTREAM_PROVIDER", transport_name(t), 1);
  ss::config::reload();
}

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

int Conn::send_all(const void* buf, size_t len, bool spin) {
  const char* p = static_cast<const char*>(buf);
  const int flags = spin ? MSG_DONTWAIT : 0;
  while (len) {
    ssize_t n = ops->send(fd, p, len, flags);
    if (n < 0) {
      if (errno == EINTR || (spin && (errno == EAGAIN || errno == EWOULDBLOCK))) continue;
      return -errno;
    }
    if (n == 0) return -EPIPE;
    p += n;
    len -= static_cast<size_t>(n);
  }
  return 0;
}

// 0, 1 for an end of stream before the first byte, -ENODATA for one after
// it, else -errno.
int Conn::recv_all(void* buf, size_t len, bool spin) {
  char* p = static_cast<char*>(buf);
  const int flags = spin ? MSG_DONTWAIT : 0;
  size_t got = 0;
  while (got < len) {
    ssize_t n = ops->recv(fd, p + got, len - got, flags);
    if (n < 0) {
      if (errno == EINTR || (spin && (errno == EAGAIN || errno == EWOULDBLOCK))) continue;
      return -errno;
    }
    if (n == 0) return got ? -ENODATA : 1;
    got += static_cast<size_t>(n);
  }
  return 0;
}

int Conn::send_cmd(Op op, uint32_t size, uint64_t count) {
  Cmd c{op, size, count};
  return send_all(&c, sizeof c, false);
}

void Conn::close() {
  if (fd >= 0) ops->close(fd);
  fd = -1;
}

// Cheap enough not to be the bottleneck of the stream it checks (adds and
// xors vectorise); order across messages comes from checksum_step().
uint64_t message_sum(const uint8_t* p, size_t len) {
  uint64_t a = 1, b = 2, c = 3, d = 4;
  size_t i = 0;
  for (; i + 32 <= len; i += 32) {
    uint64_t w[4];
    memcpy(w, p + i, sizeof w);
    a += w[0];
    b ^= w[1];
    c += w[2];
    d ^= w[3];
  }
  for (; i < len; i++) a = a * 31 + p[i];
  uint64_t h = a ^ (b << 1 | b >> 63) ^ (c << 2 | c >> 62) ^ (d << 3 | d >> 61);
  return h ^ (h >> 31) ^ len;
}

StreamSource::StreamSource(size_t msg_size) : size_(msg_size), pattern_(msg_size + 64 * 64) {
  uint64_t x = 0x2545F4914F6CDD1Dull ^ msg_size;
  for (size_t i = 0; i + 8 <= pattern_.size(); i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    memcpy(&pattern_[i], &x, 8);
  }
  for (int i = 0; i < 64; i++) sums_[i] = message_sum(message(i), size_);
}

uint64_t StreamSource::expected(uint64_t count) const {
  uint64_t h = kChecksumSeed;
  for (uint64_t i = 0; i < count; i++) h = checksum_step(h, sums_[i % 64], i);
  return h;
}

int spawn_server(Transport t, int* port, int timeout_ms) {
  return spawn_server_with(server_main, t, port, timeout_ms);
}

int spawn_server_with(ServerMain main, Transport t, int* port, int timeout_ms) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) < 0) return -errno;
  fflush(nullptr);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(p[0]);
    ::close(p[1]);
    return -e;
  }
  if (pid == 0) {
    ::close(p[0]);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);  // the parent died before prctl
    signal(SIGPIPE, SIG_IGN);
    int rc = main(t, p[1]);
    fflush(nullptr);
    _exit(rc);
  }
  ::close(p[1]);
  int32_t v = 0;
  int rc = read_pipe(p[0], &v, sizeof v, timeout_ms);
  ::close(p[0]);
  if (rc == 0 && v <= 0) rc = v ? v : -EPROTO;
  if (rc) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return rc;
  }
  *port = v;
  return pid;
}

int reap_server(int pid, int timeout_ms, const char** why) {
  int status = 0;
  for (int waited = 0;; waited += 10) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0) {
      *why = "waitpid failed";
      return -1;
    }
    if (waited >= timeout_ms) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      *why = "server did not exit (killed)";
      return -1;
    }
    usleep(10000);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
  *why = WIFSIGNALED(status) ? "server killed by a signal" : "server exited with an error";
  return -1;
}

int connect_loopback(Transport t, int port, Conn* out) {
  select_provider(t);
  const Ops& ops = ops_for(t);
  int fd = ops.socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -errno;
  set_nodelay(ops, fd);
  set_buffers(ops, fd);
  sockaddr_in a = loopback(port);
  int rc;
  do {
    rc = ops.connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) {
    int e = errno;
    ops.close(fd);
    return -e;
  }
  set_nodelay(ops, fd);
  out->ops = &ops;
  out->fd = fd;
  return 0;
}

int run_pingpong(Conn& c, uint32_t size, uint64_t count, bool spin, std::vector<double>* rtt_ns,
                 const char** err) {
  const char* dummy;
  if (!err) err = &dummy;
  if (size < 8 || size > kMaxMessage) {
    *err = "bad message size";
    return -EINVAL;
  }
  std::vector<uint8_t> out(size), in(size);
  for (uint32_t i = 0; i < size; i++) out[i] = static_cast<uint8_t>(i * 7 + 1);
  int rc = c.send_cmd(spin ? kPingSpin : kPing, size, count);
  if (rc) {
    *err = "sending the command";
    return rc;
  }
  if (rtt_ns) rtt_ns->reserve(rtt_ns->size() + count);
  for (uint64_t i = 0; i < count; i++) {
    memcpy(out.data(), &i, sizeof i);
    uint64_t t0 = rtt_ns ? now_ns() : 0;
    rc = c.send_all(out.data(), size, spin);
    if (rc) {
      *err = "ping-pong send";
      return rc;
    }
    rc = c.recv_all(in.data(), size, spin);
    if (rc) {
      *err = rc == 1 ? "ping-pong: server closed" : "ping-pong receive";
      return rc == 1 ? -ENODATA : rc;
    }
    if (rtt_ns) rtt_ns->push_back(static_cast<double>(now_ns() - t0));
    if (memcmp(in.data(), out.data(), size) != 0) {
      // Say where, for whoever debugs the transport.
      static char why[160];
      uint32_t k = 0;
      while (k < size && in[k] == out[k]) k++;
      uint64_t got;
      memcpy(&got, in.data(), sizeof got);
      snprintf(why, sizeof why,
               "ping-pong: echo %llu of %llu differs from what was sent, from byte %u "
               "(its counter says %llu)",
               static_cast<unsigned long long>(i), static_cast<unsigned long long>(count), k,
               static_cast<unsigned long long>(got));
      *err = why;
      return -EBADMSG;
    }
  }
  return 0;
}

int run_stream(Conn& c, const StreamSource& src, uint64_t count, double* seconds,
               const char** err) {
  const char* dummy;
  if (!err) err = &dummy;
  const uint32_t size = static_cast<uint32_t>(src.msg_size());
  const uint64_t want = src.expected(count);
  int rc = c.send_cmd(kStream, size, count);
  if (rc) {
    *err = "sending the command";
    return rc;
  }
  uint64_t t0 = now_ns();
  for (uint64_t i = 0; i < count; i++) {
    rc = c.send_all(src.message(i), size, false);
    if (rc) {
      *err = "stream send";
      return rc;
    }
  }
  StreamReply r;
  rc = c.recv_all(&r, sizeof r, false);
  if (seconds) *seconds = static_cast<double>(now_ns() - t0) / 1e9;
  if (rc) {
    *err = rc == 1 ? "stream: server closed before answering" : "stream: receiving the answer";
    return rc == 1 ? -ENODATA : rc;
  }
  if (r.bytes != count * size) {
    *err = "stream: the server counted a different number of bytes";
    return -EBADMSG;
  }
  if (r.checksum != want) {
    *err = "stream: checksum mismatch (data corrupted)";
    return -EBADMSG;
  }
  return 0;
}

}  // namespace ssdemo
