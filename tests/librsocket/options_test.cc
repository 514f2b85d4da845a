// rsetsockopt / rgetsockopt on every provider and address family: the
// options upstream rsockets supports, when SOL_RDMA options may be set,
// and ENOTSUP for everything else.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>

#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/librsocket/conformance.h"

namespace rsconf {
namespace {

std::string errstr(int e) { return std::to_string(e) + " (" + strerror(e) + ")"; }

int get_int(int fd, int level, int name, int* out) {
  socklen_t len = sizeof *out;
  *out = -12345;
  int rc = rgetsockopt(fd, level, name, out, &len);
  if (rc == 0 && len != sizeof(int)) return -2;
  return rc;
}
int set_int(int fd, int level, int name, int v) {
  return rsetsockopt(fd, level, name, &v, sizeof v);
}

class OptionsTest : public ConnTest {
 protected:
  // A flag stored and read back on a connected socket: off by default, on,
  // off again.
  void expect_flag_round_trip(int level, int name) {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
    int v = -1;
    ASSERT_EQ(0, get_int(p.client, level, name, &v)) << strerror(errno);
    EXPECT_EQ(0, v);
    ASSERT_EQ(0, set_int(p.client, level, name, 1)) << strerror(errno);
    ASSERT_EQ(0, get_int(p.client, level, name, &v));
    EXPECT_NE(0, v);
    ASSERT_EQ(0, set_int(p.client, level, name, 0));
    ASSERT_EQ(0, get_int(p.client, level, name, &v));
    EXPECT_EQ(0, v);
  }
};

TEST_P(OptionsTest, SoReuseaddr) {
  RFd s(rsocket(family(), SOCK_STREAM, 0));
  ASSERT_GE(s.get(), 0);
  int v;
  ASSERT_EQ(0, get_int(s, SOL_SOCKET, SO_REUSEADDR, &v)) << strerror(errno);
  EXPECT_EQ(0, v);
  ASSERT_EQ(0, set_int(s, SOL_SOCKET, SO_REUSEADDR, 1)) << strerror(errno);
  ASSERT_EQ(0, get_int(s, SOL_SOCKET, SO_REUSEADDR, &v));
  EXPECT_NE(0, v);
  ASSERT_EQ(0, set_int(s, SOL_SOCKET, SO_REUSEADDR, 0));
  ASSERT_EQ(0, get_int(s, SOL_SOCKET, SO_REUSEADDR, &v));
  EXPECT_EQ(0, v);
}

TEST_P(OptionsTest, SoRcvbufSndbufAreDoubled) {
  RFd s(rsocket(family(), SOCK_STREAM, 0));
  ASSERT_GE(s.get(), 0);
  int v;
  ASSERT_EQ(0, get_int(s, SOL_SOCKET, SO_RCVBUF, &v)) << strerror(errno);
  EXPECT_GT(v, 0);
  ASSERT_EQ(0, get_int(s, SOL_SOCKET, SO_SNDBUF, &v)) << strerror(errno);
  EXPECT_GT(v, 0);
  ASSERT_EQ(0, set_int(s, SOL_SOCKET, SO_RCVBUF, 65536)) << strerror(errno);
  ASSERT_EQ(0, get_int(s, SOL_SOCKET, SO_RCVBUF, &v));
  EXPECT_EQ(2 * 65536, v);
  ASSERT_EQ(0, set_int(s, SOL_SOCKET, SO_SNDBUF, 32768)) << strerror(errno);
  ASSERT_EQ(0, get_int(s, SOL_SOCKET, SO_SNDBUF, &v));
  EXPECT_EQ(2 * 32768, v);
  ASSERT_EQ(0, set_int(s, SOL_SOCKET, SO_RCVBUF, 4096));
  ASSERT_EQ(0, get_int(s, SOL_SOCKET, SO_RCVBUF, &v));
  EXPECT_EQ(8192, v);
  ASSERT_EQ(0, set_int(s, SOL_SOCKET, SO_SNDBUF, 4096));
  ASSERT_EQ(0, get_int(s, SOL_SOCKET, SO_SNDBUF, &v));
  EXPECT_EQ(8192, v);
  // The sizes hold on the connection made with them.
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p, [](int fd) {
    ASSERT_EQ(0, set_int(fd, SOL_SOCKET, SO_RCVBUF, 16384));
    ASSERT_EQ(0, set_int(fd, SOL_SOCKET, SO_SNDBUF, 16384));
  }));
  ASSERT_EQ(0, get_int(p.client, SOL_SOCKET, SO_RCVBUF, &v));
  EXPECT_EQ(32768, v);
  ASSERT_EQ(0, get_int(p.client, SOL_SOCKET, SO_SNDBUF, &v));
  EXPECT_EQ(32768, v);
}

TEST_P(OptionsTest, SoKeepaliveAndTcpKeepidle) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  int v;
  ASSERT_EQ(0, get_int(p.client, SOL_SOCKET, SO_KEEPALIVE, &v)) << strerror(errno);
  EXPECT_EQ(0, v);
  ASSERT_EQ(0, set_int(p.client, IPPROTO_TCP, TCP_KEEPIDLE, 30)) << strerror(errno);
  ASSERT_EQ(0, get_int(p.client, IPPROTO_TCP, TCP_KEEPIDLE, &v)) << strerror(errno);
  EXPECT_EQ(30, v);
  ASSERT_EQ(0, set_int(p.client, SOL_SOCKET, SO_KEEPALIVE, 1)) << strerror(errno);
  ASSERT_EQ(0, get_int(p.client, SOL_SOCKET, SO_KEEPALIVE, &v));
  EXPECT_NE(0, v);
  // Accepted and ignored, as upstream.
  EXPECT_EQ(0, set_int(p.client, IPPROTO_TCP, TCP_KEEPCNT, 3)) << strerror(errno);
  EXPECT_EQ(0, set_int(p.client, IPPROTO_TCP, TCP_KEEPINTVL, 5)) << strerror(errno);
  ASSERT_EQ(0, get_int(p.client, IPPROTO_TCP, TCP_KEEPCNT, &v)) << strerror(errno);
  EXPECT_EQ(1, v);
  ASSERT_EQ(0, get_int(p.client, IPPROTO_TCP, TCP_KEEPINTVL, &v)) << strerror(errno);
  EXPECT_EQ(1, v);
  // The connection keeps working with keepalive on.
  ASSERT_EQ(2, rsend(p.client, "ka", 2, 0));
  char b[2];
  ASSERT_EQ(2u, recv_all(p.server, b, 2));
  ASSERT_EQ(0, set_int(p.client, SOL_SOCKET, SO_KEEPALIVE, 0));
  ASSERT_EQ(0, get_int(p.client, SOL_SOCKET, SO_KEEPALIVE, &v));
  EXPECT_EQ(0, v);
}

// A flag only, as upstream: stored and read back (rsockets have no
// out-of-band data to put inline).
TEST_P(OptionsTest, SoOobinline) { expect_flag_round_trip(SOL_SOCKET, SO_OOBINLINE); }

TEST_P(OptionsTest, SoLinger) {
  RFd s(rsocket(family(), SOCK_STREAM, 0));
  ASSERT_GE(s.get(), 0);
  linger l{1, 5};
  ASSERT_EQ(0, rsetsockopt(s, SOL_SOCKET, SO_LINGER, &l, sizeof l)) << strerror(errno);
  linger out{-1, -1};
  socklen_t len = sizeof out;
  ASSERT_EQ(0, rgetsockopt(s, SOL_SOCKET, SO_LINGER, &out, &len)) << strerror(errno);
  EXPECT_EQ(sizeof(linger), len);
  EXPECT_NE(0, out.l_onoff);
  EXPECT_EQ(5, out.l_linger);
  l = {0, 0};
  ASSERT_EQ(0, rsetsockopt(s, SOL_SOCKET, SO_LINGER, &l, sizeof l));
  len = sizeof out;
  ASSERT_EQ(0, rgetsockopt(s, SOL_SOCKET, SO_LINGER, &out, &len));
  EXPECT_EQ(0, out.l_onoff);
  // A short option value is refused.
  int one = 1;
  EXPECT_EQ(-1, rsetsockopt(s, SOL_SOCKET, SO_LINGER, &one, 1));
  EXPECT_EQ(EINVAL, errno) << errstr(errno);
}

TEST_P(OptionsTest, SoErrorIsZeroOnHealthySocket) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  int v;
  ASSERT_EQ(0, get_int(p.client, SOL_SOCKET, SO_ERROR, &v)) << strerror(errno);
  EXPECT_EQ(0, v);
  ASSERT_EQ(0, get_int(p.server, SOL_SOCKET, SO_ERROR, &v)) << strerror(errno);
  EXPECT_EQ(0, v);
  RFd fresh(rsocket(family(), SOCK_STREAM, 0));
  ASSERT_EQ(0, get_int(fresh, SOL_SOCKET, SO_ERROR, &v));
  EXPECT_EQ(0, v);
}

TEST_P(OptionsTest, TcpNodelay) { expect_flag_round_trip(IPPROTO_TCP, TCP_NODELAY); }

TEST_P(OptionsTest, TcpMaxseg) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  int v;
  ASSERT_EQ(0, get_int(p.client, IPPROTO_TCP, TCP_MAXSEG, &v)) << strerror(errno);
  EXPECT_GT(v, 0);
  EXPECT_EQ(0, set_int(p.client, IPPROTO_TCP, TCP_MAXSEG, 1400))
      << "accepted and ignored: " << strerror(errno);
}

TEST_P(OptionsTest, TcpInfoState) {
  RFd fresh(rsocket(family(), SOCK_STREAM, 0));
  ASSERT_GE(fresh.get(), 0);
  tcp_info ti{};
  socklen_t len = sizeof ti;
  ASSERT_EQ(0, rgetsockopt(fresh, IPPROTO_TCP, TCP_INFO, &ti, &len)) << strerror(errno);
  EXPECT_NE(TCP_ESTABLISHED, ti.tcpi_state);
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  for (int fd : {p.client.get(), p.server.get()}) {
    memset(&ti, 0xAB, sizeof ti);
    len = sizeof ti;
    ASSERT_EQ(0, rgetsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len)) << strerror(errno);
    EXPECT_GT(len, 0u);
    EXPECT_EQ(TCP_ESTABLISHED, ti.tcpi_state);
  }
  ASSERT_EQ(0, rshutdown(p.client, SHUT_RDWR));
  len = sizeof ti;
  ASSERT_EQ(0, rgetsockopt(p.client, IPPROTO_TCP, TCP_INFO, &ti, &len));
  EXPECT_NE(TCP_ESTABLISHED, ti.tcpi_state);
  // A short buffer gets the start of the structure.
  uint8_t state = 0xFF;
  len = 1;
  ASSERT_EQ(0, rgetsockopt(p.server, IPPROTO_TCP, TCP_INFO, &state, &len));
  EXPECT_EQ(1u, len);
}

TEST_P(OptionsTest, Ipv6V6only) {
  if (family() != AF_INET6) GTEST_SKIP() << "IPV6_V6ONLY applies to AF_INET6 sockets only";
  RFd s(rsocket(AF_INET6, SOCK_STREAM, 0));
  ASSERT_GE(s.get(), 0);
  int v;
  ASSERT_EQ(0, set_int(s, IPPROTO_IPV6, IPV6_V6ONLY, 1)) << strerror(errno);
  ASSERT_EQ(0, get_int(s, IPPROTO_IPV6, IPV6_V6ONLY, &v)) << strerror(errno);
  EXPECT_NE(0, v);
  ASSERT_EQ(0, set_int(s, IPPROTO_IPV6, IPV6_V6ONLY, 0));
  ASSERT_EQ(0, get_int(s, IPPROTO_IPV6, IPV6_V6ONLY, &v));
  EXPECT_EQ(0, v);
  // A v6-only listener still serves ::1.
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(
      AF_INET6, &p, {}, [](int fd) { ASSERT_EQ(0, set_int(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1)); }));
  ASSERT_EQ(1, rsend(p.client, "6", 1, 0));
  char b;
  ASSERT_EQ(1, rrecv(p.server, &b, 1, 0));
}

TEST_P(OptionsTest, RdmaSizesSettableBeforeConnectOnly) {
  RFd c(rsocket(family(), SOCK_STREAM, 0));
  ASSERT_GE(c.get(), 0);
  int v;
  for (int name : {RDMA_SQSIZE, RDMA_RQSIZE, RDMA_INLINE, RDMA_IOMAPSIZE}) {
    ASSERT_EQ(0, get_int(c, SOL_RDMA, name, &v)) << "option " << name << ": " << strerror(errno);
    EXPECT_GE(v, 0) << "option " << name;
  }
  ASSERT_EQ(0, get_int(c, SOL_RDMA, RDMA_SQSIZE, &v));
  EXPECT_GT(v, 0);
  ASSERT_EQ(0, set_int(c, SOL_RDMA, RDMA_SQSIZE, 128)) << strerror(errno);
  ASSERT_EQ(0, set_int(c, SOL_RDMA, RDMA_RQSIZE, 64)) << strerror(errno);
  ASSERT_EQ(0, set_int(c, SOL_RDMA, RDMA_INLINE, 32)) << strerror(errno);
  ASSERT_EQ(0, set_int(c, SOL_RDMA, RDMA_IOMAPSIZE, 2)) << strerror(errno);
  ASSERT_EQ(0, get_int(c, SOL_RDMA, RDMA_SQSIZE, &v));
  EXPECT_EQ(128, v);
  ASSERT_EQ(0, get_int(c, SOL_RDMA, RDMA_RQSIZE, &v));
  EXPECT_EQ(64, v);
  ASSERT_EQ(0, get_int(c, SOL_RDMA, RDMA_INLINE, &v));
  EXPECT_EQ(32, v);
  ASSERT_EQ(0, get_int(c, SOL_RDMA, RDMA_IOMAPSIZE, &v));
  EXPECT_EQ(2, v);
  // Clamped to 0xFFFE.
  ASSERT_EQ(0, set_int(c, SOL_RDMA, RDMA_SQSIZE, 0x10000));
  ASSERT_EQ(0, get_int(c, SOL_RDMA, RDMA_SQSIZE, &v));
  EXPECT_EQ(0xFFFE, v);
  ASSERT_EQ(0, set_int(c, SOL_RDMA, RDMA_SQSIZE, 128));

  Listener l;
  ASSERT_NO_FATAL_FAILURE(make_listener(family(), &l, [](int fd) {
    // A listener takes them before rlisten; accepted sockets inherit them.
    ASSERT_EQ(0, set_int(fd, SOL_RDMA, RDMA_RQSIZE, 32)) << strerror(errno);
  }));
  RFd s;
  ASSERT_NO_FATAL_FAILURE(connect_to(family(), l, &c, &s, [](int fd) {
    ASSERT_EQ(0, set_int(fd, SOL_RDMA, RDMA_SQSIZE, 128));
    ASSERT_EQ(0, set_int(fd, SOL_RDMA, RDMA_IOMAPSIZE, 2));
  }));
  for (int fd : {c.get(), s.get()}) {
    for (int name : {RDMA_SQSIZE, RDMA_RQSIZE, RDMA_INLINE, RDMA_IOMAPSIZE}) {
      EXPECT_EQ(-1, set_int(fd, SOL_RDMA, name, 16)) << "option " << name << " after connect";
      EXPECT_EQ(EINVAL, errno) << "option " << name << ": " << errstr(errno);
    }
  }
  ASSERT_EQ(0, get_int(c, SOL_RDMA, RDMA_SQSIZE, &v));
  EXPECT_EQ(128, v);
  ASSERT_EQ(0, get_int(c, SOL_RDMA, RDMA_IOMAPSIZE, &v));
  EXPECT_EQ(2, v);
  ASSERT_EQ(0, get_int(s, SOL_RDMA, RDMA_RQSIZE, &v));
  EXPECT_EQ(32, v) << "accepted socket did not inherit the listener's RDMA_RQSIZE";
}

// The iomap size travels in 8 bits: up to 128 as is, above that in units
// of 256 (reference §10.1: 129..255 round to 128, maximum 32512).
TEST_P(OptionsTest, RdmaIomapsizeEncoding) {
  RFd c(rsocket(family(), SOCK_STREAM, 0));
  ASSERT_GE(c.get(), 0);
  struct {
    int in, out;
  } cases[] = {{0, 0},     {1, 1},     {100, 100},   {128, 128},    {200, 128},
               {256, 256}, {300, 256}, {1024, 1024}, {32512, 32512}};
  for (auto t : cases) {
    ASSERT_EQ(0, set_int(c, SOL_RDMA, RDMA_IOMAPSIZE, t.in)) << t.in << ": " << strerror(errno);
    int v;
    ASSERT_EQ(0, get_int(c, SOL_RDMA, RDMA_IOMAPSIZE, &v));
    EXPECT_EQ(t.out, v) << "RDMA_IOMAPSIZE set to " << t.in;
  }
}

TEST_P(OptionsTest, RdmaRouteBadLengthIsEinval) {
  RFd c(rsocket(family(), SOCK_STREAM, 0));
  ASSERT_GE(c.get(), 0);
  ibv_path_data path{};
  EXPECT_EQ(-1, rsetsockopt(c, SOL_RDMA, RDMA_ROUTE, &path, 3));
  EXPECT_EQ(EINVAL, errno) << "bad length: " << errstr(errno);
  EXPECT_EQ(-1, rsetsockopt(c, SOL_RDMA, RDMA_ROUTE, &path, sizeof path + 1));
  EXPECT_EQ(EINVAL, errno) << "bad length: " << errstr(errno);
  EXPECT_EQ(-1, rsetsockopt(c, SOL_RDMA, RDMA_ROUTE, nullptr, sizeof path));
  EXPECT_EQ(EFAULT, errno) << errstr(errno);
}

TEST_P(OptionsTest, RdmaRouteOnlyWhereThereArePaths) {
  const bool verbs = strcmp(provider(), "verbs") == 0;
  ibv_path_data path[2] = {};
  socklen_t len = sizeof path;
  if (!verbs) {
    RFd c(rsocket(family(), SOCK_STREAM, 0));
    ASSERT_GE(c.get(), 0);
    // No path records on the software providers: a clear error.
    EXPECT_EQ(-1, rsetsockopt(c, SOL_RDMA, RDMA_ROUTE, &path[0], sizeof path[0]));
    EXPECT_EQ(ENOTSUP, errno) << errstr(errno);
    Pair p;
    ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
    EXPECT_EQ(-1, rgetsockopt(p.client, SOL_RDMA, RDMA_ROUTE, path, &len));
    EXPECT_EQ(ENOTSUP, errno) << errstr(errno);
    return;
  }
  if (verbs_is_iwarp(family())) {
    // iWARP connections are routed by TCP: no path records to report.
    Pair p;
    ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
    EXPECT_EQ(-1, rgetsockopt(p.client, SOL_RDMA, RDMA_ROUTE, path, &len));
    EXPECT_EQ(ENOENT, errno) << errstr(errno);
    return;
  }
  // verbs: a connection reports the path it resolved; a new socket given
  // that path connects without resolving a route.
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p, {}, {}, true));
  ASSERT_EQ(0, rgetsockopt(p.client, SOL_RDMA, RDMA_ROUTE, path, &len)) << errstr(errno);
  ASSERT_GE(len, sizeof path[0]);
  EXPECT_EQ(0u, len % sizeof path[0]);
  EXPECT_NE(0u, path[0].flags & IBV_PATH_FLAG_PRIMARY);
  RFd client, server;
  ASSERT_NO_FATAL_FAILURE(connect_to(family(), p.listener, &client, &server, [&](int fd) {
    ASSERT_EQ(0, rsetsockopt(fd, SOL_RDMA, RDMA_ROUTE, path, sizeof path[0])) << errstr(errno);
  }));
  char b = 'r';
  ASSERT_EQ(1, rsend(client, &b, 1, 0)) << errstr(errno);
  char got = 0;
  ASSERT_EQ(1, rrecv(server, &got, 1, 0)) << errstr(errno);
  EXPECT_EQ('r', got);
  // Once connecting, the route can no longer change.
  EXPECT_EQ(-1, rsetsockopt(client, SOL_RDMA, RDMA_ROUTE, path, sizeof path[0]));
  EXPECT_EQ(EINVAL, errno) << errstr(errno);
}

// SO_RCVTIMEO/SO_SNDTIMEO bound a blocking rrecv and rsend (EAGAIN, as
// the kernel's), an accepted socket takes its listener's, and rgetsockopt
// reads the value back. A call that ignored its timeout is ended by a
// watchdog 20 s later (rshutdown of the peer), so it fails, not hangs.
TEST_P(OptionsTest, TimeoutsEndBlockingCallsWithEagain) {
  const timeval tv{0, 100 * 1000};
  auto timed = [&](int fd) {
    ASSERT_EQ(0, rsetsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv)) << strerror(errno);
    ASSERT_EQ(0, rsetsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv)) << strerror(errno);
  };
  Pair p;
  // The client's timeouts after its connect: a blocking rconnect obeys
  // SO_SNDTIMEO as Linux's connect does (EINPROGRESS once it runs out),
  // and 100 ms is shorter than an iWARP handshake under ASan in the guest.
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p, {}, timed));
  ASSERT_NO_FATAL_FAILURE(timed(p.client));
  timeval got{};
  socklen_t len = sizeof got;
  ASSERT_EQ(0, rgetsockopt(p.server, SOL_SOCKET, SO_RCVTIMEO, &got, &len)) << strerror(errno);
  EXPECT_EQ(len, sizeof got);
  EXPECT_EQ(got.tv_sec * 1000000 + got.tv_usec, 100000) << "the accepted socket's";
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    for (int i = 0; i < 200 && !done; i++) usleep(100 * 1000);
    if (!done) {
      rshutdown(p.client, SHUT_RDWR);
      rshutdown(p.server, SHUT_RDWR);
    }
  });
  char b[16];
  EXPECT_EQ(-1, rrecv(p.client, b, sizeof b, 0));
  EXPECT_EQ(EAGAIN, errno) << errstr(errno);
  EXPECT_EQ(-1, rrecv(p.server, b, sizeof b, 0));
  EXPECT_EQ(EAGAIN, errno) << errstr(errno);
  std::vector<char> chunk(64 * 1024, 'y');  // nobody reads: the buffers fill
  size_t total = 0;
  int err = 0;
  while (total < (64u << 20)) {
    ssize_t n = rsend(p.client, chunk.data(), chunk.size(), MSG_NOSIGNAL);
    if (n < 0) {
      err = errno;
      break;
    }
    total += static_cast<size_t>(n);
  }
  EXPECT_EQ(EAGAIN, err) << "after " << total << " bytes: " << errstr(err);
  timeval bad{0, 1000000};
  EXPECT_EQ(-1, rsetsockopt(p.client, SOL_SOCKET, SO_RCVTIMEO, &bad, sizeof bad));
  EXPECT_EQ(EDOM, errno) << errstr(errno);
  done = true;
  watchdog.join();
}

// SO_RCVLOWAT as Linux's: below the mark a blocking receive waits and
// rpoll says nothing; at it the receive takes all there is. 0 reads as 1.
TEST_P(OptionsTest, ReceiveLowMark) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  int mark = 0;
  socklen_t len = sizeof mark;
  ASSERT_EQ(0, rsetsockopt(p.server, SOL_SOCKET, SO_RCVLOWAT, &mark, sizeof mark));
  ASSERT_EQ(0, rgetsockopt(p.server, SOL_SOCKET, SO_RCVLOWAT, &mark, &len));
  EXPECT_EQ(1, mark);
  mark = 10;
  ASSERT_EQ(0, rsetsockopt(p.server, SOL_SOCKET, SO_RCVLOWAT, &mark, sizeof mark));
  ASSERT_EQ(4, rsend(p.client, "abcd", 4, 0));
  pollfd pf{p.server, POLLIN, 0};
  EXPECT_EQ(0, rpoll(&pf, 1, 300)) << "readable below the mark";
  std::atomic<ssize_t> got{-2};
  char b[20];
  std::thread receiver([&] { got = rrecv(p.server, b, sizeof b, 0); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(-2, got.load()) << "a blocking receive returned below the mark";
  ASSERT_EQ(10, rsend(p.client, "efghijklmn", 10, 0));
  receiver.join();
  ASSERT_EQ(14, got.load());
  EXPECT_EQ(0, memcmp(b, "abcdefghijklmn", 14));
}

TEST_P(OptionsTest, UnsupportedOptionsAreEnotsup) {
  RFd c(rsocket(family(), SOCK_STREAM, 0));
  ASSERT_GE(c.get(), 0);
  struct {
    int level, name;
  } cases[] = {{SOL_SOCKET, SO_PRIORITY},
               {SOL_SOCKET, SO_SNDLOWAT},
               {IPPROTO_TCP, TCP_CORK},
               {IPPROTO_TCP, TCP_QUICKACK},
               {0x7777, 1},
               {SOL_RDMA, 99}};
  for (auto t : cases) {
    int v = 1;
    EXPECT_EQ(-1, rsetsockopt(c, t.level, t.name, &v, sizeof v))
        << "set level " << t.level << " name " << t.name;
    EXPECT_EQ(ENOTSUP, errno) << "set level " << t.level << " name " << t.name << ": "
                              << errstr(errno);
    socklen_t len = sizeof v;
    EXPECT_EQ(-1, rgetsockopt(c, t.level, t.name, &v, &len))
        << "get level " << t.level << " name " << t.name;
    EXPECT_EQ(ENOTSUP, errno) << "get level " << t.level << " name " << t.name << ": "
                              << errstr(errno);
  }
}

// A name not kept says so whatever its value's shape (upstream's order);
// TCP_CONGESTION takes a name of any length.
TEST_P(OptionsTest, UnsupportedNamesAreEnotsupBeforeTheirValueIsRead) {
  RFd c(rsocket(family(), SOCK_STREAM, 0));
  ASSERT_GE(c.get(), 0);
  EXPECT_EQ(-1, rsetsockopt(c, SOL_SOCKET, SO_BINDTODEVICE, "", 0));
  EXPECT_EQ(ENOTSUP, errno) << errstr(errno);
  EXPECT_EQ(-1, rsetsockopt(c, IPPROTO_TCP, TCP_CORK, "", 1));
  EXPECT_EQ(ENOTSUP, errno) << errstr(errno);
  EXPECT_EQ(0, rsetsockopt(c, IPPROTO_TCP, TCP_CONGESTION, "bbr", 3)) << errstr(errno);
  char one = 1;
  EXPECT_EQ(-1, rsetsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, 1));  // kept: a short value
  EXPECT_EQ(EINVAL, errno) << errstr(errno);
}

INSTANTIATE_TEST_SUITE_P(Providers, OptionsTest, ::testing::ValuesIn(all_params()), param_name);

}  // namespace
}  // namespace rsconf
