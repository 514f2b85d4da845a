// The two ends of bench/soak.sh's mixed load, on librsocket (the provider
// comes from SLIPSTREAM_PROVIDER of each process).
//
//   soak_peer serve PORT_FILE
//     The long-lived process: listens on 127.0.0.1 (an ephemeral port,
//     written to PORT_FILE), a thread per connection. A connection whose
//     first byte is 'W' is a riowrite session (below); any other is echoed
//     until EOF, so rdmacm-utils' rstream -s (custom mode) is a client too.
//     Runs until SIGTERM; a connection's failure (a killed peer) ends only
//     that connection and is counted. SOAK_PEER_LEAK=1 leaks a descriptor
//     per session (to see bench/soak.sh fail).
//   soak_peer riowrite PORT SIZE ROUNDS
//     Sends 'W'; the server riomaps a SIZE-byte buffer and sends its
//     offset; each round riowrites a pattern seeded by the round there,
//     then sends the round number; the server checks the buffer and
//     answers one byte ('+' or '-').
//   soak_peer churn PORT COUNT
//     COUNT times: connect, one byte echoed, close.
//   soak_peer hang PORT
//     Connects, sends half a riowrite session's SIZE and stays there until
//     killed (the script SIGKILLs it: a peer dying mid-transfer).
// Clients exit 0 when every check passed, 1 with a message otherwise.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/rsocket.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

std::atomic<bool> g_stop{false};
std::atomic<long> g_sessions{0}, g_failed{0};

uint8_t pattern(uint64_t seed, size_t i) {
  return static_cast<uint8_t>((seed * 131 + i * 7) ^ (i >> 8));
}

bool io_all(int fd, void* buf, size_t len, bool send) {
  auto* p = static_cast<uint8_t*>(buf);
  while (len > 0) {
    const ssize_t n = send ? rsend(fd, p, len, 0) : rrecv(fd, p, len, 0);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return false;
    }
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

sockaddr_in loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  return a;
}

int set_iomap(int fd) {
  int one = 1;
  return rsetsockopt(fd, SOL_RDMA, RDMA_IOMAPSIZE, &one, sizeof one);
}

// ---------------------------------------------------------------------------
// Server

bool serve_riowrite(int fd) {
  uint32_t size = 0;
  if (!io_all(fd, &size, sizeof size, false) || size == 0 || size > (1u << 24)) return false;
  std::vector<uint8_t> buf(size);
  const off_t off = riomap(fd, buf.data(), size, PROT_WRITE, 0, -1);
  if (off == -1) return false;
  int64_t off64 = off;
  bool ok = io_all(fd, &off64, sizeof off64, true);
  for (uint32_t round; ok && io_all(fd, &round, sizeof round, false);) {
    size_t i = 0;
    while (i < size && buf[i] == pattern(round, i)) i++;
    char verdict = i == size ? '+' : '-';
    ok = io_all(fd, &verdict, 1, true) && verdict == '+';
  }
  riounmap(fd, buf.data(), size);
  return ok;
}

void serve_one(int fd) {
  uint8_t first = 0;
  bool ok = io_all(fd, &first, 1, false);
  if (ok && first == 'W') {
    ok = serve_riowrite(fd);
  } else if (ok) {
    ok = io_all(fd, &first, 1, true);
    std::vector<uint8_t> buf(65536);
    for (;;) {
      const ssize_t n = rrecv(fd, buf.data(), buf.size(), 0);
      if (n == 0) break;
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 || !io_all(fd, buf.data(), static_cast<size_t>(n), true)) {
        ok = false;
        break;
      }
    }
  }
  // A killed peer ends its session early: counted, not fatal.
  if (!ok) g_failed++;
  // SOAK_PEER_LEAK=1: a descriptor leaked per session, to see soak.sh fail.
  static const bool leak = getenv("SOAK_PEER_LEAK") != nullptr;
  if (leak) (void)dup(0);
  g_sessions++;
  rclose(fd);
}

int serve(const char* port_file) {
  struct sigaction sa {};
  sa.sa_handler = [](int) { g_stop = true; };
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  const int l = rsocket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = loopback(0);
  socklen_t len = sizeof a;
  if (l < 0 || set_iomap(l) || rbind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) ||
      rgetsockname(l, reinterpret_cast<sockaddr*>(&a), &len) || rlisten(l, 256)) {
    perror("soak_peer serve: listen");
    return 1;
  }
  FILE* f = fopen(port_file, "w");
  if (!f || fprintf(f, "%u\n", ntohs(a.sin_port)) < 0 || fclose(f) != 0) {
    perror(port_file);
    return 1;
  }
  while (!g_stop) {
    const int fd = raccept(l, nullptr, nullptr);
    if (fd < 0) {
      if (errno == EINTR) continue;
      perror("soak_peer serve: raccept");
      if (errno == EMFILE || errno == ENFILE) {
        usleep(100000);
        continue;
      }
      return 1;
    }
    std::thread(serve_one, fd).detach();
  }
  rclose(l);
  printf("soak_peer serve: %ld sessions, %ld ended early\n", g_sessions.load(), g_failed.load());
  return 0;
}

// ---------------------------------------------------------------------------
// Clients

int dial(uint16_t port, bool iomap) {
  const int fd = rsocket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = loopback(port);
  if (fd < 0 || (iomap && set_iomap(fd)) ||
      rconnect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a)) {
    perror("soak_peer: connect");
    exit(1);
  }
  return fd;
}

[[noreturn]] void fail(const char* what) {
  fprintf(stderr, "soak_peer: %s: %s\n", what, strerror(errno));
  exit(1);
}

// 'W', the size, the server's offset back.
int start_riowrite(uint16_t port, uint32_t size, off_t* off) {
  const int fd = dial(port, true);
  int64_t off64 = 0;
  if (!io_all(fd, const_cast<char*>("W"), 1, true) || !io_all(fd, &size, sizeof size, true) ||
      !io_all(fd, &off64, sizeof off64, false))
    fail("riowrite set-up");
  *off = static_cast<off_t>(off64);
  return fd;
}

int riowrite_client(uint16_t port, uint32_t size, uint32_t rounds) {
  off_t off = 0;
  const int fd = start_riowrite(port, size, &off);
  std::vector<uint8_t> buf(size);
  for (uint32_t r = 0; r < rounds; r++) {
    for (size_t i = 0; i < size; i++) buf[i] = pattern(r, i);
    char verdict = 0;
    if (riowrite(fd, buf.data(), size, off, 0) != size) fail("riowrite");  // size_t, as upstream
    if (!io_all(fd, &r, sizeof r, true) || !io_all(fd, &verdict, 1, false)) fail("round");
    if (verdict != '+') {
      fprintf(stderr, "soak_peer: riowrite round %u: the server found wrong bytes\n", r);
      return 1;
    }
  }
  rclose(fd);
  return 0;
}

int churn_client(uint16_t port, long count) {
  for (long i = 0; i < count; i++) {
    const int fd = dial(port, false);
    char c = static_cast<char>('a' + i % 26), back = 0;
    if (!io_all(fd, &c, 1, true) || !io_all(fd, &back, 1, false) || back != c) fail("churn echo");
    rclose(fd);
  }
  return 0;
}

int hang_client(uint16_t port) {
  off_t off = 0;
  const int fd = start_riowrite(port, 65536, &off);
  std::vector<uint8_t> half(32768, 0x5a);
  if (riowrite(fd, half.data(), half.size(), off, 0) != half.size()) fail("riowrite");
  for (;;) pause();
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "serve") && argc == 3) return serve(argv[2]);
  if (argc >= 3) {
    const auto port = static_cast<uint16_t>(atoi(argv[2]));
    if (!strcmp(mode, "riowrite") && argc == 5)
      return riowrite_client(port, static_cast<uint32_t>(atol(argv[3])),
                             static_cast<uint32_t>(atol(argv[4])));
    if (!strcmp(mode, "churn") && argc == 4) return churn_client(port, atol(argv[3]));
    if (!strcmp(mode, "hang") && argc == 3) return hang_client(port);
  }
  fprintf(stderr,
          "usage: soak_peer serve PORT_FILE | riowrite PORT SIZE ROUNDS | churn PORT COUNT | "
          "hang PORT\n");
  return 2;
}
