// A process publishing known counters for tests/ext/vma_stats.sh:
//   vma_stats_publisher DIR
// makes DIR/vmastat.<pid> with 8 fd blocks, fills them (fd 7: UDP,
// offloaded, 127.0.0.1:5001 -> 127.0.0.2:6001; fd 9: TCP on the kernel;
// fd 11 opened and closed again; one ring "lo"), prints "ready PID", and
// exits normally, removing the file, when its standard input ends.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cstdio>

#include "libvmacompat/stats_publisher.h"

using namespace ss::vma::stats;

static sockaddr_in v4(const char* ip, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  auto pub = Publisher::create(argv[1], 8);
  if (!pub) {
    perror("vma_stats_publisher: create");
    return 1;
  }
  SocketStats closed = pub->open_socket(11, SOCK_DGRAM, true);
  closed.add(kRxPackets, 999999);
  pub->close_socket(closed);

  SocketStats udp = pub->open_socket(7, SOCK_DGRAM, true);
  const sockaddr_in bound = v4("127.0.0.1", 5001), peer = v4("127.0.0.2", 6001);
  udp.set_bound(reinterpret_cast<const sockaddr*>(&bound), sizeof bound);
  udp.set_connected(reinterpret_cast<const sockaddr*>(&peer), sizeof peer);
  udp.set_flags(true, true, true);
  for (int i = 0; i < 1234; ++i) udp.add(kRxPackets);
  udp.add(kRxBytes, 2048000);  // 2000 Kbyte
  udp.add(kRxEagain, 5);
  udp.add(kRxErrors, 2);
  udp.add(kRxPollHit, 90);
  udp.add(kRxPollMiss, 10);
  udp.add(kTxPackets, 4321);
  udp.add(kTxBytes, 512000);  // 500 Kbyte
  udp.add(kTxErrors, 3);
  udp.raise(kRxReadyPktMax, 42);
  udp.raise(kRxReadyPktMax, 7);

  SocketStats tcp = pub->open_socket(9, SOCK_STREAM, false);
  tcp.add(kRxOsPackets, 55);
  tcp.add(kRxOsBytes, 56320);  // 55 Kbyte

  GroupStats ring = pub->open_group(kRing, 0, "lo");
  ring.add(kRingRxPackets, 777);

  printf("ready %d\n", getpid());
  fflush(stdout);
  char buf[64];
  while (fread(buf, 1, sizeof buf, stdin) > 0) {
  }
  return 0;
}
