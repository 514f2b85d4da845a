// The datagram part of the conformance suite: SOCK_DGRAM rsockets keep
// UDP's semantics and errno, parametrised over the transports datagram
// rsockets have and both address families: "udp" (SLIPSTREAM_PROVIDER=tcp:
// the kernel's UDP only) and "shm" (SLIPSTREAM_PROVIDER=shm: shared-memory
// rings between these same-host sockets once a destination's rendezvous
// answered, which `warm` waits for).
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "core/base/config.h"
#include "core/base/fd_passing.h"
#include "librsocket/dgram_ring.h"
#include "librsocket/dgram_shm.h"
#include "tests/librsocket/conformance.h"
#include "tests/librsocket/fork_util.h"

using namespace rsconf;

namespace {

constexpr size_t kMaxPayload = 2040;  // a 2048-byte slot less our 8-byte header (rsocket(7))
constexpr uint32_t kTag = 0x53534447;

struct DgramParam {
  const char* transport;
  int family;
};
void PrintTo(const DgramParam& p, std::ostream* os) {
  *os << p.transport << (p.family == AF_INET6 ? " over AF_INET6" : " over AF_INET");
}
std::string dgram_name(const ::testing::TestParamInfo<DgramParam>& info) {
  return std::string(info.param.transport) + (info.param.family == AF_INET6 ? "_v6" : "_v4");
}

std::string errstr(int e) { return std::to_string(e) + " (" + strerror(e) + ")"; }

ss_dgram_drops drops_of(int fd) {
  ss_dgram_drops d{};
  socklen_t len = sizeof d;
  EXPECT_EQ(0, rgetsockopt(fd, SOL_RDMA, SS_DGRAM_DROPS, &d, &len)) << errstr(errno);
  EXPECT_EQ(sizeof d, len);
  return d;
}

// A datagram of `len` pattern bytes whose first 8 bytes (when there is
// room) carry `id`, so a receiver can tell datagrams apart.
std::vector<uint8_t> datagram(uint64_t id, size_t len) {
  std::vector<uint8_t> v(len);
  fill_pattern(v.data(), len, id);
  if (len >= sizeof id) memcpy(v.data(), &id, sizeof id);
  return v;
}
bool is_datagram(const uint8_t* p, size_t len, uint64_t* id) {
  if (len < sizeof *id) return false;
  memcpy(id, p, sizeof *id);
  std::vector<uint8_t> want = datagram(*id, len);
  return memcmp(want.data(), p, len) == 0;
}

class DgramTest : public ::testing::TestWithParam<DgramParam> {
 protected:
  void SetUp() override {
    select_provider(shm() ? "shm" : "tcp");
    if (family() == AF_INET6) {
      KFd k(::socket(AF_INET6, SOCK_DGRAM, 0));
      Addr a = loopback(AF_INET6);
      if (k < 0 || ::bind(k, a.sa(), a.len) != 0) GTEST_SKIP() << "no IPv6 loopback";
    }
  }
  int family() const { return GetParam().family; }
  bool shm() const { return strcmp(GetParam().transport, "shm") == 0; }

  // Until a destination's rendezvous answered, datagrams to it travel over
  // UDP: one datagram there and back, so the next ones take the ring.
  void warm(int from, int to, const Addr& to_addr) {
    ASSERT_EQ(1, rsendto(from, "w", 1, 0, to_addr.sa(), to_addr.len)) << errstr(errno);
    char c;
    ASSERT_EQ(1, rrecv(to, &c, 1, 0));
  }
  // What waits in the kernel socket under rsocket `fd` (its descriptor).
  static bool kernel_queue_empty(int fd) {
    char c;
    return ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) < 0 && errno == EAGAIN;
  }

  // A datagram rsocket bound to a loopback port of its own.
  RFd bound(Addr* name = nullptr) {
    RFd s(rsocket(family(), SOCK_DGRAM, 0));
    EXPECT_GE(s.get(), 0) << errstr(errno);
    Addr a = loopback(family());
    EXPECT_EQ(0, rbind(s, a.sa(), a.len)) << errstr(errno);
    if (name) {
      name->len = sizeof name->ss;
      EXPECT_EQ(0, rgetsockname(s, name->sa(), &name->len));
    }
    return s;
  }

  // A plain kernel UDP socket on loopback, for datagrams we craft.
  KFd raw_socket() {
    KFd k(::socket(family(), SOCK_DGRAM, 0));
    Addr a = loopback(family());
    EXPECT_EQ(0, ::bind(k, a.sa(), a.len));
    return k;
  }
};

// --- creation, names, errno ------------------------------------------------

TEST_P(DgramTest, CreatesAUdpSocket) {
  for (int proto : {0, static_cast<int>(IPPROTO_UDP)}) {
    RFd s(rsocket(family(), SOCK_DGRAM, proto));
    ASSERT_GE(s.get(), 0) << errstr(errno);
    int v = 0;
    socklen_t len = sizeof v;
    EXPECT_EQ(0, rgetsockopt(s, SOL_SOCKET, SO_TYPE, &v, &len));
    EXPECT_EQ(SOCK_DGRAM, v);
    EXPECT_EQ(O_RDWR, rfcntl(s, F_GETFL));
  }
  RFd nb(rsocket(family(), SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  ASSERT_GE(nb.get(), 0);
  EXPECT_EQ(O_RDWR | O_NONBLOCK, rfcntl(nb, F_GETFL));
  EXPECT_EQ(FD_CLOEXEC, rfcntl(nb, F_GETFD));
}

TEST_P(DgramTest, NamesAndEnotconn) {
  Addr a;
  RFd s = bound(&a);
  EXPECT_NE(0, a.port());
  Addr peer;
  peer.len = sizeof peer.ss;
  errno = 0;
  EXPECT_EQ(-1, rgetpeername(s, peer.sa(), &peer.len));
  EXPECT_EQ(ENOTCONN, errno) << errstr(errno);
  Addr b;
  RFd t = bound(&b);
  ASSERT_EQ(0, rconnect(s, b.sa(), b.len)) << errstr(errno);
  peer.len = sizeof peer.ss;
  ASSERT_EQ(0, rgetpeername(s, peer.sa(), &peer.len));
  EXPECT_TRUE(same_endpoint(peer, b)) << peer.str() << " vs " << b.str();
  // A second rbind fails as UDP's does.
  Addr l = loopback(family());
  errno = 0;
  EXPECT_EQ(-1, rbind(s, l.sa(), l.len));
  EXPECT_EQ(EINVAL, errno) << errstr(errno);
}

TEST_P(DgramTest, WhatADatagramSocketDoesNot) {
  RFd s = bound();
  errno = 0;
  EXPECT_EQ(-1, rlisten(s, 8));
  EXPECT_EQ(EOPNOTSUPP, errno) << errstr(errno);
  errno = 0;
  EXPECT_EQ(-1, raccept(s, nullptr, nullptr));
  EXPECT_EQ(EOPNOTSUPP, errno) << errstr(errno);
  char buf[64];
  errno = 0;
  EXPECT_EQ(-1, riomap(s, buf, sizeof buf, PROT_WRITE, 0, -1));
  EXPECT_EQ(EOPNOTSUPP, errno) << errstr(errno);
  int v = 1;
  errno = 0;
  EXPECT_EQ(-1, rsetsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &v, sizeof v));
  EXPECT_EQ(ENOPROTOOPT, errno) << errstr(errno);
}

TEST_P(DgramTest, ClosedDescriptorIsEbadf) {
  int fd = rsocket(family(), SOCK_DGRAM, 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(0, rclose(fd));
  char b[4] = {};
  Addr a = loopback(family(), 9);
  errno = 0;
  EXPECT_EQ(-1, rsendto(fd, b, sizeof b, 0, a.sa(), a.len));
  EXPECT_EQ(EBADF, errno);
  errno = 0;
  EXPECT_EQ(-1, rrecv(fd, b, sizeof b, MSG_DONTWAIT));
  EXPECT_EQ(EBADF, errno);
  errno = 0;
  EXPECT_EQ(-1, rclose(fd));
  EXPECT_EQ(EBADF, errno);
}

TEST_P(DgramTest, UnconnectedSendIsEdestaddrreq) {
  RFd s = bound();
  char b[8] = {};
  iovec iov{b, sizeof b};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  errno = 0;
  EXPECT_EQ(-1, rsend(s, b, sizeof b, 0));
  EXPECT_EQ(EDESTADDRREQ, errno) << errstr(errno);
  errno = 0;
  EXPECT_EQ(-1, rwrite(s, b, sizeof b));
  EXPECT_EQ(EDESTADDRREQ, errno) << errstr(errno);
  errno = 0;
  EXPECT_EQ(-1, rwritev(s, &iov, 1));
  EXPECT_EQ(EDESTADDRREQ, errno) << errstr(errno);
  errno = 0;
  EXPECT_EQ(-1, rsendmsg(s, &m, 0));
  EXPECT_EQ(EDESTADDRREQ, errno) << errstr(errno);
}

// A destination length the kernel's UDP refuses (beyond a sockaddr_storage,
// short of the family's) gets its EINVAL over every transport; one it takes
// (the family's size up to a sockaddr_storage) reaches the same socket.
TEST_P(DgramTest, DestinationLengthAsTheKernelsUdp) {
  Addr b;
  RFd s = bound();
  RFd r = bound(&b);
  warm(s, r, b);
  KFd k = raw_socket();
  sockaddr_storage room[2] = {};  // what a caller passing 200 bytes owns
  memcpy(room, &b.ss, b.len);
  auto* to = reinterpret_cast<sockaddr*>(room);
  const socklen_t full = family() == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  for (socklen_t len :
       {socklen_t{200}, socklen_t{sizeof(sockaddr_storage) + 1}, socklen_t(full - 5)}) {
    errno = 0;
    EXPECT_EQ(-1, ::sendto(k, "x", 1, 0, to, len)) << len;
    EXPECT_EQ(EINVAL, errno) << "the kernel, length " << len;
    errno = 0;
    EXPECT_EQ(-1, rsendto(s, "x", 1, 0, to, len)) << len;
    EXPECT_EQ(EINVAL, errno) << "length " << len << ": " << errstr(errno);
  }
  for (socklen_t len : {full, socklen_t{sizeof(sockaddr_storage)}}) {
    ASSERT_EQ(1, rsendto(s, "y", 1, 0, to, len)) << len << ": " << errstr(errno);
    char c = 0;
    ASSERT_EQ(1, rrecv(r, &c, 1, 0));
    EXPECT_EQ('y', c);
  }
}

// --- data --------------------------------------------------------------------

TEST_P(DgramTest, SendtoRecvfromKeepsBoundariesAndGivesTheSource) {
  Addr a, b;
  RFd s = bound(&a);
  RFd r = bound(&b);
  warm(s, r, b);
  const size_t sizes[] = {1, 0, 100, kMaxPayload, 7, 1024};
  for (size_t i = 0; i < std::size(sizes); i++) {
    std::vector<uint8_t> d = datagram(i, sizes[i]);
    ASSERT_EQ(static_cast<ssize_t>(sizes[i]), rsendto(s, d.data(), d.size(), 0, b.sa(), b.len))
        << errstr(errno);
  }
  for (size_t i = 0; i < std::size(sizes); i++) {
    uint8_t buf[4096];
    Addr src;
    src.len = sizeof src.ss;
    ssize_t n = rrecvfrom(r, buf, sizeof buf, 0, src.sa(), &src.len);
    ASSERT_EQ(static_cast<ssize_t>(sizes[i]), n) << "datagram " << i << ": " << errstr(errno);
    std::vector<uint8_t> d = datagram(i, sizes[i]);
    EXPECT_TRUE(d.empty() || memcmp(d.data(), buf, d.size()) == 0) << "datagram " << i;
    EXPECT_TRUE(same_endpoint(src, a)) << src.str() << " vs " << a.str();
  }
}

TEST_P(DgramTest, LargerThanTheSlotIsEmsgsize) {
  Addr b;
  RFd s = bound();
  RFd r = bound(&b);
  std::vector<uint8_t> big(kMaxPayload + 1, 0x5a);
  errno = 0;
  EXPECT_EQ(-1, rsendto(s, big.data(), big.size(), 0, b.sa(), b.len));
  EXPECT_EQ(EMSGSIZE, errno) << errstr(errno);
  iovec iov[2] = {{big.data(), kMaxPayload}, {big.data(), 1}};  // too big only together
  msghdr m{};
  m.msg_name = b.sa();
  m.msg_namelen = b.len;
  m.msg_iov = iov;
  m.msg_iovlen = 2;
  errno = 0;
  EXPECT_EQ(-1, rsendmsg(s, &m, 0));
  EXPECT_EQ(EMSGSIZE, errno) << errstr(errno);
  char buf[8];
  errno = 0;
  EXPECT_EQ(-1, rrecv(r, buf, sizeof buf, MSG_DONTWAIT));  // nothing went out
  EXPECT_EQ(EAGAIN, errno) << errstr(errno);
}

TEST_P(DgramTest, ShortBufferTruncatesAndDiscardsTheRest) {
  Addr b;
  RFd s = bound();
  RFd r = bound(&b);
  warm(s, r, b);
  std::vector<uint8_t> d0 = datagram(0, 100), d1 = datagram(1, 50), d2 = datagram(2, 300);
  for (auto* d : {&d0, &d1, &d2})
    ASSERT_EQ(ssize_t(d->size()), rsendto(s, d->data(), d->size(), 0, b.sa(), b.len));
  uint8_t buf[400];
  iovec iov{buf, 10};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  ASSERT_EQ(10, rrecvmsg(r, &m, 0));
  EXPECT_TRUE(m.msg_flags & MSG_TRUNC);
  EXPECT_EQ(0, memcmp(buf, d0.data(), 10));
  // MSG_TRUNC: the datagram's real length, as UDP gives it.
  EXPECT_EQ(50, rrecv(r, buf, 10, MSG_TRUNC));
  m = {};
  iov = {buf, sizeof buf};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  ASSERT_EQ(300, rrecvmsg(r, &m, 0));
  EXPECT_FALSE(m.msg_flags & MSG_TRUNC);
  EXPECT_EQ(0, memcmp(buf, d2.data(), 300));
}

TEST_P(DgramTest, ConnectSetsTheDefaultDestinationAndAfUnspecDissolvesIt) {
  Addr a, b;
  RFd s = bound(&a);
  RFd r = bound(&b);
  ASSERT_EQ(0, rconnect(s, b.sa(), b.len)) << errstr(errno);
  warm(s, r, b);
  std::vector<uint8_t> d[4] = {datagram(0, 10), datagram(1, 20), datagram(2, 30), datagram(3, 40)};
  ASSERT_EQ(10, rsend(s, d[0].data(), 10, 0));
  ASSERT_EQ(20, rwrite(s, d[1].data(), 20));
  iovec iov[2] = {{d[2].data(), 12}, {d[2].data() + 12, 18}};  // one datagram from two pieces
  ASSERT_EQ(30, rwritev(s, iov, 2));
  iovec one{d[3].data(), 40};
  msghdr m{};
  m.msg_iov = &one;
  m.msg_iovlen = 1;
  ASSERT_EQ(40, rsendmsg(s, &m, 0));

  uint8_t buf[64];
  ASSERT_EQ(10, rrecv(r, buf, sizeof buf, 0));
  EXPECT_EQ(0, memcmp(buf, d[0].data(), 10));
  ASSERT_EQ(20, rread(r, buf, sizeof buf));
  EXPECT_EQ(0, memcmp(buf, d[1].data(), 20));
  iovec in[2] = {{buf, 5}, {buf + 5, sizeof buf - 5}};
  ASSERT_EQ(30, rreadv(r, in, 2));
  EXPECT_EQ(0, memcmp(buf, d[2].data(), 30));
  sockaddr_storage src{};
  iovec whole{buf, sizeof buf};
  msghdr rm{};
  rm.msg_name = &src;
  rm.msg_namelen = sizeof src;
  rm.msg_iov = &whole;
  rm.msg_iovlen = 1;
  ASSERT_EQ(40, rrecvmsg(r, &rm, 0));
  EXPECT_EQ(0, memcmp(buf, d[3].data(), 40));
  Addr from;
  memcpy(&from.ss, &src, sizeof src);
  from.len = rm.msg_namelen;
  EXPECT_TRUE(same_endpoint(from, a)) << "rrecvmsg gives the source address: " << from.str();

  sockaddr unspec{};
  unspec.sa_family = AF_UNSPEC;
  ASSERT_EQ(0, rconnect(s, &unspec, sizeof unspec)) << errstr(errno);
  errno = 0;
  EXPECT_EQ(-1, rsend(s, buf, 1, 0));
  EXPECT_EQ(EDESTADDRREQ, errno) << errstr(errno);
  Addr peer;
  peer.len = sizeof peer.ss;
  errno = 0;
  EXPECT_EQ(-1, rgetpeername(s, peer.sa(), &peer.len));
  EXPECT_EQ(ENOTCONN, errno) << errstr(errno);
}

// Linux's UDP takes a destination on a connected socket (BSD gives
// EISCONN); a connected socket hears only its peer.
TEST_P(DgramTest, ConnectedSocketAsLinuxUdp) {
  Addr a, b, c;
  RFd s = bound(&a);
  RFd r = bound(&b);
  RFd other = bound(&c);
  warm(other, r, b);  // other's datagrams to r take the ring
  ASSERT_EQ(0, rconnect(s, b.sa(), b.len));
  ASSERT_EQ(0, rconnect(r, a.sa(), a.len));
  EXPECT_EQ(3, rsendto(s, "abc", 3, 0, c.sa(), c.len)) << errstr(errno);
  char buf[8];
  EXPECT_EQ(3, rrecv(other, buf, sizeof buf, 0));
  EXPECT_EQ(3, rsendto(other, "xyz", 3, 0, b.sa(), b.len));  // not r's peer: filtered
  EXPECT_EQ(2, rsend(s, "ok", 2, 0));
  ASSERT_EQ(2, rrecv(r, buf, sizeof buf, 0));
  EXPECT_EQ(0, memcmp(buf, "ok", 2));
  errno = 0;
  EXPECT_EQ(-1, rrecv(r, buf, sizeof buf, MSG_DONTWAIT));
  EXPECT_EQ(EAGAIN, errno);
}

TEST_P(DgramTest, MsgPeekLeavesTheDatagram) {
  Addr b;
  RFd s = bound();
  RFd r = bound(&b);
  warm(s, r, b);
  ASSERT_EQ(5, rsendto(s, "hello", 5, 0, b.sa(), b.len));
  ASSERT_EQ(5, rsendto(s, "world", 5, 0, b.sa(), b.len));
  char buf[16];
  for (int i = 0; i < 2; i++) {
    ASSERT_EQ(5, rrecv(r, buf, sizeof buf, MSG_PEEK));
    EXPECT_EQ(0, memcmp(buf, "hello", 5));
  }
  ASSERT_EQ(5, rrecv(r, buf, sizeof buf, 0));
  EXPECT_EQ(0, memcmp(buf, "hello", 5));
  ASSERT_EQ(5, rrecv(r, buf, sizeof buf, 0));
  EXPECT_EQ(0, memcmp(buf, "world", 5));
}

TEST_P(DgramTest, NonBlockingGivesEagain) {
  RFd r = bound();
  char buf[8];
  errno = 0;
  EXPECT_EQ(-1, rrecv(r, buf, sizeof buf, MSG_DONTWAIT));
  EXPECT_EQ(EAGAIN, errno) << errstr(errno);
  ASSERT_EQ(0, rfcntl(r, F_SETFL, O_NONBLOCK));
  EXPECT_EQ(O_RDWR | O_NONBLOCK, rfcntl(r, F_GETFL));
  for (int i = 0; i < 2; i++) {
    errno = 0;
    EXPECT_EQ(-1,
              i ? rread(r, buf, sizeof buf) : rrecvfrom(r, buf, sizeof buf, 0, nullptr, nullptr));
    EXPECT_EQ(EAGAIN, errno) << errstr(errno);
  }
}

TEST_P(DgramTest, RpollAndRselectReadiness) {
  Addr b;
  RFd s = bound();
  RFd r = bound(&b);
  warm(s, r, b);
  pollfd p[2] = {{r, POLLIN, 0}, {s, POLLOUT, 0}};
  ASSERT_EQ(1, rpoll(p, 2, 0));
  EXPECT_EQ(0, p[0].revents);
  EXPECT_EQ(POLLOUT, p[1].revents);
  fd_set rd;
  FD_ZERO(&rd);
  FD_SET(r.get(), &rd);
  timeval tv{0, 0};
  EXPECT_EQ(0, rselect(r + 1, &rd, nullptr, nullptr, &tv));

  // A blocked rpoll wakes for a datagram sent from another thread.
  std::thread sender([&] {
    usleep(100 * 1000);
    EXPECT_EQ(1, rsendto(s, "x", 1, 0, b.sa(), b.len));
  });
  pollfd in{r, POLLIN, 0};
  EXPECT_EQ(1, rpoll(&in, 1, 20000));
  EXPECT_EQ(POLLIN, in.revents);
  sender.join();
  FD_ZERO(&rd);
  FD_SET(r.get(), &rd);
  EXPECT_EQ(1, rselect(r + 1, &rd, nullptr, nullptr, &tv));
  EXPECT_TRUE(FD_ISSET(r.get(), &rd));
  char c;
  EXPECT_EQ(1, rrecv(r, &c, 1, 0));
  in.revents = 0;
  EXPECT_EQ(0, rpoll(&in, 1, 0));
}

TEST_P(DgramTest, BlockedReadWokenByDatagramAndByShutdown) {
  Addr b;
  RFd s = bound();
  RFd r = bound(&b);
  warm(s, r, b);
  ssize_t got = -2;
  char buf[8];
  EXPECT_TRUE(run_with_timeout(
      [&] {
        std::thread t([&] {
          usleep(100 * 1000);
          rsendto(s, "abc", 3, 0, b.sa(), b.len);
        });
        got = rrecv(r, buf, sizeof buf, 0);
        t.join();
      },
      20, [&] { rshutdown(r, SHUT_RDWR); }));
  EXPECT_EQ(3, got);
  // rshutdown(SHUT_RD) releases a reader asleep on an empty socket with 0.
  EXPECT_TRUE(run_with_timeout(
      [&] {
        std::thread t([&] {
          usleep(100 * 1000);
          rshutdown(r, SHUT_RD);
        });
        got = rrecv(r, buf, sizeof buf, 0);
        t.join();
      },
      20, [&] { rshutdown(r, SHUT_RDWR); }));
  EXPECT_EQ(0, got);
  // SHUT_WR: sends fail with EPIPE, as UDP's.
  ASSERT_EQ(0, rconnect(s, b.sa(), b.len));
  ASSERT_EQ(0, rshutdown(s, SHUT_WR));
  errno = 0;
  EXPECT_EQ(-1, rsend(s, "x", 1, 0));
  EXPECT_EQ(EPIPE, errno) << errstr(errno);
}

// Several readers asleep on one socket and as many datagrams: every reader
// gets one (the first one woken must not swallow the others' wake-up).
TEST_P(DgramTest, EveryBlockedReaderGetsItsDatagram) {
  constexpr int kReaders = 4, kRounds = 20;
  Addr b;
  RFd s = bound();
  RFd r = bound(&b);
  warm(s, r, b);
  std::atomic<int> got{0};
  EXPECT_TRUE(run_with_timeout(
      [&] {
        for (int round = 0; round < kRounds; round++) {
          std::vector<std::thread> readers;
          for (int i = 0; i < kReaders; i++)
            readers.emplace_back([&] {
              char c;
              if (rrecv(r, &c, 1, 0) == 1) got++;
            });
          usleep(50 * 1000);  // most of them asleep by now
          for (int i = 0; i < kReaders; i++) rsendto(s, "d", 1, 0, b.sa(), b.len);
          for (auto& t : readers) t.join();
        }
      },
      60, [&] { rshutdown(r, SHUT_RDWR); }));
  EXPECT_EQ(kReaders * kRounds, got.load());
}

// rclose from another thread releases a reader asleep on the socket (the
// descriptor closes once that call is out).
TEST_P(DgramTest, RcloseReleasesABlockedReader) {
  Addr a, b;
  RFd s = bound(&a);
  int r = bound(&b).release();
  warm(s, r, b);  // its ring and wait set exist
  ssize_t got = -2;
  EXPECT_TRUE(run_with_timeout(
      [&] {
        std::thread t([&] {
          usleep(100 * 1000);
          EXPECT_EQ(0, rclose(r));
        });
        char buf[8];
        got = rrecv(r, buf, sizeof buf, 0);
        t.join();
      },
      20));
  EXPECT_TRUE(got == 0 || (got == -1 && errno == EBADF)) << got << " " << errstr(errno);
  // The sender now goes back to UDP, to nobody: no crash, no block.
  EXPECT_EQ(1, rsendto(s, "x", 1, 0, b.sa(), b.len));
}

// A handler without SA_RESTART ends a blocked read with EINTR, as for a
// UDP socket.
void on_usr1(int) {}
TEST_P(DgramTest, SignalWithoutRestartInterruptsABlockedRead) {
  struct sigaction sa {
  }, old{};
  sa.sa_handler = on_usr1;
  ASSERT_EQ(0, sigaction(SIGUSR1, &sa, &old));
  Addr b;
  RFd s = bound();
  RFd r = bound(&b);
  warm(s, r, b);
  ssize_t got = -2;
  int err = 0;
  std::atomic<bool> started{false};
  EXPECT_TRUE(run_with_timeout(
      [&] {
        std::thread t([&] {
          started = true;
          char buf[8];
          got = rrecv(r, buf, sizeof buf, 0);
          err = errno;
        });
        while (!started) usleep(1000);
        usleep(100 * 1000);
        pthread_kill(t.native_handle(), SIGUSR1);
        t.join();
      },
      20, [&] { rsendto(s, "x", 1, 0, b.sa(), b.len); }));
  EXPECT_EQ(-1, got);
  EXPECT_EQ(EINTR, err) << errstr(err);
  sigaction(SIGUSR1, &old, nullptr);
}

TEST_P(DgramTest, RcvbufAndSndbuf) {
  RFd s = bound();
  for (int opt : {SO_RCVBUF, SO_SNDBUF}) {
    int v = 96 * 1024;
    ASSERT_EQ(0, rsetsockopt(s, SOL_SOCKET, opt, &v, sizeof v)) << errstr(errno);
    int got = 0;
    socklen_t len = sizeof got;
    ASSERT_EQ(0, rgetsockopt(s, SOL_SOCKET, opt, &got, &len));
    EXPECT_GE(got, v);  // the kernel's bookkeeping doubles it, as for UDP
  }
}

// --- a full ring, many senders ------------------------------------------

// Reads every datagram queued now; records the ids. Returns how many.
size_t drain(int fd, std::vector<uint64_t>* ids, size_t len, bool* corrupt) {
  size_t n = 0;
  std::vector<uint8_t> buf(kMaxPayload);
  for (;;) {
    ssize_t got = rrecv(fd, buf.data(), buf.size(), MSG_DONTWAIT);
    if (got < 0) {
      EXPECT_EQ(EAGAIN, errno) << errstr(errno);
      return n;
    }
    uint64_t id;
    if (static_cast<size_t>(got) != len || !is_datagram(buf.data(), len, &id))
      *corrupt = true;
    else
      ids->push_back(id);
    n++;
  }
}

TEST_P(DgramTest, FullRingDropsAndCountsWithoutBlockingTheSender) {
  Addr b;
  RFd s = bound();
  RFd r(rsocket(family(), SOCK_DGRAM, 0));
  int small = 16 * 1024;  // before rbind: it sizes the ring too
  ASSERT_EQ(0, rsetsockopt(r, SOL_SOCKET, SO_RCVBUF, &small, sizeof small));
  b = loopback(family());
  ASSERT_EQ(0, rbind(r, b.sa(), b.len));
  b.len = sizeof b.ss;
  ASSERT_EQ(0, rgetsockname(r, b.sa(), &b.len));
  warm(s, r, b);
  const size_t kSent = 2000, kLen = 1000;
  // Nobody reads meanwhile: a blocked sender would hang here (watchdog).
  for (uint64_t i = 0; i < kSent; i++) {
    std::vector<uint8_t> d = datagram(i, kLen);
    ASSERT_EQ(ssize_t(kLen), rsendto(s, d.data(), kLen, 0, b.sa(), b.len)) << i << errstr(errno);
  }
  std::vector<uint64_t> ids;
  bool corrupt = false;
  size_t got = drain(r, &ids, kLen, &corrupt);
  EXPECT_FALSE(corrupt);
  EXPECT_LT(got, kSent) << "the ring never filled";
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  // The drop count comes with each datagram: one more brings the count of
  // everything dropped before it.
  std::vector<uint8_t> marker = datagram(kSent, kLen);
  ASSERT_EQ(ssize_t(kLen), rsendto(s, marker.data(), kLen, 0, b.sa(), b.len));
  std::vector<uint8_t> buf(kLen);
  ASSERT_EQ(ssize_t(kLen), rrecv(r, buf.data(), kLen, 0));
  ss_dgram_drops d = drops_of(r);
  EXPECT_EQ(kSent - got, d.overflow) << "received " << got << " of " << kSent;
  EXPECT_EQ(0u, d.malformed);
}

TEST_P(DgramTest, ThreadsSendToOneSocketAtOnce) {
  Addr b;
  RFd r = bound(&b);
  int big = 4 << 20;
  rsetsockopt(r, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);  // the kernel caps it
  constexpr int kThreads = 8, kEach = 500;
  constexpr size_t kLen = 256;
  RFd shared = bound();  // threads share one socket, and each has its own
  warm(shared, r, b);
  const uint64_t marker_id = uint64_t(kThreads) * kEach;
  std::atomic<bool> sent_all{false};
  std::vector<uint64_t> ids;  // the reader's until it is joined
  bool corrupt = false;
  // Reads until the marker (sent after every sender finished) came, or
  // nothing came for 10 s after that.
  std::thread reader([&] {
    int idle = 0;
    while (std::find(ids.begin(), ids.end(), marker_id) == ids.end() && idle < 10) {
      pollfd p{r, POLLIN, 0};
      int n = rpoll(&p, 1, 1000);
      if (n > 0) drain(r, &ids, kLen, &corrupt);
      idle = (n == 0 && sent_all) ? idle + 1 : 0;
    }
  });
  std::vector<std::thread> senders;
  for (int t = 0; t < kThreads; t++) {
    senders.emplace_back([&, t] {
      RFd own = bound();
      // Not warmed: the first datagrams go over UDP, while the reader
      // answers the rendezvous, then the ring takes over.
      for (uint64_t i = 0; i < kEach; i++) {
        uint64_t id = uint64_t(t) * kEach + i;
        std::vector<uint8_t> d = datagram(id, kLen);
        int fd = (i & 1) ? shared.get() : own.get();
        EXPECT_EQ(ssize_t(kLen), rsendto(fd, d.data(), kLen, 0, b.sa(), b.len)) << errstr(errno);
      }
    });
  }
  for (auto& t : senders) t.join();
  RFd last = bound();
  std::vector<uint8_t> marker = datagram(marker_id, kLen);
  ASSERT_EQ(ssize_t(kLen), rsendto(last, marker.data(), kLen, 0, b.sa(), b.len));
  sent_all = true;
  reader.join();
  drain(r, &ids, kLen, &corrupt);
  EXPECT_FALSE(corrupt);
  std::set<uint64_t> unique(ids.begin(), ids.end());
  EXPECT_EQ(unique.size(), ids.size()) << "a datagram came twice";
  ASSERT_TRUE(unique.count(marker_id)) << "the marker never came";
  EXPECT_EQ(size_t(kThreads * kEach), unique.size() - 1 + drops_of(r).overflow)
      << "every datagram received or counted as dropped";
}

TEST_P(DgramTest, ManyPeersSendToOneSocket) {
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  const size_t want = 1000;
  if (lim.rlim_cur < want + 100) {
    rlimit more = lim;
    more.rlim_cur = std::min<rlim_t>(lim.rlim_max, want + 200);
    setrlimit(RLIMIT_NOFILE, &more);
  }
  rlimit now{};
  getrlimit(RLIMIT_NOFILE, &now);
  // All peers exist at once when the limit allows, else as many as it does.
  const size_t peers = std::min<size_t>(want, now.rlim_cur > 150 ? now.rlim_cur - 100 : 50);
  Addr b;
  RFd r = bound(&b);
  int big = 4 << 20;
  rsetsockopt(r, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  std::vector<RFd> fds;
  std::vector<uint16_t> ports;
  for (size_t i = 0; i < peers; i++) {
    Addr a;
    fds.push_back(bound(&a));
    ports.push_back(a.port());
  }
  // Each peer's datagram carries its index; the source must be its port.
  size_t received = 0, wrong = 0;
  std::vector<bool> seen(peers);
  auto take = [&](int flags) {
    uint8_t buf[64];
    for (;;) {
      Addr src;
      src.len = sizeof src.ss;
      ssize_t n = rrecvfrom(r, buf, sizeof buf, flags, src.sa(), &src.len);
      if (n < 0) return;
      uint64_t id;
      if (n != 32 || !is_datagram(buf, 32, &id) || id >= peers || seen[id] ||
          src.port() != ports[id])
        wrong++;
      else
        seen[id] = true;
      received++;
    }
  };
  for (size_t i = 0; i < peers; i++) {
    std::vector<uint8_t> d = datagram(i, 32);
    ASSERT_EQ(32, rsendto(fds[i], d.data(), d.size(), 0, b.sa(), b.len)) << i << errstr(errno);
    if (i % 64 == 63) take(MSG_DONTWAIT);
  }
  take(MSG_DONTWAIT);
  RFd last = bound();
  ASSERT_EQ(1, rsendto(last, "m", 1, 0, b.sa(), b.len));
  uint8_t c[8];
  ASSERT_EQ(1, rrecv(r, c, sizeof c, 0));
  take(MSG_DONTWAIT);
  EXPECT_EQ(0u, wrong);
  EXPECT_EQ(peers, received + drops_of(r).overflow);
  RecordProperty("peers", static_cast<int>(peers));
  if (peers < want) std::printf("[ NOTE     ] %zu peers (descriptor limit)\n", peers);
}

// --- hostile datagrams ------------------------------------------------------

std::vector<uint8_t> header(uint32_t tag, uint8_t version, uint8_t op = 0, uint8_t len = 8) {
  std::vector<uint8_t> h(8);
  uint32_t be = htonl(tag);
  memcpy(h.data(), &be, 4);
  h[4] = version;
  h[5] = op;
  h[6] = len;
  h[7] = 0;
  return h;
}

TEST_P(DgramTest, HostileDatagramsAreDroppedAndCounted) {
  Addr b;
  RFd r = bound(&b);
  KFd raw = raw_socket();
  const uint8_t mine = family() == AF_INET6 ? 6 : 4, other = family() == AF_INET6 ? 4 : 6;
  std::vector<std::vector<uint8_t>> bad = {
      {1, 2, 3},                  // shorter than the header
      header(0x55555555, mine),   // upstream's UDP tag, not ours
      header(kTag, mine, 7),      // an op we do not know
      header(kTag, mine, 0, 28),  // a header length not ours
      header(kTag, other),        // version disagrees with the source family
  };
  std::vector<uint8_t> oversize = header(kTag, mine);
  oversize.resize(8 + kMaxPayload + 1, 0xee);  // longer than a slot
  bad.push_back(oversize);
  for (auto& d : bad) {
    if (d.size() == 8) d.resize(40, 0xbd);  // a payload behind a bad header
    ASSERT_EQ(ssize_t(d.size()), ::sendto(raw, d.data(), d.size(), 0, b.sa(), b.len));
  }
  // Only bad datagrams queued: not readable, and all of them counted.
  pollfd p{r, POLLIN, 0};
  EXPECT_EQ(0, rpoll(&p, 1, 200));
  EXPECT_EQ(bad.size(), drops_of(r).malformed);
  char buf[4096];
  errno = 0;
  EXPECT_EQ(-1, rrecv(r, buf, sizeof buf, MSG_DONTWAIT));
  EXPECT_EQ(EAGAIN, errno);

  // Bad ones in front of a good one, seen by a peek and by a read: only
  // the good one's bytes come out.
  for (int round = 0; round < 2; round++) {
    for (auto& d : bad) ::sendto(raw, d.data(), d.size(), 0, b.sa(), b.len);
    std::vector<uint8_t> good = header(kTag, mine);
    good.insert(good.end(), {'g', 'o', 'o', 'd'});
    ::sendto(raw, good.data(), good.size(), 0, b.sa(), b.len);
    memset(buf, 0, sizeof buf);
    int flags = round ? 0 : MSG_PEEK;
    ASSERT_EQ(4, rrecv(r, buf, sizeof buf, flags)) << errstr(errno);
    EXPECT_EQ(0, memcmp(buf, "good", 4));
    if (!round) {
      ASSERT_EQ(4, rrecv(r, buf, sizeof buf, 0));
    }
  }
  EXPECT_EQ(3 * bad.size(), drops_of(r).malformed);
  errno = 0;
  EXPECT_EQ(-1, rrecv(r, buf, sizeof buf, MSG_DONTWAIT));
  EXPECT_EQ(EAGAIN, errno);
}

// Rings, rendezvous, wake-ups and mappings go with the sockets.
TEST_P(DgramTest, NothingLeftAfterRclose) {
  Snapshot before = Snapshot::settled();
  {
    Addr a, b;
    RFd s = bound(&a);
    RFd r = bound(&b);
    warm(s, r, b);
    warm(r, s, a);
    ASSERT_EQ(2, rsendto(s, "hi", 2, 0, b.sa(), b.len));
    char buf[4];
    ASSERT_EQ(2, rrecv(r, buf, sizeof buf, 0));
    pollfd p{r, POLLIN, 0};
    EXPECT_EQ(0, rpoll(&p, 1, 50));  // a wait: the wait set is made
  }
  expect_nothing_left(before, "datagram rsockets closed");
}

// A same-host sender that writes the ring itself (it maps it, as every
// sender does) with what no Slipstream sender writes: a length beyond the
// slot, an address version of neither family. Dropped and counted; the
// good datagram behind them arrives whole.
class DgramShmTest : public DgramTest {};

TEST_P(DgramShmTest, HostileRingEntriesAreDroppedAndCounted) {
  Addr b;
  RFd r = bound(&b);
  RFd s = bound();
  warm(s, r, b);  // r's ring exists now
  // Dial r's rendezvous as a sender does and take its ring.
  char host[INET6_ADDRSTRLEN];
  const void* ip =
      family() == AF_INET
          ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&b.ss)->sin_addr)
          : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&b.ss)->sin6_addr);
  inet_ntop(family(), ip, host, sizeof host);
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  int n =
      snprintf(un.sun_path + 1, sizeof un.sun_path - 1, "slipstream/dgram/%s/%u", host, b.port());
  KFd u(::socket(AF_UNIX, SOCK_SEQPACKET, 0));
  ASSERT_EQ(0, ::connect(u, reinterpret_cast<sockaddr*>(&un),
                         static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n)));
  pollfd p{r, POLLIN, 0};
  EXPECT_EQ(0, rpoll(&p, 1, 0));  // r answers the rendezvous
  char buf[8];
  iovec iov{buf, sizeof buf};
  int fds[2], got = 0;
  ASSERT_EQ(4, ss::recv_with_fds(u, &iov, 1, fds, 2, &got, 0));
  ASSERT_EQ(2, got);
  KFd memfd(fds[0]), efd(fds[1]);
  struct stat st {};
  ASSERT_EQ(0, fstat(memfd, &st));
  void* ring = mmap(nullptr, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
  ASSERT_NE(MAP_FAILED, ring);
  const uint32_t slots = ss::rs::dgram_ring_slots(static_cast<size_t>(st.st_size));
  ASSERT_GT(slots, 0u);
  const uint8_t lo4[4] = {127, 0, 0, 1};
  const char good[] = "good";
  iovec g{const_cast<char*>(good), 4};
  bool wake;
  // Pushed as a sender would, then spoiled before r looks.
  auto* base = reinterpret_cast<ss::rs::DgramSlot*>(static_cast<uint8_t*>(ring) +
                                                    sizeof(ss::rs::DgramRingHeader));
  uint64_t tail = static_cast<ss::rs::DgramRingHeader*>(ring)->tail.load();
  ASSERT_TRUE(ss::rs::dgram_ring_push(ring, slots, lo4, 4, htons(9), &g, 1, 4, &wake));
  base[tail & (slots - 1)].len = 100000;  // beyond the slot
  ASSERT_TRUE(ss::rs::dgram_ring_push(ring, slots, lo4, 4, htons(9), &g, 1, 4, &wake));
  base[(tail + 1) & (slots - 1)].version = 5;  // neither family
  ASSERT_TRUE(ss::rs::dgram_ring_push(ring, slots, lo4, 4, htons(9), &g, 1, 4, &wake));
  memset(buf, 0, sizeof buf);
  Addr src;
  src.len = sizeof src.ss;
  ASSERT_EQ(4, rrecvfrom(r, buf, sizeof buf, 0, src.sa(), &src.len)) << errstr(errno);
  EXPECT_EQ(0, memcmp(buf, "good", 4));
  EXPECT_EQ(9, src.port());
  EXPECT_EQ(2u, drops_of(r).malformed);
  errno = 0;
  EXPECT_EQ(-1, rrecv(r, buf, sizeof buf, MSG_DONTWAIT));
  EXPECT_EQ(EAGAIN, errno);
  munmap(ring, st.st_size);
}

// Which queue carries datagrams: over shm, the ring once warmed (the
// kernel socket stays empty), both ways, and to and from a connected
// socket; over udp, the kernel socket.
TEST_P(DgramTest, TransportCarriesTheDatagrams) {
  Addr a, b;
  RFd s = bound(&a);
  RFd r = bound(&b);
  warm(s, r, b);
  warm(r, s, a);
  for (int round = 0; round < 2; round++) {
    if (round) {
      ASSERT_EQ(0, rconnect(s, b.sa(), b.len));
      ASSERT_EQ(0, rconnect(r, a.sa(), a.len));
    }
    ASSERT_EQ(4, rsendto(s, "ping", 4, 0, round ? nullptr : b.sa(), round ? 0 : b.len));
    EXPECT_EQ(shm(), kernel_queue_empty(r))
        << (shm() ? "shm: went over UDP" : "udp: not in the kernel");
    char buf[8];
    Addr src;
    src.len = sizeof src.ss;
    ASSERT_EQ(4, rrecvfrom(r, buf, sizeof buf, 0, src.sa(), &src.len));
    EXPECT_TRUE(same_endpoint(src, a)) << src.str();
    ASSERT_EQ(4, rsendto(r, "pong", 4, 0, round ? nullptr : a.sa(), round ? 0 : a.len));
    EXPECT_EQ(shm(), kernel_queue_empty(s));
    ASSERT_EQ(4, rrecv(s, buf, sizeof buf, 0));
    EXPECT_EQ(0, memcmp(buf, "pong", 4));
  }
}

// The shared-memory sender on its own (compiled into this binary as the
// ring is): what it remembers, and what it takes from an owner.

// Sending to many addresses that no owner here answers (TEST-NET-1: no
// host of ours) keeps the sender's map bounded. send() itself sends
// nothing: it only says "over UDP".
TEST(DgramShmSenderTest, UnansweredDestinationsStayBounded) {
  ss::rs::DgramShmSender tx;
  sockaddr_in self = v4("127.0.0.1", 9);
  char c = 'x';
  iovec v{&c, 1};
  for (int i = 0; i < 2000; i++) {
    sockaddr_in dst = v4("192.0.2.1", static_cast<uint16_t>(1000 + i));
    EXPECT_EQ(0, tx.send(reinterpret_cast<sockaddr*>(&dst), sizeof dst,
                         reinterpret_cast<sockaddr*>(&self), &v, 1, 1));
  }
  EXPECT_LE(tx.destinations(), 300u);
}

// A same-user owner answering with a ring and a full blocking pipe where
// the eventfd belongs: refused (counted), the datagram goes over UDP, and
// the sender never blocks in its wake-up write.
TEST(DgramShmSenderTest, AnOwnerHandingAPipeIsRefused) {
  KFd udp(::socket(AF_INET, SOCK_DGRAM, 0));
  Addr name = loopback(AF_INET);
  ASSERT_EQ(0, ::bind(udp, name.sa(), name.len));
  name.len = sizeof name.ss;
  ASSERT_EQ(0, ::getsockname(udp, name.sa(), &name.len));
  KFd listener = dgram_rendezvous(name.port());
  ASSERT_GE(listener.get(), 0) << strerror(errno);

  ss::rs::DgramShmSender tx;
  sockaddr_in self = v4("127.0.0.1", 9);
  char c = 'x';
  iovec v{&c, 1};
  auto send = [&] {
    return tx.send(name.sa(), name.len, reinterpret_cast<sockaddr*>(&self), &v, 1, 1);
  };
  ASSERT_EQ(0, send());  // dialled; not answered yet
  KFd conn(::accept(listener, nullptr, nullptr));
  ASSERT_GE(conn.get(), 0);
  // A sealed ring whose owner "sleeps", and a full pipe.
  const uint32_t slots = 2;
  const size_t bytes = ss::rs::dgram_ring_bytes(slots);
  KFd memfd(memfd_create("hostile-ring", MFD_ALLOW_SEALING));
  ASSERT_EQ(0, ftruncate(memfd, static_cast<off_t>(bytes)));
  ASSERT_EQ(0, fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL));
  void* ring = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
  ASSERT_NE(MAP_FAILED, ring);
  ss::rs::dgram_ring_init(ring, slots);
  static_cast<ss::rs::DgramRingHeader*>(ring)->sleepers.store(1);
  int pp[2];
  ASSERT_EQ(0, pipe(pp));
  KFd rd(pp[0]), wr(pp[1]);
  ASSERT_EQ(0, fcntl(wr, F_SETFL, O_NONBLOCK));
  std::vector<char> junk(65536);
  while (::write(wr, junk.data(), junk.size()) > 0) {
  }
  ASSERT_EQ(0, fcntl(wr, F_SETFL, 0));  // blocking again, and full
  char answer[4] = {'S', 'S', 'D', 'R'};
  iovec a{answer, sizeof answer};
  const int fds[2] = {memfd.get(), wr.get()};
  ASSERT_EQ(4, ss::send_with_fds(conn, &a, 1, fds, 2, 0));

  int rc = -1;
  EXPECT_TRUE(run_with_timeout([&] { rc = send(); }, 20,
                               [&] {
                                 while (::read(rd, junk.data(), junk.size()) ==
                                        static_cast<ssize_t>(junk.size())) {
                                 }
                               }));
  EXPECT_EQ(0, rc) << "the hostile ring was taken";
  EXPECT_EQ(1u, tx.refused());
  munmap(ring, bytes);
}

// With a ring, a spinning receive looks at the kernel socket only every
// dgram_kernel_ratio-th time; a call's first look covers both queues.
std::vector<uint8_t> good_datagram(int family, const char* text) {
  std::vector<uint8_t> d = header(kTag, family == AF_INET6 ? 6 : 4);
  d.insert(d.end(), text, text + strlen(text));
  return d;
}

TEST_P(DgramShmTest, NonBlockingEagainMeansBothQueuesAreEmpty) {
  Addr b;
  RFd r = bound(&b);
  RFd s = bound();
  warm(s, r, b);  // r's ring exists: its repeated looks skip the kernel
  KFd raw = raw_socket();
  for (int round = 0; round < 3; round++) {
    std::vector<uint8_t> d = good_datagram(family(), "kern");
    ASSERT_EQ(ssize_t(d.size()), ::sendto(raw, d.data(), d.size(), 0, b.sa(), b.len));
    pollfd k{r, POLLIN, 0};  // the kernel socket under r
    ASSERT_EQ(1, ::poll(&k, 1, 5000));
    char buf[8] = {};
    if (round == 1) {  // readiness first, as a poll loop does
      pollfd p{r, POLLIN, 0};
      ASSERT_EQ(1, rpoll(&p, 1, 0));
    }
    // The first call finds it, however many ring-only looks came before.
    ASSERT_EQ(4, rrecv(r, buf, sizeof buf, MSG_DONTWAIT)) << "round " << round << errstr(errno);
    EXPECT_EQ(0, memcmp(buf, "kern", 4));
    errno = 0;
    EXPECT_EQ(-1, rrecv(r, buf, sizeof buf, MSG_DONTWAIT));
    EXPECT_EQ(EAGAIN, errno);
  }
}

TEST_P(DgramShmTest, SpinningReceiveStillTakesKernelDatagrams) {
  Addr b;
  RFd r = bound(&b);
  RFd s = bound();
  warm(s, r, b);
  // A spin far longer than the test waits: the datagram must be found by
  // the spin's own looks at the kernel socket, not by the look before a
  // sleep.
  setenv("SLIPSTREAM_RS_POLLING_TIME", "60s", 1);
  ss::config::reload();
  std::atomic<ssize_t> got{-2};
  char buf[8] = {};
  std::thread reader([&] { got = rrecv(r, buf, sizeof buf, 0); });
  usleep(20000);  // the reader is spinning by now (or soon: either way it must see it)
  KFd raw = raw_socket();
  std::vector<uint8_t> d = good_datagram(family(), "spin");
  ASSERT_EQ(ssize_t(d.size()), ::sendto(raw, d.data(), d.size(), 0, b.sa(), b.len));
  for (int i = 0; i < 2000 && got == -2; i++) usleep(10000);  // up to 20 s, far below 60
  const ssize_t seen = got;
  if (seen == -2) rshutdown(r, SHUT_RD);  // ends the spin: a read after shutdown gives 0
  reader.join();
  unsetenv("SLIPSTREAM_RS_POLLING_TIME");
  ss::config::reload();
  ASSERT_EQ(4, seen) << "the spinning receive never looked at its kernel socket";
  EXPECT_EQ(0, memcmp(buf, "spin", 4));
}

// A ring kept full by a local sender still lets a datagram waiting in the
// kernel socket through (a remote sender's): every Nth receive looks there.
TEST_P(DgramShmTest, ABusyRingDoesNotStarveTheKernelSocket) {
  Addr b;
  RFd r = bound(&b);
  RFd s = bound();
  warm(s, r, b);
  char buf[64];
  for (int i = 0; i < 5000; i++)  // far more than the ring holds: it is full
    ASSERT_EQ(4, rsendto(s, "ring", 4, 0, b.sa(), b.len)) << errstr(errno);
  KFd raw = raw_socket();
  std::vector<uint8_t> d = good_datagram(family(), "kern");
  ASSERT_EQ(ssize_t(d.size()), ::sendto(raw, d.data(), d.size(), 0, b.sa(), b.len));
  pollfd k{r, POLLIN, 0};  // the kernel socket under r has it
  ASSERT_EQ(1, ::poll(&k, 1, 5000));
  // One receive, one send: the ring never empties.
  int taken = 0;
  bool kernel_seen = false;
  for (; taken < 5000 && !kernel_seen; taken++) {
    ssize_t n = rrecv(r, buf, sizeof buf, 0);
    ASSERT_EQ(4, n) << errstr(errno);
    kernel_seen = memcmp(buf, "kern", 4) == 0;
    ASSERT_EQ(4, rsendto(s, "ring", 4, 0, b.sa(), b.len));
  }
  EXPECT_TRUE(kernel_seen) << "the kernel socket's datagram waited behind " << taken
                           << " ring deliveries";
}

// A fork child's rclose of an inherited datagram rsocket drops its copy
// only: the kernel socket and the receive ring are also the parent's.
// Shutting the socket down (as rclose once did to wake its sleepers) left
// the parent's rpoll reporting POLLHUP for good; marking the ring closed
// sent its senders to UDP.
TEST_P(DgramTest, ForkChildsCloseLeavesTheParentsSocket) {
  Addr an;
  RFd a = bound(&an), b = bound();
  if (shm()) {
    ASSERT_NO_FATAL_FAILURE(warm(b, a, an));
  }
  const int fd = a;
  Reaper child{fork_child([fd] { return rclose(fd) == 0 ? 0 : 1; })};
  ASSERT_GT(child.pid, 0);
  ASSERT_EQ("", wait_child(&child, 30));
  pollfd p{a, POLLIN, 0};
  EXPECT_EQ(0, rpoll(&p, 1, 100)) << "revents " << p.revents;
  ASSERT_EQ(2, rsendto(b, "hi", 2, 0, an.sa(), an.len)) << errstr(errno);
  if (shm()) {
    EXPECT_TRUE(kernel_queue_empty(a)) << "sent over UDP, not into the ring";
  }
  char buf[8];
  EXPECT_EQ(2, rrecv(a, buf, sizeof buf, 0)) << errstr(errno);
}

// The reverse: the parent's rclose leaves the child's copy working. The
// kernel socket is the child's too, so rclose wakes the parent's sleepers
// through its own kick, never a shutdown(2) (which made the child's
// receive return 0 at once, and its rpoll say POLLHUP for good).
TEST_P(DgramTest, ForkParentsCloseLeavesTheChildsSocket) {
  Addr an;
  int a = bound(&an).release();
  RFd b = bound();
  int go[2];
  ASSERT_EQ(0, pipe(go));
  Reaper child{fork_child([a, go] {
    char c;
    if (::read(go[0], &c, 1) != 1) return 2;
    pollfd p{a, POLLIN, 0};
    if (rpoll(&p, 1, 10000) != 1 || p.revents != POLLIN) return 3;
    char buf[8];
    return rrecv(a, buf, sizeof buf, 0) == 2 && memcmp(buf, "hi", 2) == 0 ? 0 : 4;
  })};
  ASSERT_GT(child.pid, 0);
  ::close(go[0]);
  ASSERT_EQ(0, rclose(a));
  ASSERT_EQ(1, ::write(go[1], "g", 1));
  ::close(go[1]);
  ASSERT_EQ(2, rsendto(b, "hi", 2, 0, an.sa(), an.len)) << errstr(errno);
  EXPECT_EQ("", wait_child(&child, 30)) << "(3: POLLHUP or no datagram, 4: a wrong receive)";
}

// A child's rclose wakes the child's own sleeper, and the parent's copy
// goes on receiving.
TEST_P(DgramTest, ForkChildsCloseWakesItsSleeperAndLeavesTheParent) {
  Addr an;
  RFd a = bound(&an), b = bound();
  if (shm()) {
    ASSERT_NO_FATAL_FAILURE(warm(b, a, an));
  }
  const int fd = a;
  Reaper child{fork_child([fd] {
    ssize_t got = -2;
    int err = 0;
    std::thread t([&] {
      char buf[8];
      got = rrecv(fd, buf, sizeof buf, 0);
      err = errno;
    });
    usleep(100 * 1000);
    if (rclose(fd) != 0) return 2;
    t.join();  // a hang here is the child's alarm
    return got == 0 || (got == -1 && err == EBADF) ? 0 : 3;
  })};
  ASSERT_GT(child.pid, 0);
  ASSERT_EQ("", wait_child(&child, 30));
  pollfd p{a, POLLIN, 0};
  EXPECT_EQ(0, rpoll(&p, 1, 100)) << "revents " << p.revents;
  ASSERT_EQ(2, rsendto(b, "hi", 2, 0, an.sa(), an.len)) << errstr(errno);
  char buf[8];
  EXPECT_EQ(2, rrecv(a, buf, sizeof buf, 0)) << errstr(errno);
}

INSTANTIATE_TEST_SUITE_P(Transports, DgramTest,
                         ::testing::Values(DgramParam{"udp", AF_INET}, DgramParam{"udp", AF_INET6},
                                           DgramParam{"shm", AF_INET}, DgramParam{"shm", AF_INET6}),
                         dgram_name);
INSTANTIATE_TEST_SUITE_P(Transports, DgramShmTest,
                         ::testing::Values(DgramParam{"shm", AF_INET}, DgramParam{"shm", AF_INET6}),
                         dgram_name);

}  // namespace
