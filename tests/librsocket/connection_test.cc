// Connection behaviour on every provider and address family: connect
// (blocking, non-blocking, to itself), names, blocking modes, MSG_PEEK,
// MSG_WAITALL, shutdown, rclose, rfcntl.
#include <fcntl.h>
#include <poll.h>
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

class ConnectionTest : public ConnTest {};

std::string errstr(int e) { return std::to_string(e) + " (" + strerror(e) + ")"; }

TEST_P(ConnectionTest, BlockingExchangeBothWays) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  const char ping[] = "ping from client";
  const char pong[] = "pong from server";
  ASSERT_EQ(static_cast<ssize_t>(sizeof ping), rsend(p.client, ping, sizeof ping, 0))
      << strerror(errno);
  char buf[64] = {};
  ASSERT_EQ(sizeof ping, recv_all(p.server, buf, sizeof ping));
  EXPECT_STREQ(ping, buf);
  ASSERT_EQ(static_cast<ssize_t>(sizeof pong), rwrite(p.server, pong, sizeof pong))
      << strerror(errno);
  memset(buf, 0, sizeof buf);
  size_t got = 0;
  while (got < sizeof pong) {
    ssize_t n = rread(p.client, buf + got, sizeof pong - got);
    ASSERT_GT(n, 0) << "rread: " << strerror(errno);
    got += static_cast<size_t>(n);
  }
  EXPECT_STREQ(pong, buf);
}

// One thread connects to its own listener without a concurrent raccept: the
// passive side completes without the application (upstream #512).
TEST_P(ConnectionTest, SingleThreadConnectsToOwnListener) {
  Listener l;
  ASSERT_NO_FATAL_FAILURE(make_listener(family(), &l));
  RFd c(rsocket(family(), SOCK_STREAM, 0));
  ASSERT_GE(c.get(), 0);
  int rc = -1, e = 0;
  bool in_time = run_with_timeout(
      [&] {
        rc = rconnect(c, l.addr.sa(), l.addr.len);
        e = errno;
      },
      30, [&] { rshutdown(c, SHUT_RDWR); });
  ASSERT_TRUE(in_time) << "rconnect to an own listener blocked until raccept was called";
  ASSERT_EQ(0, rc) << strerror(e);
  RFd s(raccept(l.fd, nullptr, nullptr));
  ASSERT_GE(s.get(), 0) << strerror(errno);
  ASSERT_EQ(3, rsend(c, "abc", 3, 0));
  char b[3];
  ASSERT_EQ(3u, recv_all(s, b, 3));
  EXPECT_EQ(0, memcmp(b, "abc", 3));
}

// The listen service's thread stops with the last listener, and the next
// rlisten starts another: an rclose of the last listener racing a new
// rlisten on another thread must return (an old thread that missed its
// stop would run on, and that rclose would wait for it for ever), and the
// new listener must be served.
TEST_P(ConnectionTest, LastListenerCloseRacesNewListen) {
  for (int round = 0; round < 40 && !HasFailure(); round++) {
    Listener old_l, fresh;
    ASSERT_NO_FATAL_FAILURE(make_listener(family(), &old_l));
    bool in_time = run_with_timeout(
        [&] {
          std::thread closer([&] { old_l.fd.reset(); });
          make_listener(family(), &fresh);
          closer.join();
        },
        30);
    ASSERT_TRUE(in_time) << "round " << round << ": closing the last listener hung";
    ASSERT_GE(fresh.fd.get(), 0);
    RFd c, s;
    ASSERT_NO_FATAL_FAILURE(connect_to(family(), fresh, &c, &s)) << "round " << round;
  }
}

// Data the active side sends as soon as its rconnect returns, before the
// passive side calls raccept, is delivered (and wakes the reader).
TEST_P(ConnectionTest, DataSentBeforeRacceptArrives) {
  Listener l;
  ASSERT_NO_FATAL_FAILURE(make_listener(family(), &l));
  for (int i = 0; i < 20; i++) {
    SCOPED_TRACE("connection " + std::to_string(i));
    RFd c(rsocket(family(), SOCK_STREAM, 0));
    ASSERT_GE(c.get(), 0);
    ASSERT_EQ(0, rconnect(c, l.addr.sa(), l.addr.len)) << strerror(errno);
    ASSERT_EQ(5, rsend(c, "early", 5, 0)) << strerror(errno);
    RFd s(raccept(l.fd, nullptr, nullptr));
    ASSERT_GE(s.get(), 0) << strerror(errno);
    char b[5] = {};
    size_t got = 0;
    bool ok =
        run_with_timeout([&] { got = recv_all(s, b, 5); }, 10, [&] { rshutdown(s, SHUT_RDWR); });
    ASSERT_TRUE(ok) << "bytes sent before raccept never arrived";
    ASSERT_EQ(5u, got);
    EXPECT_EQ(0, memcmp(b, "early", 5));
  }
}

TEST_P(ConnectionTest, NamesMatchBothEnds) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p, {}, {}, /*keep_listener=*/true));
  Addr c_local, c_peer, s_local, s_peer;
  c_local.len = c_peer.len = s_local.len = s_peer.len = sizeof(sockaddr_storage);
  ASSERT_EQ(0, rgetsockname(p.client, c_local.sa(), &c_local.len)) << strerror(errno);
  ASSERT_EQ(0, rgetpeername(p.client, c_peer.sa(), &c_peer.len)) << strerror(errno);
  ASSERT_EQ(0, rgetsockname(p.server, s_local.sa(), &s_local.len)) << strerror(errno);
  ASSERT_EQ(0, rgetpeername(p.server, s_peer.sa(), &s_peer.len)) << strerror(errno);
  for (const Addr* a : {&c_local, &c_peer, &s_local, &s_peer}) {
    EXPECT_EQ(family(), a->family()) << a->str();
    EXPECT_EQ(family() == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in), a->len);
    EXPECT_NE(0, a->port()) << a->str();
  }
  EXPECT_TRUE(same_endpoint(c_peer, p.listener.addr))
      << "client's peer " << c_peer.str() << " vs listener " << p.listener.addr.str();
  EXPECT_TRUE(same_endpoint(s_local, p.listener.addr))
      << "accepted socket's name " << s_local.str() << " vs listener " << p.listener.addr.str();
  EXPECT_TRUE(same_endpoint(c_local, s_peer))
      << "client's name " << c_local.str() << " vs server's peer " << s_peer.str();

  // raccept fills in the same peer address.
  RFd c2, s2;
  ASSERT_NO_FATAL_FAILURE(connect_to(family(), p.listener, &c2, &s2));
  Addr c2_local;
  c2_local.len = sizeof c2_local.ss;
  ASSERT_EQ(0, rgetsockname(c2, c2_local.sa(), &c2_local.len));
  RFd c3(rsocket(family(), SOCK_STREAM, 0));
  ASSERT_GE(c3.get(), 0);
  ASSERT_EQ(0, rconnect(c3, p.listener.addr.sa(), p.listener.addr.len)) << strerror(errno);
  Addr from;
  from.len = sizeof from.ss;
  RFd s3(raccept(p.listener.fd, from.sa(), &from.len));
  ASSERT_GE(s3.get(), 0) << strerror(errno);
  Addr c3_local;
  c3_local.len = sizeof c3_local.ss;
  ASSERT_EQ(0, rgetsockname(c3, c3_local.sa(), &c3_local.len));
  EXPECT_TRUE(same_endpoint(from, c3_local)) << from.str() << " vs " << c3_local.str();

  // A short buffer is filled partly; the length says the real size.
  Addr small;
  small.len = 4;
  ASSERT_EQ(0, rgetpeername(p.client, small.sa(), &small.len));
  EXPECT_EQ(c_peer.len, small.len);
}

TEST_P(ConnectionTest, BoundClientConnectsFromItsAddress) {
  // A client that binds first connects from that address and port (on
  // iWARP the device's own TCP socket shares the binding).
  Listener l;
  ASSERT_NO_FATAL_FAILURE(make_listener(family(), &l));
  Addr bound = loopback(family());
  RFd c, s;
  ASSERT_NO_FATAL_FAILURE(connect_to(family(), l, &c, &s, [&](int fd) {
    ASSERT_EQ(0, rbind(fd, bound.sa(), bound.len)) << strerror(errno);
    bound.len = sizeof bound.ss;
    ASSERT_EQ(0, rgetsockname(fd, bound.sa(), &bound.len)) << strerror(errno);
  }));
  Addr peer;
  peer.len = sizeof peer.ss;
  ASSERT_EQ(0, rgetpeername(s, peer.sa(), &peer.len)) << strerror(errno);
  EXPECT_TRUE(same_endpoint(bound, peer)) << bound.str() << " vs " << peer.str();
  char b = 'x';
  ASSERT_EQ(1, rsend(c, &b, 1, 0)) << strerror(errno);
  char got = 0;
  ASSERT_EQ(1, rrecv(s, &got, 1, 0)) << strerror(errno);
  EXPECT_EQ('x', got);
}

TEST_P(ConnectionTest, NonblockingConnectInProgressThenPolloutThenSoError0) {
  Listener l;
  ASSERT_NO_FATAL_FAILURE(make_listener(family(), &l));
  RFd c(rsocket(family(), SOCK_STREAM | SOCK_NONBLOCK, 0));
  ASSERT_GE(c.get(), 0) << strerror(errno);
  int fl = rfcntl(c, F_GETFL);
  ASSERT_NE(-1, fl);
  EXPECT_TRUE(fl & O_NONBLOCK) << "SOCK_NONBLOCK not applied at rsocket()";
  int rc = rconnect(c, l.addr.sa(), l.addr.len);
  int e = errno;
  // verbs resolves address and route in the background: never done at once.
  if (strcmp(provider(), "verbs") == 0) {
    EXPECT_EQ(-1, rc) << "expected EINPROGRESS";
  }
  if (rc != 0) {
    ASSERT_EQ(EINPROGRESS, e) << "non-blocking rconnect: " << errstr(e);
    // Data calls while connecting do not block.
    char b;
    ssize_t n = rrecv(c, &b, 1, 0);
    EXPECT_EQ(-1, n);
    rc = rconnect(c, l.addr.sa(), l.addr.len);
    if (rc != 0) {
      EXPECT_TRUE(errno == EALREADY || errno == EISCONN) << errstr(errno);
    }
  }
  short rev = wait_events(c, POLLOUT, 20000);
  ASSERT_TRUE(rev & POLLOUT) << "revents " << rev;
  EXPECT_FALSE(rev & (POLLERR | POLLHUP | POLLNVAL)) << "revents " << rev;
  int err = -1;
  socklen_t len = sizeof err;
  ASSERT_EQ(0, rgetsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len)) << strerror(errno);
  EXPECT_EQ(0, err) << strerror(err);
  EXPECT_EQ(-1, rconnect(c, l.addr.sa(), l.addr.len));
  EXPECT_EQ(EISCONN, errno) << errstr(errno);

  ASSERT_TRUE(wait_events(l.fd, POLLIN) & POLLIN);
  RFd s(raccept(l.fd, nullptr, nullptr));
  ASSERT_GE(s.get(), 0) << strerror(errno);
  ASSERT_EQ(5, rsend(c, "hello", 5, 0)) << strerror(errno);
  char b[5];
  ASSERT_EQ(5u, recv_all(s, b, 5));
  EXPECT_EQ(0, memcmp(b, "hello", 5));
}

TEST_P(ConnectionTest, NonblockingConnectRefusedReportsSoError) {
  uint16_t port = unused_port(family());
  ASSERT_NE(0, port);
  Addr a = loopback(family(), port);
  RFd c(rsocket(family(), SOCK_STREAM, 0));
  ASSERT_GE(c.get(), 0);
  ASSERT_EQ(0, rfcntl(c, F_SETFL, O_NONBLOCK));
  int rc = rconnect(c, a.sa(), a.len);
  if (rc == 0) FAIL() << "rconnect to a port nobody listens on succeeded";
  if (errno == ECONNREFUSED) return;  // refused at once: allowed
  ASSERT_EQ(EINPROGRESS, errno) << errstr(errno);
  short rev = wait_events(c, POLLOUT, 20000);
  EXPECT_TRUE(rev & (POLLERR | POLLOUT)) << "revents " << rev;
  EXPECT_TRUE(rev & POLLERR) << "a refused connect shows POLLERR; revents " << rev;
  int err = -1;
  socklen_t len = sizeof err;
  ASSERT_EQ(0, rgetsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len));
  EXPECT_EQ(ECONNREFUSED, err) << errstr(err);
  err = -1;
  ASSERT_EQ(0, rgetsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len));
  EXPECT_EQ(0, err) << "SO_ERROR must clear the pending error";
}

TEST_P(ConnectionTest, FcntlNonblockRecvEagainThenData) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  int fl = rfcntl(p.server, F_GETFL);
  ASSERT_NE(-1, fl) << strerror(errno);
  EXPECT_FALSE(fl & O_NONBLOCK);
  ASSERT_EQ(0, rfcntl(p.server, F_SETFL, fl | O_NONBLOCK)) << strerror(errno);
  EXPECT_TRUE(rfcntl(p.server, F_GETFL) & O_NONBLOCK);
  char b[16];
  EXPECT_EQ(-1, rrecv(p.server, b, sizeof b, 0));
  EXPECT_EQ(EAGAIN, errno) << errstr(errno);
  EXPECT_EQ(-1, rread(p.server, b, sizeof b));
  EXPECT_TRUE(errno == EAGAIN || errno == EWOULDBLOCK) << errstr(errno);
  ASSERT_EQ(4, rsend(p.client, "data", 4, 0));
  ASSERT_TRUE(wait_events(p.server, POLLIN) & POLLIN);
  ASSERT_EQ(4, rrecv(p.server, b, sizeof b, 0)) << strerror(errno);
  EXPECT_EQ(0, memcmp(b, "data", 4));
  ASSERT_EQ(0, rfcntl(p.server, F_SETFL, fl & ~O_NONBLOCK));
  EXPECT_FALSE(rfcntl(p.server, F_GETFL) & O_NONBLOCK);
  // Blocking again: a later send is received by a blocking rrecv.
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    rsend(p.client, "x", 1, 0);
  });
  EXPECT_EQ(1, rrecv(p.server, b, 1, 0)) << strerror(errno);
  t.join();
}

TEST_P(ConnectionTest, MsgDontwaitOnBlockingSocket) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  char b[8];
  EXPECT_EQ(-1, rrecv(p.client, b, sizeof b, MSG_DONTWAIT));
  EXPECT_EQ(EAGAIN, errno) << errstr(errno);
  EXPECT_FALSE(rfcntl(p.client, F_GETFL) & O_NONBLOCK) << "MSG_DONTWAIT changed the socket";
  ASSERT_EQ(3, rsend(p.server, "abc", 3, MSG_DONTWAIT)) << strerror(errno);
  ASSERT_TRUE(wait_events(p.client, POLLIN) & POLLIN);
  EXPECT_EQ(3, rrecv(p.client, b, sizeof b, MSG_DONTWAIT)) << strerror(errno);
  EXPECT_EQ(-1, rrecvfrom(p.client, b, sizeof b, MSG_DONTWAIT, nullptr, nullptr));
  EXPECT_EQ(EAGAIN, errno) << errstr(errno);
}

TEST_P(ConnectionTest, NonblockingListenerAndAcceptedFlags) {
  Listener l;
  ASSERT_NO_FATAL_FAILURE(make_listener(family(), &l, [](int fd) {
    ASSERT_EQ(0, rfcntl(fd, F_SETFL, O_NONBLOCK));
    ASSERT_EQ(0, rfcntl(fd, F_SETFD, FD_CLOEXEC));
  }));
  EXPECT_EQ(-1, raccept(l.fd, nullptr, nullptr));
  EXPECT_TRUE(errno == EAGAIN || errno == EWOULDBLOCK) << errstr(errno);
  RFd c(rsocket(family(), SOCK_STREAM, 0));
  ASSERT_GE(c.get(), 0);
  ASSERT_EQ(0, rconnect(c, l.addr.sa(), l.addr.len)) << strerror(errno);
  ASSERT_TRUE(wait_events(l.fd, POLLIN) & POLLIN);
  RFd s(raccept(l.fd, nullptr, nullptr));
  ASSERT_GE(s.get(), 0) << strerror(errno);
  // Linux accept(): neither O_NONBLOCK nor FD_CLOEXEC is inherited (DESIGN
  // reference §18 #22).
  EXPECT_FALSE(rfcntl(s, F_GETFL) & O_NONBLOCK);
  EXPECT_EQ(0, rfcntl(s, F_GETFD) & FD_CLOEXEC);
}

TEST_P(ConnectionTest, FcntlFlags) {
  RFd a(rsocket(family(), SOCK_STREAM, 0));
  ASSERT_GE(a.get(), 0);
  int fl = rfcntl(a, F_GETFL);
  ASSERT_NE(-1, fl) << strerror(errno);
  EXPECT_EQ(O_RDWR, fl & O_ACCMODE);
  EXPECT_FALSE(fl & O_NONBLOCK);
  ASSERT_EQ(0, rfcntl(a, F_SETFL, fl | O_NONBLOCK));
  EXPECT_TRUE(rfcntl(a, F_GETFL) & O_NONBLOCK);
  ASSERT_EQ(0, rfcntl(a, F_SETFL, fl));
  EXPECT_FALSE(rfcntl(a, F_GETFL) & O_NONBLOCK);
  EXPECT_EQ(0, rfcntl(a, F_GETFD));
  ASSERT_EQ(0, rfcntl(a, F_SETFD, FD_CLOEXEC));
  EXPECT_EQ(FD_CLOEXEC, rfcntl(a, F_GETFD));
  ASSERT_EQ(0, rfcntl(a, F_SETFD, 0));
  EXPECT_EQ(0, rfcntl(a, F_GETFD));

  RFd b(rsocket(family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  ASSERT_GE(b.get(), 0) << strerror(errno);
  EXPECT_TRUE(rfcntl(b, F_GETFL) & O_NONBLOCK);
  EXPECT_EQ(FD_CLOEXEC, rfcntl(b, F_GETFD));

  // Only the four commands are supported (upstream: ENOTSUP otherwise).
  EXPECT_EQ(-1, rfcntl(a, F_GETOWN));
  EXPECT_EQ(ENOTSUP, errno) << errstr(errno);

  // The flags hold on a connected socket too.
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  ASSERT_EQ(0, rfcntl(p.client, F_SETFD, FD_CLOEXEC));
  EXPECT_EQ(FD_CLOEXEC, rfcntl(p.client, F_GETFD));
  ASSERT_EQ(0, rfcntl(p.client, F_SETFL, O_NONBLOCK));
  EXPECT_TRUE(rfcntl(p.client, F_GETFL) & O_NONBLOCK);
}

TEST_P(ConnectionTest, MsgPeekDoesNotConsume) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  ASSERT_EQ(6, rsend(p.client, "abcdef", 6, 0));
  ASSERT_TRUE(wait_events(p.server, POLLIN) & POLLIN);
  char b[16] = {};
  ASSERT_EQ(3, rrecv(p.server, b, 3, MSG_PEEK)) << strerror(errno);
  EXPECT_EQ(0, memcmp(b, "abc", 3));
  memset(b, 0, sizeof b);
  ASSERT_EQ(6, rrecv(p.server, b, sizeof b, MSG_PEEK));
  EXPECT_EQ(0, memcmp(b, "abcdef", 6));
  // Partly consume, then peek at the rest.
  ASSERT_EQ(2, rrecv(p.server, b, 2, 0));
  EXPECT_EQ(0, memcmp(b, "ab", 2));
  memset(b, 0, sizeof b);
  ASSERT_EQ(4, rrecv(p.server, b, sizeof b, MSG_PEEK | MSG_DONTWAIT));
  EXPECT_EQ(0, memcmp(b, "cdef", 4));
  ASSERT_EQ(4, rrecv(p.server, b, sizeof b, 0));
  EXPECT_EQ(0, memcmp(b, "cdef", 4));
  EXPECT_EQ(-1, rrecv(p.server, b, sizeof b, MSG_PEEK | MSG_DONTWAIT));
  EXPECT_EQ(EAGAIN, errno) << errstr(errno);

  // Peek across two separate sends.
  ASSERT_EQ(3, rsend(p.client, "123", 3, 0));
  ASSERT_EQ(3, rsend(p.client, "456", 3, 0));
  ssize_t n = 0;
  for (int i = 0; i < 1000 && n < 6; i++) {
    ASSERT_TRUE(wait_events(p.server, POLLIN) & POLLIN);
    n = rrecv(p.server, b, 6, MSG_PEEK);
    ASSERT_GT(n, 0) << strerror(errno);
    if (n < 6) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(6, n);
  EXPECT_EQ(0, memcmp(b, "123456", 6));
  ASSERT_EQ(6u, recv_all(p.server, b, 6));
  EXPECT_EQ(0, memcmp(b, "123456", 6));
}

TEST_P(ConnectionTest, MsgWaitallGathersSeveralSends) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  constexpr size_t kChunk = 997, kCount = 20, kTotal = kChunk * kCount;
  std::thread t([&] {
    std::vector<uint8_t> buf(kChunk);
    for (size_t i = 0; i < kCount; i++) {
      fill_pattern(buf.data(), kChunk, 77, i * kChunk);
      send_all(p.client, buf.data(), kChunk);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  std::vector<uint8_t> got(kTotal);
  ssize_t n = rrecv(p.server, got.data(), kTotal, MSG_WAITALL);
  int e = errno;
  t.join();
  ASSERT_EQ(static_cast<ssize_t>(kTotal), n) << "MSG_WAITALL returned early; " << strerror(e);
  EXPECT_EQ(SIZE_MAX, check_pattern(got.data(), kTotal, 77));

  // At end of stream MSG_WAITALL returns what there was.
  ASSERT_EQ(10, rsend(p.client, "0123456789", 10, 0));
  ASSERT_EQ(0, rshutdown(p.client, SHUT_WR)) << strerror(errno);
  char b[100];
  EXPECT_EQ(10, rrecv(p.server, b, sizeof b, MSG_WAITALL));
  errno = 0;
  EXPECT_EQ(0, rrecv(p.server, b, sizeof b, MSG_WAITALL)) << " errno " << strerror(errno);
}

// One MSG_WAITALL read of many receive buffers' worth: the reader must
// return credits while it is still inside the call, or the blocked writer
// and it wait for each other for ever.
TEST_P(ConnectionTest, MsgWaitallLongerThanTheReceiveBuffer) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  constexpr size_t kTotal = 4u << 20;  // far beyond the default buffers
  std::vector<uint8_t> out(kTotal), got(kTotal);
  fill_pattern(out.data(), kTotal, 91);
  size_t sent = 0;
  ssize_t n = -1;
  int e = 0;
  std::thread writer([&] { sent = send_all(p.client, out.data(), kTotal); });
  // The writer fills the window and blocks first: then only credits the
  // reader returns from inside its call can move anything.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  bool in_time = run_with_timeout(
      [&] {
        n = rrecv(p.server, got.data(), kTotal, MSG_WAITALL);
        e = errno;
      },
      30,
      [&] {
        rshutdown(p.server, SHUT_RDWR);
        rshutdown(p.client, SHUT_RDWR);
      });
  writer.join();
  ASSERT_TRUE(in_time) << "writer and MSG_WAITALL reader stalled (credits not returned)";
  ASSERT_EQ(kTotal, sent);
  ASSERT_EQ(static_cast<ssize_t>(kTotal), n) << strerror(e);
  EXPECT_EQ(SIZE_MAX, check_pattern(got.data(), kTotal, 91));
}

TEST_P(ConnectionTest, ShutdownWrQueuedDataThenEofHalfClose) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  std::vector<uint8_t> data(100000);
  fill_pattern(data.data(), data.size(), 5);
  ASSERT_EQ(data.size() / 2, send_all(p.client, data.data(), data.size() / 2));
  // The rest goes out in a thread: it may need credits the reader returns.
  std::thread t([&] {
    send_all(p.client, data.data() + data.size() / 2, data.size() - data.size() / 2);
    rshutdown(p.client, SHUT_WR);
  });
  std::vector<uint8_t> got(data.size());
  int err = 0;
  ASSERT_EQ(data.size(), recv_all(p.server, got.data(), got.size(), &err)) << strerror(err);
  t.join();
  EXPECT_EQ(SIZE_MAX, check_pattern(got.data(), got.size(), 5));
  char b[8];
  errno = 0;
  EXPECT_EQ(0, rrecv(p.server, b, sizeof b, 0)) << "no EOF after peer SHUT_WR"
                                                << " errno " << strerror(errno);
  errno = 0;
  EXPECT_EQ(0, rrecv(p.server, b, sizeof b, 0)) << "EOF is not sticky"
                                                << " errno " << strerror(errno);
  short rev = wait_events(p.server, POLLIN, 2000);
  EXPECT_TRUE(rev & POLLIN) << "EOF must show as readable; revents " << rev;

  // Half close: the other direction still works.
  ASSERT_EQ(5, rsend(p.server, "after", 5, 0)) << strerror(errno);
  ASSERT_EQ(5u, recv_all(p.client, b, 5));
  EXPECT_EQ(0, memcmp(b, "after", 5));

  // Writing after our own SHUT_WR: EPIPE.
  EXPECT_EQ(-1, rsend(p.client, "x", 1, 0));
  EXPECT_EQ(EPIPE, errno) << errstr(errno);
}

TEST_P(ConnectionTest, ShutdownRdStopsReadingKeepsWriting) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  ASSERT_EQ(0, rshutdown(p.client, SHUT_RD)) << strerror(errno);
  char b[8];
  ssize_t n = -2;
  ASSERT_TRUE(run_with_timeout([&] { n = rrecv(p.client, b, sizeof b, 0); }, 10,
                               [&] { rsend(p.server, "u", 1, 0); }))
      << "rrecv blocked after SHUT_RD";
  EXPECT_EQ(0, n);
  ASSERT_EQ(4, rsend(p.client, "more", 4, 0)) << strerror(errno);
  ASSERT_EQ(4u, recv_all(p.server, b, 4));
  EXPECT_EQ(0, memcmp(b, "more", 4));
}

TEST_P(ConnectionTest, ShutdownRdwrPeerReadsQueuedDataThenEof) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  ASSERT_EQ(7, rsend(p.client, "goodbye", 7, 0));
  ASSERT_EQ(0, rshutdown(p.client, SHUT_RDWR)) << strerror(errno);
  char b[16];
  errno = 0;
  EXPECT_EQ(0, rrecv(p.client, b, sizeof b, 0)) << " errno " << strerror(errno);
  EXPECT_EQ(-1, rsend(p.client, "x", 1, 0));
  EXPECT_EQ(EPIPE, errno) << errstr(errno);
  ASSERT_EQ(7u, recv_all(p.server, b, 7));
  EXPECT_EQ(0, memcmp(b, "goodbye", 7));
  errno = 0;
  EXPECT_EQ(0, rrecv(p.server, b, sizeof b, 0)) << " errno " << strerror(errno);
  // Writing to a peer that is gone fails (EPIPE, or ECONNRESET as upstream).
  ssize_t n = 0;
  for (int i = 0; i < 100 && n >= 0; i++) {
    n = rsend(p.server, "y", 1, 0);
    if (n >= 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(-1, n);
  EXPECT_TRUE(errno == EPIPE || errno == ECONNRESET) << errstr(errno);
}

TEST_P(ConnectionTest, RcloseGivesPeerDataThenEof) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  std::vector<uint8_t> data(5000);
  fill_pattern(data.data(), data.size(), 9);
  ASSERT_EQ(data.size(), send_all(p.client, data.data(), data.size()));
  int fd = p.client.release();
  EXPECT_EQ(0, rclose(fd)) << strerror(errno);
  std::vector<uint8_t> got(data.size());
  ASSERT_EQ(got.size(), recv_all(p.server, got.data(), got.size()));
  EXPECT_EQ(SIZE_MAX, check_pattern(got.data(), got.size(), 9));
  char b;
  errno = 0;
  EXPECT_EQ(0, rrecv(p.server, &b, 1, 0)) << " errno " << strerror(errno);
  // The descriptor is gone.
  EXPECT_EQ(-1, rsend(fd, "x", 1, 0));
  EXPECT_EQ(EBADF, errno) << errstr(errno);
  EXPECT_EQ(-1, rclose(fd));
  EXPECT_EQ(EBADF, errno) << errstr(errno);
}

// The closer's last messages must reach a peer that is still reading and
// sending credit updates: on iWARP a send completes once TCP holds its
// bytes, and closing then could reset the connection (the delivery fence).
TEST_P(ConnectionTest, RcloseRightAfterBulkSendLosesNothing) {
  constexpr size_t kTotal = 4 << 20, kChunk = 64 << 10, kRead = 8 << 10;
  std::vector<uint8_t> data(kTotal);
  fill_pattern(data.data(), data.size(), 21);
  for (int round = 0; round < 4; round++) {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
    int fd = p.client.release();
    std::thread sender([&] {
      for (size_t off = 0; off < kTotal; off += kChunk)
        if (send_all(fd, data.data() + off, kChunk) != kChunk) break;
      rclose(fd);
    });
    std::vector<uint8_t> got(kTotal);
    size_t have = 0;
    int err = 0;
    while (have < kTotal) {
      const size_t want = std::min(kRead, kTotal - have);
      const size_t n = recv_all(p.server, got.data() + have, want, &err);
      have += n;
      if (n != want) break;
      // A slow reader: credit updates keep flowing while the sender closes.
      if (have % (256 << 10) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    sender.join();
    ASSERT_EQ(kTotal, have) << "round " << round << ": " << errstr(err);
    EXPECT_EQ(SIZE_MAX, check_pattern(got.data(), got.size(), 21));
    char b;
    errno = 0;
    EXPECT_EQ(0, rrecv(p.server, &b, 1, 0)) << "round " << round << ": " << errstr(errno);
  }
}

TEST_P(ConnectionTest, ConnectTwiceIsEisconnAndSendtoWithAddress) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p, {}, {}, true));
  EXPECT_EQ(-1, rconnect(p.client, p.listener.addr.sa(), p.listener.addr.len));
  EXPECT_EQ(EISCONN, errno) << errstr(errno);
  EXPECT_EQ(-1, rsendto(p.client, "x", 1, 0, p.listener.addr.sa(), p.listener.addr.len));
  EXPECT_EQ(EISCONN, errno) << errstr(errno);
  // Without an address rsendto is rsend.
  ASSERT_EQ(1, rsendto(p.client, "z", 1, 0, nullptr, 0)) << strerror(errno);
  char b;
  ASSERT_EQ(1, rrecv(p.server, &b, 1, 0));
  EXPECT_EQ('z', b);
}

INSTANTIATE_TEST_SUITE_P(Providers, ConnectionTest, ::testing::ValuesIn(all_params()), param_name);

// An AF_INET6 listener on the wildcard: without IPV6_V6ONLY IPv4 peers
// reach it too, as the kernel's (their names v4-mapped on its side); with
// it they are refused. The provider is forced, so a connection that only
// the kernel could make fails here. (Not run on verbs: rdma_cm's own
// rules decide there.)
class DualStackTest : public ConnTest {
 protected:
  // An AF_INET6 listener on [::] with IPV6_V6ONLY = v6only; its port.
  uint16_t listen_any6(RFd* l, int v6only) {
    l->reset(rsocket(AF_INET6, SOCK_STREAM, 0));
    EXPECT_GE(l->get(), 0) << strerror(errno);
    EXPECT_EQ(0, rsetsockopt(*l, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only))
        << strerror(errno);
    sockaddr_in6 any{};
    any.sin6_family = AF_INET6;
    any.sin6_addr = in6addr_any;
    EXPECT_EQ(0, rbind(*l, reinterpret_cast<sockaddr*>(&any), sizeof any)) << strerror(errno);
    EXPECT_EQ(0, rlisten(*l, 8)) << strerror(errno);
    Addr name;
    name.len = sizeof name.ss;
    EXPECT_EQ(0, rgetsockname(*l, name.sa(), &name.len)) << strerror(errno);
    return name.port();
  }
  // An rsocket of `family` connecting to loopback:port; rconnect's result.
  int connect_loopback(int family, uint16_t port, RFd* c) {
    c->reset(rsocket(family, SOCK_STREAM, 0));
    EXPECT_GE(c->get(), 0) << strerror(errno);
    Addr dst = loopback(family, port);
    return rconnect(*c, dst.sa(), dst.len);
  }
};

std::vector<ConnParam> dual_stack_params() {
  std::vector<ConnParam> v;
  for (const ConnParam& p : all_params())
    if (p.family == AF_INET6 && strcmp(p.provider, "verbs") != 0) v.push_back(p);
  return v;
}

bool v4_mapped(const Addr& a, uint16_t port) {
  if (a.family() != AF_INET6 || a.len != sizeof(sockaddr_in6)) return false;
  auto& in6 = reinterpret_cast<const sockaddr_in6&>(a.ss);
  const in_addr lo{htonl(INADDR_LOOPBACK)};
  return IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr) && memcmp(&in6.sin6_addr.s6_addr[12], &lo, 4) == 0 &&
         ntohs(in6.sin6_port) == port;
}

TEST_P(DualStackTest, Ipv4PeerReachesAWildcardIpv6Listener) {
  RFd l;
  const uint16_t port = listen_any6(&l, 0);
  ASSERT_FALSE(HasFailure());
  RFd c;
  ASSERT_EQ(0, connect_loopback(AF_INET, port, &c)) << strerror(errno);
  const Addr dst = loopback(AF_INET, port);
  Addr from;
  from.len = sizeof from.ss;
  RFd s(raccept(l, from.sa(), &from.len));
  ASSERT_GE(s.get(), 0) << strerror(errno);

  Addr c_local, c_peer, s_local, s_peer;
  c_local.len = c_peer.len = s_local.len = s_peer.len = sizeof(sockaddr_storage);
  ASSERT_EQ(0, rgetsockname(c, c_local.sa(), &c_local.len)) << strerror(errno);
  ASSERT_EQ(0, rgetpeername(c, c_peer.sa(), &c_peer.len)) << strerror(errno);
  ASSERT_EQ(0, rgetsockname(s, s_local.sa(), &s_local.len)) << strerror(errno);
  ASSERT_EQ(0, rgetpeername(s, s_peer.sa(), &s_peer.len)) << strerror(errno);
  EXPECT_TRUE(same_endpoint(c_peer, dst)) << c_peer.str();
  EXPECT_EQ(AF_INET, c_local.family()) << c_local.str();
  EXPECT_TRUE(v4_mapped(from, c_local.port())) << from.str() << " for " << c_local.str();
  EXPECT_TRUE(v4_mapped(s_peer, c_local.port())) << s_peer.str();
  EXPECT_TRUE(v4_mapped(s_local, port)) << s_local.str();

  char b = 'x', got = 0;
  ASSERT_EQ(1, rsend(c, &b, 1, 0)) << strerror(errno);
  ASSERT_EQ(1, rrecv(s, &got, 1, 0)) << strerror(errno);
  EXPECT_EQ('x', got);
  b = 'y';
  ASSERT_EQ(1, rsend(s, &b, 1, 0)) << strerror(errno);
  ASSERT_EQ(1, rrecv(c, &got, 1, 0)) << strerror(errno);
  EXPECT_EQ('y', got);
}

TEST_P(DualStackTest, Ipv6OnlyListenerRefusesIpv4Peers) {
  RFd l;
  const uint16_t port = listen_any6(&l, 1);
  ASSERT_FALSE(HasFailure());
  RFd c;
  EXPECT_EQ(-1, connect_loopback(AF_INET, port, &c));
  EXPECT_EQ(ECONNREFUSED, errno) << strerror(errno);
  // IPv6 peers still reach it.
  RFd c6;
  ASSERT_EQ(0, connect_loopback(AF_INET6, port, &c6)) << strerror(errno);
  RFd s(raccept(l, nullptr, nullptr));
  EXPECT_GE(s.get(), 0) << strerror(errno);
}

INSTANTIATE_TEST_SUITE_P(Providers, DualStackTest, ::testing::ValuesIn(dual_stack_params()),
                         param_name);

}  // namespace
}  // namespace rsconf
