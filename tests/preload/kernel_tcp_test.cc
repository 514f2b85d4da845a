// Sockets the preload leaves to kernel TCP on purpose, in the
// differential suite: a socket duplicated before it connects or listens
// (a connect through one number could not move the others onto an
// rsocket). Their connections are the kernel's, so differential.sh runs
// these tests in a run of their own, apart from the counted run.
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>

#include "tests/preload/pair.h"

namespace differential {
namespace {

// Connected through the duplicate, used through the original.
TEST(DifferentialKernelTcp, FreshSocketDuplicatedThenConnected) {
  uint16_t port = 0;
  int l = make_listener(0, &port);
  ASSERT_GE(l, 0) << strerror(errno);
  int c = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(c, 0);
  int d = dup(c);
  ASSERT_GE(d, 0) << strerror(errno);
  sockaddr_in a = loopback(port);
  ASSERT_EQ(connect(d, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
  int s = accept(l, nullptr, nullptr);
  ASSERT_GE(s, 0) << strerror(errno);
  expect_link(c, s);
  expect_link(s, d);
  ASSERT_EQ(close(d), 0);
  expect_link(s, c);
  for (int fd : {s, c, l}) close(fd);
}

// Duplicated with F_DUPFD, listening through the original, accepting
// through the duplicate.
TEST(DifferentialKernelTcp, FreshSocketDuplicatedThenListening) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(l, 0);
  int d = fcntl(l, F_DUPFD_CLOEXEC, 50);
  ASSERT_GE(d, 50) << strerror(errno);
  sockaddr_in a = loopback(0);
  ASSERT_EQ(bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(l, 4), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(getsockname(d, reinterpret_cast<sockaddr*>(&a), &len), 0);
  int c = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
  pollfd pf{d, POLLIN, 0};
  EXPECT_EQ(poll(&pf, 1, 10000), 1);
  int s = accept(d, nullptr, nullptr);
  ASSERT_GE(s, 0) << strerror(errno);
  expect_link(c, s);
  expect_link(s, c);
  for (int fd : {s, c, d, l}) close(fd);
}

// Edge-triggered, a listener's kernel clients are edges too: one for a
// client on kernel TCP, then one for a client of the preload's own.
TEST(DifferentialKernelTcp, EdgeTriggeredListenerWithAKernelClient) {
  uint16_t port = 0;
  int l = make_listener(SOCK_NONBLOCK, &port);
  ASSERT_GE(l, 0) << strerror(errno);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLET;
  ev.data.fd = l;
  ASSERT_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev), 0);
  sockaddr_in a = loopback(port);
  int c[2];
  c[0] = socket(AF_INET, SOCK_STREAM, 0);
  int d = dup(c[0]);  // duplicated before it connects: kernel TCP
  ASSERT_GE(d, 0) << strerror(errno);
  c[1] = socket(AF_INET, SOCK_STREAM, 0);
  for (int i = 0; i < 2; i++) {
    ASSERT_EQ(connect(c[i], reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
    ASSERT_EQ(epoll_wait(ep, &ev, 1, 10000), 1) << "client " << i;
    EXPECT_EQ(epoll_wait(ep, &ev, 1, 0), 0) << "client " << i << ": reported again";
  }
  for (int i = 0; i < 2; i++) {
    int s = accept(l, nullptr, nullptr);
    ASSERT_GE(s, 0) << strerror(errno);
    close(s);
  }
  EXPECT_EQ(accept(l, nullptr, nullptr), -1);
  EXPECT_EQ(epoll_wait(ep, &ev, 1, 0), 0);
  for (int fd : {c[0], c[1], d, l, ep}) close(fd);
}

}  // namespace
}  // namespace differential
