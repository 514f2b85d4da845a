// Per-call cost of the data path without a second core: one thread drives
// both ends of a connection to itself, so `valgrind --tool=callgrind` (see
// bench/instr.sh) counts the instructions of rsend/rrecv and nothing is
// lost to scheduling. The provider comes from SLIPSTREAM_PROVIDER.
//
//   rsocket_instr pingpong ROUND_TRIPS [SIZE]   64 B by default
//   rsocket_instr stream MIB [SIZE]             64 KiB messages by default
//   rsocket_instr empty CALLS                   non-blocking rrecv with nothing
//                                               to read (one busy-poll step)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/rsocket.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

bool connect_self(int* client, int* server) {
  int l = rsocket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (l < 0 || rbind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) ||
      rgetsockname(l, reinterpret_cast<sockaddr*>(&a), &len) || rlisten(l, 1))
    return false;
  *client = rsocket(AF_INET, SOCK_STREAM, 0);
  if (*client < 0 || rconnect(*client, reinterpret_cast<sockaddr*>(&a), sizeof a)) return false;
  *server = raccept(l, nullptr, nullptr);
  rclose(l);
  return *server >= 0;
}

bool io_all(int fd, char* buf, size_t len, bool send) {
  for (size_t done = 0; done < len;) {
    ssize_t n = send ? rsend(fd, buf + done, len - done, 0) : rrecv(fd, buf + done, len - done, 0);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr,
            "usage: rsocket_instr pingpong ROUND_TRIPS [SIZE] | stream MIB [SIZE] | empty CALLS\n");
    return 2;
  }
  const std::string mode = argv[1];
  const long count = atol(argv[2]);
  const bool stream = mode == "stream";
  const size_t size = argc > 3 ? strtoul(argv[3], nullptr, 10) : (stream ? 65536 : 64);
  int c, s;
  if (!connect_self(&c, &s)) {
    perror("rsocket_instr: connect");
    return 1;
  }
  std::vector<char> src(size, 1), dst(size);
  auto t0 = std::chrono::steady_clock::now();
  if (stream) {
    // Send until the window is full, then drain: both copies on this thread.
    const long total = count << 20;
    long sent = 0, got = 0;
    size_t off = 0;
    while (got < total) {
      while (sent < total) {
        ssize_t n = rsend(c, src.data() + off, size - off, MSG_DONTWAIT);
        if (n <= 0) break;
        off = (off + static_cast<size_t>(n)) % size;
        sent += n;
      }
      ssize_t n;
      while ((n = rrecv(s, dst.data(), size, MSG_DONTWAIT)) > 0) got += n;
    }
  } else if (mode == "empty") {
    for (long i = 0; i < count; i++)
      if (rrecv(s, dst.data(), size, MSG_DONTWAIT) != -1 || errno != EAGAIN) {
        perror("rsocket_instr: empty rrecv");
        return 1;
      }
  } else {
    for (long i = 0; i < count; i++)
      if (!io_all(c, src.data(), size, true) || !io_all(s, dst.data(), size, false) ||
          !io_all(s, dst.data(), size, true) || !io_all(c, src.data(), size, false)) {
        perror("rsocket_instr: ping-pong");
        return 1;
      }
  }
  double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  if (stream)
    printf("%.2f GB/s (one thread, both copies)\n", static_cast<double>(count << 20) / us / 1e3);
  else if (mode == "empty")
    printf("%.3f us per empty rrecv\n", us / static_cast<double>(count));
  else
    printf("%.3f us per round trip (4 calls)\n", us / static_cast<double>(count));
  rclose(c);
  rclose(s);
  return 0;
}
