// Port numbers the program owns: a TCP listener's port number is free in
// UDP's port space, as the kernel keeps the two apart. Under the preload
// a listener's side channel answers probes on that number (tcp provider,
// docs/architecture.md "librspreload") and must give it up to the program.
#include "tests/preload/pair.h"

namespace differential {
namespace {

TEST(DifferentialPorts, UdpBindOnAListenersPortNumber) {
  uint16_t port = 0;
  int l = make_listener(0, &port);
  ASSERT_GE(l, 0) << strerror(errno);
  int u = socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(u, 0);
  sockaddr_in a = loopback(port);
  ASSERT_EQ(bind(u, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
  // The program's socket gets the datagrams sent to it.
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(s, 0);
  ASSERT_EQ(sendto(s, "ping", 4, 0, reinterpret_cast<sockaddr*>(&a), sizeof a), 4);
  char buf[16];
  EXPECT_EQ(recv(u, buf, sizeof buf, 0), 4);
  // The listener still takes connections.
  int c = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_EQ(connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
  int acc = accept(l, nullptr, nullptr);
  EXPECT_GE(acc, 0) << strerror(errno);
  for (int fd : {acc, c, s, u, l})
    if (fd >= 0) close(fd);
}

// A UDP port another socket holds stays refused: only the side channel's
// own binding is given up.
TEST(DifferentialPorts, UdpPortHeldByTheProgramStaysInUse) {
  int u = socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(u, 0);
  sockaddr_in a = loopback(0);
  ASSERT_EQ(bind(u, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(getsockname(u, reinterpret_cast<sockaddr*>(&a), &len), 0);
  int v = socket(AF_INET, SOCK_DGRAM, 0);
  EXPECT_EQ(bind(v, reinterpret_cast<sockaddr*>(&a), sizeof a), -1);
  EXPECT_EQ(errno, EADDRINUSE);
  close(v);
  close(u);
}

}  // namespace
}  // namespace differential
