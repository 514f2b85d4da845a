// What a program asks of a connection's queues and waits, as Linux's
// kernel TCP answers: SO_RCVTIMEO and SO_SNDTIMEO (a blocking recv, send
// or accept that waited that long returns EAGAIN, a send that moved some
// bytes their count; an accepted socket takes its listener's; options set
// before connect stay; getsockopt reads back what the kernel rounds), and
// the FIONREAD/SIOCOUTQ byte counts. Part of the differential suite:
// plain and preloaded runs must both pass.
#include <gtest/gtest.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "tests/preload/pair.h"

namespace {

using differential::loopback;
using differential::make_listener;

constexpr timeval kShort{0, 100 * 1000};

void set_timeout(int fd, int name, timeval tv) {
  ASSERT_EQ(setsockopt(fd, SOL_SOCKET, name, &tv, sizeof tv), 0) << strerror(errno);
}

// What the kernel reads back for `tv` (its rounding), from a UDP socket
// no preload takes.
timeval kernel_readback(timeval tv) {
  int u = socket(AF_INET, SOCK_DGRAM, 0);
  timeval got{-1, -1};
  socklen_t len = sizeof got;
  setsockopt(u, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  getsockopt(u, SOL_SOCKET, SO_RCVTIMEO, &got, &len);
  close(u);
  return got;
}

void expect_timeout(int fd, int name, timeval want, const char* which) {
  timeval got{-1, -1};
  socklen_t len = sizeof got;
  ASSERT_EQ(getsockopt(fd, SOL_SOCKET, name, &got, &len), 0) << which << ": " << strerror(errno);
  EXPECT_EQ(len, sizeof got) << which;
  timeval k = kernel_readback(want);
  EXPECT_EQ(got.tv_sec, k.tv_sec) << which;
  EXPECT_EQ(got.tv_usec, k.tv_usec) << which;
}

// Runs `unblock` if the test's blocking call has not returned within
// 20 s, so a call that ignores its timeout fails the test, not hangs it.
class Watchdog {
 public:
  explicit Watchdog(std::function<void()> unblock)
      : t_([this, unblock] {
          for (int i = 0; i < 200 && !done_; i++)
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
          if (!done_) unblock();
        }) {}
  ~Watchdog() {
    done_ = true;
    t_.join();
  }

 private:
  std::atomic<bool> done_{false};
  std::thread t_;
};

TEST(DifferentialTimeout, RecvAcceptAndSendEndWithEagain) {
  uint16_t port = 0;
  int l = make_listener(0, &port);
  ASSERT_GE(l, 0) << strerror(errno);
  set_timeout(l, SO_RCVTIMEO, kShort);
  sockaddr_in a = loopback(port);
  {
    Watchdog w([&] {
      int c = socket(AF_INET, SOCK_STREAM, 0);
      connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a);
    });
    EXPECT_EQ(accept(l, nullptr, nullptr), -1) << "accept past SO_RCVTIMEO";
    EXPECT_EQ(errno, EAGAIN);
  }
  int c = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(c, 0);
  set_timeout(c, SO_RCVTIMEO, kShort);  // before connect: stays
  set_timeout(c, SO_SNDTIMEO, kShort);
  ASSERT_EQ(connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
  int s = accept(l, nullptr, nullptr);
  ASSERT_GE(s, 0) << strerror(errno);
  expect_timeout(c, SO_RCVTIMEO, kShort, "client SO_RCVTIMEO");
  expect_timeout(c, SO_SNDTIMEO, kShort, "client SO_SNDTIMEO");
  expect_timeout(s, SO_RCVTIMEO, kShort, "accepted SO_RCVTIMEO (the listener's)");
  char b[16];
  for (int fd : {c, s}) {
    Watchdog w([&] { send(fd == c ? s : c, "x", 1, MSG_NOSIGNAL); });
    EXPECT_EQ(recv(fd, b, sizeof b, 0), -1) << (fd == c ? "client" : "accepted") << " recv";
    EXPECT_EQ(errno, EAGAIN);
  }
  // Nobody reads s: sends fill both ends' buffers, then one ends with
  // EAGAIN (or with the bytes it moved, and the next with EAGAIN).
  std::vector<char> chunk(64 * 1024, 'y');
  size_t total = 0;
  int last_errno = 0;
  {
    // Fired, it ends the connection: a hung send then fails, not EAGAIN.
    Watchdog w([&] { shutdown(s, SHUT_RDWR); });
    while (total < (64u << 20)) {
      ssize_t n = send(c, chunk.data(), chunk.size(), MSG_NOSIGNAL);
      if (n < 0) {
        last_errno = errno;
        break;
      }
      total += static_cast<size_t>(n);
    }
  }
  EXPECT_EQ(last_errno, EAGAIN) << "a send past SO_SNDTIMEO after " << total << " bytes";
  for (int fd : {c, s, l}) close(fd);
}

TEST(DifferentialTimeout, BadValuesAndZero) {
  differential::Pair p;
  differential::connect_pair(&p);
  timeval bad{1, 1000000};
  EXPECT_EQ(setsockopt(p.c, SOL_SOCKET, SO_RCVTIMEO, &bad, sizeof bad), -1);
  EXPECT_EQ(errno, EDOM);
  EXPECT_EQ(setsockopt(p.c, SOL_SOCKET, SO_SNDTIMEO, &bad, sizeof bad - 1), -1);
  EXPECT_EQ(errno, EINVAL);
  expect_timeout(p.c, SO_RCVTIMEO, timeval{0, 0}, "after refused values");
  timeval odd{2, 1};  // rounded up to the kernel's tick
  set_timeout(p.c, SO_RCVTIMEO, odd);
  expect_timeout(p.c, SO_RCVTIMEO, odd, "rounded");
  set_timeout(p.c, SO_RCVTIMEO, timeval{0, 0});  // for ever again
  expect_timeout(p.c, SO_RCVTIMEO, timeval{0, 0}, "zero");
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    send(p.s, "z", 1, MSG_NOSIGNAL);
  });
  char b;
  EXPECT_EQ(recv(p.c, &b, 1, 0), 1) << "a zero timeout waits for ever";
  late.join();
}

// FIONREAD counts what is there to read; SIOCOUTQ falls to 0 once the
// peer has the bytes; a listener's FIONREAD is EINVAL.
TEST(DifferentialQueues, FionreadAndSiocoutq) {
  differential::Pair p;
  differential::connect_pair(&p);
  int n = -1;
  ASSERT_EQ(ioctl(p.s, FIONREAD, &n), 0) << strerror(errno);
  EXPECT_EQ(n, 0);
  ASSERT_EQ(send(p.c, "hello", 5, 0), 5);
  pollfd pf{p.s, POLLIN, 0};
  ASSERT_EQ(poll(&pf, 1, 10000), 1);
  ASSERT_EQ(ioctl(p.s, FIONREAD, &n), 0) << strerror(errno);
  EXPECT_EQ(n, 5);
  char b[2];
  ASSERT_EQ(recv(p.s, b, 2, 0), 2);
  ASSERT_EQ(ioctl(p.s, SIOCINQ, &n), 0) << strerror(errno);
  EXPECT_EQ(n, 3);
  n = -1;
  for (int i = 0; i < 1000 && n != 0; i++) {  // until the transport took them
    ASSERT_EQ(ioctl(p.c, SIOCOUTQ, &n), 0) << strerror(errno);
    if (n) usleep(10 * 1000);
  }
  EXPECT_EQ(n, 0);
  EXPECT_EQ(ioctl(p.l, FIONREAD, &n), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(ioctl(p.c, FIONREAD, nullptr), -1);
  EXPECT_EQ(errno, EFAULT);
}

}  // namespace
