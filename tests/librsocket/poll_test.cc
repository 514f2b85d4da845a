// rpoll and rselect over a mix of rsockets and ordinary descriptors, on
// every provider and address family; and idleness: a blocked call must
// sleep, not spin (CPU time of the blocked thread, not elapsed time).
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "tests/librsocket/conformance.h"

namespace rsconf {
namespace {

class PollTest : public ConnTest {};

struct Pipe {
  KFd r, w;
  Pipe() {
    int p[2];
    if (pipe2(p, O_CLOEXEC) == 0) {
      r.reset(p[0]);
      w.reset(p[1]);
    }
  }
};

TEST_P(PollTest, RpollMixOfRsocketsAndPipe) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  Pipe pp;
  ASSERT_GE(pp.r.get(), 0);
  pollfd fds[4] = {
      {p.server, POLLIN, 0}, {pp.r, POLLIN, 0}, {p.client, POLLOUT, 0}, {-1, POLLIN, 0}};
  // Nothing to read yet; the client can write.
  int n = rpoll(fds, 4, 0);
  ASSERT_EQ(1, n) << strerror(errno);
  EXPECT_EQ(0, fds[0].revents);
  EXPECT_EQ(0, fds[1].revents);
  EXPECT_TRUE(fds[2].revents & POLLOUT);
  EXPECT_EQ(0, fds[3].revents) << "a negative fd is ignored";

  ASSERT_EQ(1, write(pp.w, "p", 1));
  n = rpoll(fds, 4, 1000);
  ASSERT_EQ(2, n);
  EXPECT_EQ(0, fds[0].revents);
  EXPECT_TRUE(fds[1].revents & POLLIN);

  ASSERT_EQ(1, rsend(p.client, "r", 1, 0));
  // Wait on the rsocket alone: with the pipe readable, the mixed rpoll
  // returns at once, before a slow transport delivered the byte.
  pollfd srv{p.server, POLLIN, 0};
  ASSERT_EQ(1, rpoll(&srv, 1, 10000)) << "the byte sent never made the rsocket readable";
  fds[2].events = 0;
  n = rpoll(fds, 4, 0);
  ASSERT_EQ(2, n) << "rsocket and pipe both readable";
  EXPECT_TRUE(fds[0].revents & POLLIN);
  EXPECT_TRUE(fds[1].revents & POLLIN);
  EXPECT_EQ(0, fds[2].revents) << "no events requested, none reported";

  // A descriptor that is not open: POLLNVAL, as poll(2).
  KFd closed(dup(pp.r));
  int dead = closed.get();
  closed.reset();
  pollfd bad{dead, POLLIN, 0};
  n = rpoll(&bad, 1, 0);
  EXPECT_EQ(1, n);
  EXPECT_TRUE(bad.revents & POLLNVAL) << "revents " << bad.revents;
}

TEST_P(PollTest, RpollTimeoutReturnsZero) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  Pipe pp;
  pollfd fds[2] = {{p.server, POLLIN, 0}, {pp.r, POLLIN, 0}};
  fds[0].revents = fds[1].revents = 0x7F;
  EXPECT_EQ(0, rpoll(fds, 2, 50)) << strerror(errno);
  EXPECT_EQ(0, fds[0].revents);
  EXPECT_EQ(0, fds[1].revents);
  EXPECT_EQ(0, rpoll(fds, 2, 0));
  EXPECT_EQ(0, rpoll(nullptr, 0, 10));
}

TEST_P(PollTest, RpollBlockingWokenByRsocketAndByPipe) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  Pipe pp;
  pollfd fds[2] = {{p.server, POLLIN, 0}, {pp.r, POLLIN, 0}};
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    rsend(p.client, "w", 1, 0);
  });
  int n = -2;
  bool ok =
      run_with_timeout([&] { n = rpoll(fds, 2, -1); }, 20, [&] { (void)!write(pp.w, "u", 1); });
  t.join();
  ASSERT_TRUE(ok) << "rpoll(-1) did not wake up for data on an rsocket";
  ASSERT_GE(n, 1);
  EXPECT_TRUE(fds[0].revents & POLLIN);
  char b;
  ASSERT_EQ(1, rrecv(p.server, &b, 1, 0));

  std::thread t2([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    (void)!write(pp.w, "q", 1);
  });
  ok = run_with_timeout([&] { n = rpoll(fds, 2, -1); }, 20, [&] { rsend(p.client, "u", 1, 0); });
  t2.join();
  ASSERT_TRUE(ok) << "rpoll(-1) did not wake up for a pipe among rsockets";
  ASSERT_EQ(1, n);
  EXPECT_EQ(0, fds[0].revents);
  EXPECT_TRUE(fds[1].revents & POLLIN);
}

TEST_P(PollTest, RpollListenerReadableWhenConnectionWaits) {
  Listener l;
  ASSERT_NO_FATAL_FAILURE(make_listener(family(), &l));
  pollfd pf{l.fd, POLLIN, 0};
  EXPECT_EQ(0, rpoll(&pf, 1, 0));
  RFd c(rsocket(family(), SOCK_STREAM, 0));
  ASSERT_GE(c.get(), 0);
  std::thread t([&] { rconnect(c, l.addr.sa(), l.addr.len); });
  int n = -2;
  bool ok =
      run_with_timeout([&] { n = rpoll(&pf, 1, -1); }, 20, [&] { rshutdown(l.fd, SHUT_RDWR); });
  t.join();
  ASSERT_TRUE(ok) << "rpoll on a listener did not wake for a connection";
  ASSERT_EQ(1, n);
  EXPECT_TRUE(pf.revents & POLLIN);
  RFd s(raccept(l.fd, nullptr, nullptr));
  EXPECT_GE(s.get(), 0) << strerror(errno);
}

TEST_P(PollTest, RpollAfterPeerCloseShowsEof) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  p.client.reset();  // rclose
  short rev = wait_events(p.server, POLLIN, 10000);
  EXPECT_TRUE(rev & POLLIN) << "EOF must be readable; revents " << rev;
  char b;
  errno = 0;
  EXPECT_EQ(0, rrecv(p.server, &b, 1, 0)) << " errno " << strerror(errno);
  // The closed side lingers for our close (see RcloseLingersUntilPeerCloses);
  // once its linger time passes, it is gone: POLLHUP.
  rev = 0;
  for (int i = 0; i < 100 && !(rev & POLLHUP); i++) rev = wait_events(p.server, POLLHUP, 100);
  EXPECT_TRUE(rev & POLLHUP) << "a disconnected rsocket reports POLLHUP; revents " << rev;
}

// Restores fd 0 at scope exit.
class Stdin {
 public:
  Stdin() : saved_(dup(0)) {}
  ~Stdin() {
    if (saved_ >= 0) {
      dup2(saved_, 0);
      close(saved_);
    } else {
      close(0);
    }
  }

 private:
  int saved_;
};

TEST_P(PollTest, RselectMixIncludingFdZero) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  Stdin keep;
  Pipe pp;
  ASSERT_GE(pp.r.get(), 0);
  ASSERT_EQ(0, dup2(pp.r, 0));
  Pipe other;
  int maxfd = std::max({p.server.get(), p.client.get(), other.r.get(), 0});
  ASSERT_LT(maxfd, FD_SETSIZE);

  fd_set rd, wr;
  FD_ZERO(&rd);
  FD_ZERO(&wr);
  FD_SET(0, &rd);
  FD_SET(p.server, &rd);
  FD_SET(other.r, &rd);
  FD_SET(p.client, &wr);
  timeval tv{0, 0};
  int n = rselect(maxfd + 1, &rd, &wr, nullptr, &tv);
  ASSERT_EQ(1, n) << strerror(errno);
  EXPECT_FALSE(FD_ISSET(0, &rd));
  EXPECT_FALSE(FD_ISSET(p.server, &rd));
  EXPECT_FALSE(FD_ISSET(other.r, &rd));
  EXPECT_TRUE(FD_ISSET(p.client, &wr));

  // fd 0 readable (upstream ignores fd 0: reference §18 #6).
  ASSERT_EQ(1, write(pp.w, "0", 1));
  ASSERT_EQ(1, rsend(p.client, "s", 1, 0));
  ASSERT_TRUE(wait_events(p.server, POLLIN) & POLLIN);
  FD_ZERO(&rd);
  FD_ZERO(&wr);
  FD_SET(0, &rd);
  FD_SET(p.server, &rd);
  FD_SET(other.r, &rd);
  n = rselect(maxfd + 1, &rd, &wr, nullptr, nullptr);
  ASSERT_EQ(2, n) << strerror(errno);
  EXPECT_TRUE(FD_ISSET(0, &rd)) << "rselect ignored fd 0";
  EXPECT_TRUE(FD_ISSET(p.server, &rd));
  EXPECT_FALSE(FD_ISSET(other.r, &rd));

  // Timeout with nothing ready: 0 and cleared sets.
  char b;
  ASSERT_EQ(1, read(0, &b, 1));
  ASSERT_EQ(1, rrecv(p.server, &b, 1, 0));
  FD_ZERO(&rd);
  FD_SET(0, &rd);
  FD_SET(p.server, &rd);
  tv = {0, 50000};
  EXPECT_EQ(0, rselect(maxfd + 1, &rd, nullptr, nullptr, &tv));
  EXPECT_FALSE(FD_ISSET(0, &rd));
  EXPECT_FALSE(FD_ISSET(p.server, &rd));
}

TEST_P(PollTest, RselectBlockingWokenByRsocket) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    rsend(p.client, "w", 1, 0);
  });
  fd_set rd;
  FD_ZERO(&rd);
  FD_SET(p.server, &rd);
  int n = -2;
  bool ok = run_with_timeout([&] { n = rselect(p.server + 1, &rd, nullptr, nullptr, nullptr); }, 20,
                             [&] { rsend(p.client, "u", 1, 0); });
  t.join();
  ASSERT_TRUE(ok);
  EXPECT_EQ(1, n);
  EXPECT_TRUE(FD_ISSET(p.server, &rd));
}

// Wake-ups must come from the event itself. With the periodic wake-up made
// very long, a lost wake-up shows as a call that does not return.
TEST_P(PollTest, BlockedCallsWokenWithoutPeriodicWakeUp) {
  ScopedEnv wake("SLIPSTREAM_RS_WAKE_UP_INTERVAL", kLongWakeUpMs);
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  Pipe pp;
  auto later = [](const std::function<void()>& f) {
    return std::thread([f] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      f();
    });
  };
  char b[4];

  // rrecv woken by data.
  ssize_t n = -2;
  std::thread t = later([&] { rsend(p.client, "a", 1, 0); });
  bool ok = run_with_timeout([&] { n = rrecv(p.server, b, sizeof b, 0); }, kLostWakeUpSeconds,
                             [&] { rsend(p.client, "u", 1, 0); }, kLongWakeUpReleaseSeconds);
  t.join();
  EXPECT_TRUE(ok) << "a blocked rrecv was not woken by arriving data";
  EXPECT_GE(n, 1);
  while (rrecv(p.server, b, sizeof b, MSG_DONTWAIT) > 0) {
  }

  // rpoll(-1) woken by data on an rsocket.
  pollfd fds[2] = {{p.server, POLLIN, 0}, {pp.r, POLLIN, 0}};
  int r = -2;
  t = later([&] { rsend(p.client, "b", 1, 0); });
  ok = run_with_timeout([&] { r = rpoll(fds, 2, -1); }, kLostWakeUpSeconds,
                        [&] { (void)!write(pp.w, "u", 1); }, kLongWakeUpReleaseSeconds);
  t.join();
  EXPECT_TRUE(ok) << "rpoll(-1) was not woken by data on an rsocket";
  EXPECT_TRUE(fds[0].revents & POLLIN);
  while (rrecv(p.server, b, sizeof b, MSG_DONTWAIT) > 0) {
  }
  while (rpoll(&fds[1], 1, 0) > 0 && read(pp.r, b, 1) > 0) {
  }

  // rpoll(-1) woken by the peer closing.
  t = later([&] { p.client.reset(); });
  ok = run_with_timeout([&] { r = rpoll(fds, 1, -1); }, kLostWakeUpSeconds,
                        [&] { rshutdown(p.server, SHUT_RDWR); }, kLongWakeUpReleaseSeconds);
  t.join();
  EXPECT_TRUE(ok) << "rpoll(-1) was not woken by the peer closing";
  EXPECT_TRUE(fds[0].revents & (POLLIN | POLLHUP));
}

// rshutdown from another thread releases a thread blocked in rrecv on the
// same socket (it returns 0, as recv(2) does after shutdown(SHUT_RD)).
TEST_P(PollTest, RshutdownReleasesThreadBlockedInRrecv) {
  ScopedEnv wake("SLIPSTREAM_RS_WAKE_UP_INTERVAL", kLongWakeUpMs);
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  ssize_t n = -2;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    rshutdown(p.server, SHUT_RDWR);
  });
  char b[4];
  bool ok = run_with_timeout([&] { n = rrecv(p.server, b, sizeof b, 0); }, kLostWakeUpSeconds,
                             [&] { rsend(p.client, "u", 1, 0); }, kLongWakeUpReleaseSeconds);
  t.join();
  EXPECT_TRUE(ok) << "rrecv stayed blocked after rshutdown(SHUT_RDWR) of its socket";
  EXPECT_EQ(0, n) << strerror(errno);
}

// An rpoll over more entries than half of RLIMIT_NOFILE still sleeps: the
// set it hands poll(2) holds only real descriptors (poll refuses a larger
// one with EINVAL; a set of two per entry did so past 512 of 1024).
TEST_P(PollTest, RpollOverManyEntriesSleeps) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  Pipe pp;
  rlimit saved{};
  ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &saved));
  rlimit lim = saved;
  lim.rlim_cur = std::min<rlim_t>(saved.rlim_max, 1024);
  ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &lim)) << strerror(errno);
  std::vector<pollfd> fds(600, pollfd{pp.r, POLLIN, 0});
  fds[0] = {p.server, POLLIN, 0};
  errno = 0;
  int r = rpoll(fds.data(), fds.size(), 300);  // past polling_time: it sleeps
  const int err = errno;
  ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &saved));
  EXPECT_EQ(0, r) << strerror(err);
}

// rshutdown from another thread wakes a thread sleeping in rpoll on that
// socket, as shutdown(2) wakes poll(2): readable (a read returns 0).
TEST_P(PollTest, RshutdownWakesThreadBlockedInRpoll) {
  ScopedEnv wake("SLIPSTREAM_RS_WAKE_UP_INTERVAL", kLongWakeUpMs);
  for (int how : {SHUT_RD, SHUT_RDWR}) {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
    pollfd fd = {p.server, POLLIN, 0};
    int r = -2;
    std::thread t([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      rshutdown(p.server, how);
    });
    bool ok = run_with_timeout([&] { r = rpoll(&fd, 1, -1); }, kLostWakeUpSeconds,
                               [&] { rsend(p.client, "u", 1, 0); }, kLongWakeUpReleaseSeconds);
    t.join();
    EXPECT_TRUE(ok) << "rpoll(-1) stayed asleep after rshutdown(" << how << ") of its socket";
    EXPECT_EQ(1, r);
    EXPECT_TRUE(fd.revents & (POLLIN | POLLHUP)) << "revents 0x" << std::hex << fd.revents;
    char b[4];
    EXPECT_EQ(0, rrecv(p.server, b, sizeof b, MSG_DONTWAIT)) << strerror(errno);
  }
}

// ---------------------------------------------------------------------------
// Idleness: the CPU time of the thread that blocks, over a window while
// it is blocked (0.3-1.0 s after it started), must stay under 20%. The
// window leaves out what it does before blocking and after the wake-up
// (e.g. copying a buffer, slow under a sanitizer and emulation).

void expect_idle(const Usage& u, const char* what) {
  ASSERT_TRUE(u.blocked_throughout) << what << " returned before it was measured";
  ASSERT_GT(u.wall_s, 0.0);
  const double share = u.share();
  EXPECT_LT(share, 0.20) << what << " used " << u.cpu_s << " s of CPU in " << u.wall_s
                         << " s blocked (" << share * 100 << "%): it spins";
}

TEST_P(PollTest, IdleBlockedRrecvSleeps) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  ssize_t n = -2;
  Usage u = measure_blocked(
      [&] {
        char b;
        n = rrecv(p.server, &b, 1, 0);
      },
      [&] { rsend(p.client, "z", 1, 0); });
  ASSERT_EQ(1, n) << strerror(errno);
  expect_idle(u, "a blocked rrecv");
}

TEST_P(PollTest, IdleRpollInfiniteSleeps) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  Pipe pp;
  int n = -2;
  pollfd fds[2] = {{p.server, POLLIN, 0}, {pp.r, POLLIN, 0}};
  Usage u = measure_blocked([&] { n = rpoll(fds, 2, -1); }, [&] { rsend(p.client, "z", 1, 0); });
  ASSERT_GE(n, 1) << strerror(errno);
  EXPECT_TRUE(fds[0].revents & POLLIN);
  expect_idle(u, "rpoll(-1)");
}

TEST_P(PollTest, IdleBlockedRacceptSleeps) {
  Listener l;
  ASSERT_NO_FATAL_FAILURE(make_listener(family(), &l));
  RFd c(rsocket(family(), SOCK_STREAM, 0));
  RFd s;
  std::thread connector;
  Usage u = measure_blocked(
      [&] { s.reset(raccept(l.fd, nullptr, nullptr)); },
      [&] { connector = std::thread([&] { rconnect(c, l.addr.sa(), l.addr.len); }); });
  connector.join();
  ASSERT_GE(s.get(), 0) << strerror(errno);
  expect_idle(u, "a blocked raccept");
}

TEST_P(PollTest, IdleSenderWaitingForCreditsSleeps) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  // The sender fills the peer's buffer and blocks until the reader drains.
  constexpr size_t kLen = 1u << 20;  // several times the peer's receive buffer
  size_t sent = 0;
  std::vector<uint8_t> in(kLen);
  size_t got = 0;
  std::thread reader;
  Usage u = measure_blocked(
      [&] { sent = send_pattern(p.client, kLen, 8, kLen, false); },
      [&] { reader = std::thread([&] { got = recv_all(p.server, in.data(), kLen); }); });
  reader.join();
  ASSERT_EQ(kLen, sent);
  ASSERT_EQ(kLen, got);
  EXPECT_EQ(SIZE_MAX, check_pattern(in.data(), kLen, 8));
  expect_idle(u, "a blocked rsend");
}

INSTANTIATE_TEST_SUITE_P(Providers, PollTest, ::testing::ValuesIn(all_params()), param_name);

}  // namespace
}  // namespace rsconf
