// errno for misuse, as the matching socket call would set it: EBADF on
// descriptors that are not rsockets, ENOTCONN, EINVAL, EAGAIN, EPIPE,
// ECONNREFUSED, EAFNOSUPPORT, ENOTSUP, EISCONN, EFAULT, EADDRINUSE.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/base/config.h"
#include "tests/librsocket/conformance.h"

namespace rsconf {
namespace {

std::string errstr(int e) { return std::to_string(e) + " (" + strerror(e) + ")"; }

// Non-parametrised misuse checks still pick a provider that exists.
class ErrnoPlain : public ::testing::Test {
 protected:
  void SetUp() override { select_provider("tcp"); }
};

// Every r-function on `fd` fails with -1 (or (size_t)-1) and EBADF.
void expect_all_ebadf(int fd, const std::string& what) {
  char buf[16] = {};
  iovec iov{buf, sizeof buf};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  Addr a = loopback(AF_INET, 1);
  socklen_t alen = sizeof(sockaddr_storage);
  sockaddr_storage ss{};
  int v = 1;
  socklen_t vlen = sizeof v;
  struct Call {
    const char* name;
    std::function<long()> fn;
  };
  std::vector<Call> calls = {
      {"rbind", [&] { return rbind(fd, a.sa(), a.len); }},
      {"rlisten", [&] { return rlisten(fd, 1); }},
      {"raccept", [&] { return raccept(fd, nullptr, nullptr); }},
      {"rconnect", [&] { return rconnect(fd, a.sa(), a.len); }},
      {"rshutdown", [&] { return rshutdown(fd, SHUT_RDWR); }},
      {"rrecv", [&] { return rrecv(fd, buf, sizeof buf, 0); }},
      {"rrecvfrom", [&] { return rrecvfrom(fd, buf, sizeof buf, 0, nullptr, nullptr); }},
      {"rrecvmsg", [&] { return rrecvmsg(fd, &msg, 0); }},
      {"rsend", [&] { return rsend(fd, buf, sizeof buf, 0); }},
      {"rsendto", [&] { return rsendto(fd, buf, sizeof buf, 0, nullptr, 0); }},
      {"rsendto+addr", [&] { return rsendto(fd, buf, sizeof buf, 0, a.sa(), a.len); }},
      {"rsendmsg", [&] { return rsendmsg(fd, &msg, 0); }},
      {"rread", [&] { return rread(fd, buf, sizeof buf); }},
      {"rreadv", [&] { return rreadv(fd, &iov, 1); }},
      {"rwrite", [&] { return rwrite(fd, buf, sizeof buf); }},
      {"rwritev", [&] { return rwritev(fd, &iov, 1); }},
      {"rgetpeername", [&] { return rgetpeername(fd, reinterpret_cast<sockaddr*>(&ss), &alen); }},
      {"rgetsockname", [&] { return rgetsockname(fd, reinterpret_cast<sockaddr*>(&ss), &alen); }},
      {"rsetsockopt", [&] { return rsetsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &v, sizeof v); }},
      {"rgetsockopt", [&] { return rgetsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &v, &vlen); }},
      {"rfcntl F_GETFL", [&] { return rfcntl(fd, F_GETFL); }},
      {"rfcntl F_SETFL", [&] { return rfcntl(fd, F_SETFL, O_NONBLOCK); }},
      {"riomap", [&] { return static_cast<long>(riomap(fd, buf, sizeof buf, PROT_WRITE, 0, 0)); }},
      {"riounmap", [&] { return riounmap(fd, buf, sizeof buf); }},
      {"riowrite", [&] { return static_cast<long>(riowrite(fd, buf, sizeof buf, 0, 0)); }},
      {"rclose", [&] { return rclose(fd); }},
  };
  for (const Call& c : calls) {
    errno = 0;
    long rc = c.fn();
    EXPECT_EQ(-1, rc) << c.name << " on " << what;
    EXPECT_EQ(EBADF, errno) << c.name << " on " << what << ": " << errstr(errno);
  }
}

TEST_F(ErrnoPlain, EbadfOnDescriptorsThatAreNotRsockets) {
  int p[2];
  ASSERT_EQ(0, pipe2(p, O_CLOEXEC));
  KFd r(p[0]), w(p[1]);
  expect_all_ebadf(r, "a pipe");
  // rclose of a non-rsocket must not close the descriptor.
  EXPECT_NE(-1, fcntl(r, F_GETFD)) << "rclose closed a descriptor it does not own";
  expect_all_ebadf(-1, "fd -1");
  expect_all_ebadf(1 << 20, "fd 1048576");
  expect_all_ebadf(70000, "fd 70000");
  // A closed rsocket.
  int s = rsocket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(s, 0);
  ASSERT_EQ(0, rclose(s));
  if (fcntl(s, F_GETFD) == -1) expect_all_ebadf(s, "a closed rsocket");
}

// Descriptor lookups are remembered per thread: one that knew the closed
// rsocket must find the new one that reuses its number.
TEST_F(ErrnoPlain, ReusedDescriptorIsTheNewRsocketInEveryThread) {
  int s = rsocket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(s, 0);
  int one = 1;
  ASSERT_EQ(0, rsetsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one));
  std::atomic<int> step{0};
  int seen = -1;
  std::thread t([&] {
    int v = 0;
    socklen_t len = sizeof v;
    rgetsockopt(s, SOL_SOCKET, SO_REUSEADDR, &v, &len);  // this thread knows s now
    step = 1;
    while (step != 2) std::this_thread::yield();
    len = sizeof v;
    if (rgetsockopt(s, SOL_SOCKET, SO_REUSEADDR, &v, &len) == 0) seen = v;
  });
  while (step != 1) std::this_thread::yield();
  EXPECT_EQ(0, rclose(s));
  int s2 = rsocket(AF_INET, SOCK_STREAM, 0);
  step = 2;
  t.join();
  EXPECT_GE(s2, 0);
  if (s2 == s) {
    EXPECT_EQ(0, seen) << "a thread's earlier lookup reached the closed rsocket";
  }
  if (s2 >= 0) rclose(s2);
}

TEST_F(ErrnoPlain, RcloseUnknownReturnsMinusOneEbadf) {
  errno = 0;
  EXPECT_EQ(-1, rclose(-1)) << "upstream returns a positive EBADF; Slipstream returns -1";
  EXPECT_EQ(EBADF, errno);
  errno = 0;
  EXPECT_EQ(-1, rclose(65535));
  EXPECT_EQ(EBADF, errno);
}

TEST_F(ErrnoPlain, RsocketFamilyTypeProtocol) {
  errno = 0;
  EXPECT_EQ(-1, rsocket(AF_UNIX, SOCK_STREAM, 0));
  EXPECT_EQ(EAFNOSUPPORT, errno) << errstr(errno);
  errno = 0;
  EXPECT_EQ(-1, rsocket(AF_PACKET, SOCK_STREAM, 0));
  EXPECT_EQ(EAFNOSUPPORT, errno) << errstr(errno);
  // Datagram rsockets: tests/librsocket/dgram_test.cc.
  for (int type : {SOCK_STREAM, SOCK_DGRAM}) {
    errno = 0;
    int s = rsocket(AF_INET, type, type == SOCK_STREAM ? IPPROTO_UDP : IPPROTO_TCP);
    if (s >= 0) rclose(s);
    EXPECT_EQ(-1, s);
    EXPECT_EQ(EPROTONOSUPPORT, errno) << errstr(errno);
  }
}

TEST_F(ErrnoPlain, UnconnectedSocket) {
  RFd s(rsocket(AF_INET, SOCK_STREAM, 0));
  ASSERT_GE(s.get(), 0);
  char b[4] = {};
  errno = 0;
  EXPECT_EQ(-1, rsend(s, b, sizeof b, 0));
  EXPECT_EQ(ENOTCONN, errno) << "rsend: " << errstr(errno);
  errno = 0;
  EXPECT_EQ(-1, rrecv(s, b, sizeof b, 0));
  EXPECT_EQ(ENOTCONN, errno) << "rrecv: " << errstr(errno);
  errno = 0;
  EXPECT_EQ(-1, rrecv(s, b, sizeof b, MSG_DONTWAIT));
  EXPECT_EQ(ENOTCONN, errno) << "rrecv MSG_DONTWAIT: " << errstr(errno);
  sockaddr_storage ss;
  socklen_t len = sizeof ss;
  errno = 0;
  EXPECT_EQ(-1, rgetpeername(s, reinterpret_cast<sockaddr*>(&ss), &len));
  EXPECT_EQ(ENOTCONN, errno) << "rgetpeername: " << errstr(errno);
  errno = 0;
  EXPECT_EQ(-1, rshutdown(s, SHUT_RDWR));
  EXPECT_EQ(ENOTCONN, errno) << "rshutdown: " << errstr(errno);
  errno = 0;
  EXPECT_EQ(-1, raccept(s, nullptr, nullptr));
  EXPECT_EQ(EINVAL, errno) << "raccept on a socket that does not listen: " << errstr(errno);
  uint8_t local[64];
  errno = 0;
  EXPECT_EQ(-1, riounmap(s, local, sizeof local));
  EXPECT_EQ(EINVAL, errno) << "riounmap of an unknown buffer: " << errstr(errno);
  // Bound twice.
  Addr a = loopback(AF_INET);
  ASSERT_EQ(0, rbind(s, a.sa(), a.len)) << strerror(errno);
  errno = 0;
  EXPECT_EQ(-1, rbind(s, a.sa(), a.len));
  EXPECT_EQ(EINVAL, errno) << "rbind twice: " << errstr(errno);
}

TEST_F(ErrnoPlain, ListeningSocketIsNotConnected) {
  Listener l;
  ASSERT_NO_FATAL_FAILURE(make_listener(AF_INET, &l));
  char b[4] = {};
  errno = 0;
  EXPECT_EQ(-1, rsend(l.fd, b, sizeof b, 0));
  EXPECT_EQ(ENOTCONN, errno) << errstr(errno);
  errno = 0;
  EXPECT_EQ(-1, rrecv(l.fd, b, sizeof b, MSG_DONTWAIT));
  EXPECT_EQ(ENOTCONN, errno) << errstr(errno);
  sockaddr_storage ss;
  socklen_t len = sizeof ss;
  errno = 0;
  EXPECT_EQ(-1, rgetpeername(l.fd, reinterpret_cast<sockaddr*>(&ss), &len));
  EXPECT_EQ(ENOTCONN, errno) << errstr(errno);
  errno = 0;
  EXPECT_EQ(-1, rconnect(l.fd, l.addr.sa(), l.addr.len));
  EXPECT_TRUE(errno == EINVAL || errno == EISCONN) << "rconnect on a listener: " << errstr(errno);
}

TEST_F(ErrnoPlain, NullPointersAreEfault) {
  RFd s(rsocket(AF_INET, SOCK_STREAM, 0));
  ASSERT_GE(s.get(), 0);
  socklen_t len = 16;
  errno = 0;
  EXPECT_EQ(-1, rgetsockname(s, nullptr, &len));
  EXPECT_EQ(EFAULT, errno) << errstr(errno);
  errno = 0;
  EXPECT_EQ(-1, rsetsockopt(s, SOL_SOCKET, SO_KEEPALIVE, nullptr, sizeof(int)));
  EXPECT_EQ(EFAULT, errno) << errstr(errno);
  int v;
  errno = 0;
  EXPECT_EQ(-1, rgetsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &v, nullptr));
  EXPECT_EQ(EFAULT, errno) << errstr(errno);
  errno = 0;
  EXPECT_EQ(-1, rpoll(nullptr, 1, 0));
  EXPECT_EQ(EFAULT, errno) << errstr(errno);
  errno = 0;
  EXPECT_EQ(-1, rsendmsg(s, nullptr, 0));
  EXPECT_EQ(EFAULT, errno) << errstr(errno);
  errno = 0;
  EXPECT_EQ(-1, rrecvmsg(s, nullptr, 0));
  EXPECT_EQ(EFAULT, errno) << errstr(errno);
}

// ---------------------------------------------------------------------------
// On connections, every provider and family.

class ErrnoTest : public ConnTest {};

TEST_P(ErrnoTest, ConnectRefused) {
  uint16_t port = unused_port(family());
  ASSERT_NE(0, port);
  Addr a = loopback(family(), port);
  RFd c(rsocket(family(), SOCK_STREAM, 0));
  ASSERT_GE(c.get(), 0);
  errno = 0;
  EXPECT_EQ(-1, rconnect(c, a.sa(), a.len));
  EXPECT_EQ(ECONNREFUSED, errno) << errstr(errno);
}

TEST_P(ErrnoTest, ConnectWrongFamilyIsEafnosupport) {
  int other = family() == AF_INET ? AF_INET6 : AF_INET;
  Addr a = loopback(other, 9);
  RFd c(rsocket(family(), SOCK_STREAM, 0));
  ASSERT_GE(c.get(), 0);
  errno = 0;
  EXPECT_EQ(-1, rconnect(c, a.sa(), a.len));
  EXPECT_EQ(EAFNOSUPPORT, errno) << errstr(errno);
}

TEST_P(ErrnoTest, ConnectedSocketMisuse) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p, {}, {}, true));
  errno = 0;
  EXPECT_EQ(-1, rlisten(p.client, 5));
  EXPECT_EQ(EINVAL, errno) << "rlisten on a connected socket: " << errstr(errno);
  errno = 0;
  EXPECT_EQ(-1, rlisten(p.server, 5));
  EXPECT_EQ(EINVAL, errno) << "rlisten on an accepted socket: " << errstr(errno);
  for (int how : {-1, 3, 7}) {
    errno = 0;
    EXPECT_EQ(-1, rshutdown(p.client, how)) << "how " << how;
    EXPECT_EQ(EINVAL, errno) << "how " << how << ": " << errstr(errno);
  }
  errno = 0;
  EXPECT_EQ(-1, rconnect(p.client, p.listener.addr.sa(), p.listener.addr.len));
  EXPECT_EQ(EISCONN, errno) << errstr(errno);
  errno = 0;
  EXPECT_EQ(-1, rsendto(p.client, "x", 1, 0, p.listener.addr.sa(), p.listener.addr.len));
  EXPECT_EQ(EISCONN, errno) << errstr(errno);
  char b[4];
  errno = 0;
  EXPECT_EQ(-1, rrecv(p.client, b, sizeof b, MSG_DONTWAIT));
  EXPECT_EQ(EAGAIN, errno) << errstr(errno);
  errno = 0;
  EXPECT_EQ(-1, rsend(p.client, nullptr, 10, 0));
  EXPECT_EQ(EFAULT, errno) << "rsend(NULL): " << errstr(errno);
  errno = 0;
  EXPECT_EQ(-1, rrecv(p.client, nullptr, 10, MSG_DONTWAIT));
  EXPECT_EQ(EFAULT, errno) << "rrecv(NULL): " << errstr(errno);
  errno = 0;
  EXPECT_EQ(-1, rgetpeername(p.client, nullptr, nullptr));
  EXPECT_EQ(EFAULT, errno) << errstr(errno);
  errno = 0;
  EXPECT_EQ(-1, rbind(p.client, p.listener.addr.sa(), p.listener.addr.len));
  EXPECT_EQ(EINVAL, errno) << "rbind on a connected socket: " << errstr(errno);
  // The connection still works after all that.
  ASSERT_EQ(2, rsend(p.client, "ok", 2, 0));
  ASSERT_EQ(2u, recv_all(p.server, b, 2));
}

TEST_P(ErrnoTest, SendAfterOwnShutWrIsEpipe) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  ASSERT_EQ(0, rshutdown(p.client, SHUT_WR));
  errno = 0;
  EXPECT_EQ(-1, rsend(p.client, "x", 1, 0));
  EXPECT_EQ(EPIPE, errno) << errstr(errno);
  iovec iov{const_cast<char*>("y"), 1};
  errno = 0;
  EXPECT_EQ(-1, rwritev(p.client, &iov, 1));
  EXPECT_EQ(EPIPE, errno) << errstr(errno);
  errno = 0;
  EXPECT_EQ(-1, rsend(p.client, "x", 1, MSG_DONTWAIT));
  EXPECT_EQ(EPIPE, errno) << errstr(errno);
}

// A second rsocket binding the address a listener holds: EADDRINUSE, as
// bind(2); the listener goes on accepting.
TEST_P(ErrnoTest, BindToAListenersAddressIsEaddrinuse) {
  Listener l;
  ASSERT_NO_FATAL_FAILURE(make_listener(family(), &l));
  RFd other(rsocket(family(), SOCK_STREAM, 0));
  ASSERT_GE(other.get(), 0);
  errno = 0;
  EXPECT_EQ(-1, rbind(other, l.addr.sa(), l.addr.len));
  EXPECT_EQ(EADDRINUSE, errno) << errstr(errno);
  RFd c, s;
  ASSERT_NO_FATAL_FAILURE(connect_to(family(), l, &c, &s));
}

INSTANTIATE_TEST_SUITE_P(Providers, ErrnoTest, ::testing::ValuesIn(all_params()), param_name);

}  // namespace
}  // namespace rsconf
