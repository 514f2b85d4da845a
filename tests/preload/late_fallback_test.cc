// librspreload's late fallback in the differential suite: a connect that
// rsockets gives up on after EINPROGRESS goes on over kernel TCP on the
// same descriptor (docs/architecture.md, "librspreload"). The peer is a
// kernel listener the preload never sees (made by the raw socket(2)
// system call) and, beside it, a stand-in for a preloaded listener's shm
// rendezvous that takes the rsocket connect and refuses it when the test
// says: the moment of the switch is the test's. Plain, nobody dials the
// stand-in and the connect is the kernel's from the start; both runs must
// give the same answers. The preloaded run's connections end on kernel
// TCP, so differential.sh runs these tests apart from the counted ones.
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "tests/preload/pair.h"

namespace {

using differential::loopback;

constexpr int kLongMs = 10000;  // a bound, never reached when things work

bool preloaded() {
  const char* p = getenv("LD_PRELOAD");
  return p && strstr(p, "librspreload");
}

// A TCP socket the preload does not know: made past libc's socket().
int raw_tcp_socket(int flags = 0) {
  return static_cast<int>(syscall(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC | flags, 0));
}

// A kernel listener on 127.0.0.1 and a stand-in for the shm rendezvous a
// preloaded listener on that address would have (the abstract unix name
// of src/core/prov/shm/rendezvous.cc), which never answers an rsocket
// connect: refuse() closes it unanswered.
struct StalledPeer {
  int l = -1, rv = -1;
  uint16_t port = 0;
  bool dialed = false;  // an rsocket connect reached the stand-in
  std::vector<int> fillers;

  explicit StalledPeer(int backlog = 16) {
    l = raw_tcp_socket(SOCK_NONBLOCK);
    sockaddr_in a = loopback(0);
    socklen_t len = sizeof a;
    if (l < 0 || bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) || listen(l, backlog) ||
        getsockname(l, reinterpret_cast<sockaddr*>(&a), &len))
      return;
    port = ntohs(a.sin_port);
    sockaddr_un u{};
    u.sun_family = AF_UNIX;
    int n = snprintf(u.sun_path + 1, sizeof u.sun_path - 1, "slipstream/shm/127.0.0.1/%u", port);
    rv = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (rv < 0 ||
        bind(rv, reinterpret_cast<sockaddr*>(&u),
             static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n)) ||
        listen(rv, 8)) {
      close(rv);
      rv = -1;
    }
  }
  ~StalledPeer() {
    for (int fd : fillers) close(fd);
    if (rv >= 0) close(rv);
    if (l >= 0) close(l);
  }
  bool ok() const { return l >= 0 && rv >= 0; }

  // The rsocket connects that came so far, refused: closed unanswered.
  void refuse() {
    for (int u; (u = accept4(rv, nullptr, nullptr, SOCK_CLOEXEC)) >= 0;) {
      dialed = true;
      close(u);
    }
  }

  int accept_kernel() {
    pollfd p{l, POLLIN, 0};
    poll(&p, 1, kLongMs);
    return accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
  }

  // Kernel connections until the listener's queue is full (listen(l, 0)):
  // a connect's SYN is dropped from then on, the connect waits.
  void fill_queue() {
    for (int i = 0; i < 8; i++) {
      int f = raw_tcp_socket(SOCK_NONBLOCK);
      sockaddr_in a = loopback(port);
      connect(f, reinterpret_cast<sockaddr*>(&a), sizeof a);
      pollfd p{f, POLLOUT, 0};
      if (poll(&p, 1, 200) == 0) {  // not answered: the queue is full
        close(f);                   // its SYN retried later would take the room drain_queue makes
        return;
      }
      fillers.push_back(f);
    }
  }
  // Room in the queue again: the waiting connects get through.
  void drain_queue() {
    for (int s; (s = accept4(l, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;)
      fillers.push_back(s);
  }
};

// A non-blocking connect to `peer`: EINPROGRESS under the preload (the
// rsocket waits on the stand-in); plain, the kernel's answer.
int start_connect(const StalledPeer& peer) {
  int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  sockaddr_in a = loopback(peer.port);
  int rc = connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a);
  EXPECT_TRUE(rc == 0 || errno == EINPROGRESS) << strerror(errno);
  return c;
}

// `c` writable with SO_ERROR 0, as a connect that went through (made
// the kernel's by these calls under the preload, when it fell back).
void expect_connected(int c) {
  pollfd p{c, POLLOUT, 0};
  EXPECT_EQ(poll(&p, 1, kLongMs), 1);
  EXPECT_TRUE(p.revents & POLLOUT);
  int so_error = -1;
  socklen_t len = sizeof so_error;
  EXPECT_EQ(getsockopt(c, SOL_SOCKET, SO_ERROR, &so_error, &len), 0);
  EXPECT_EQ(so_error, 0);
}

bool set_blocking(int fd) {
  int fl = fcntl(fd, F_GETFL);
  return fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0;
}

// A thread held inside a signal handler (SA_RESTART) while the test goes
// on: whatever call it slept in resumes only after release().
std::atomic<bool> g_hold{false}, g_held{false};

struct Holder {
  struct sigaction old {};
  Holder() {
    struct sigaction sa {};
    sa.sa_handler = [](int) {
      g_held = true;
      while (g_hold) {
        timespec t{0, 1000000};
        nanosleep(&t, nullptr);
      }
    };
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR2, &sa, &old);
  }
  void hold(pthread_t t) {
    g_held = false;
    g_hold = true;
    pthread_kill(t, SIGUSR2);
    while (!g_held) usleep(1000);
  }
  void release() { g_hold = false; }
  ~Holder() {
    release();
    sigaction(SIGUSR2, &old, nullptr);
  }
};

// Issue 14's review: a thread blocked in recv on the connecting
// descriptor while another thread's calls see the connect fall back and
// make the switch got ENOTCONN (or an end of stream) instead of the
// peer's bytes. Here the receiver is held in a signal handler across the
// switch, so the other thread surely finishes it first.
TEST(DifferentialLateFallback, ReceiveBlockedAcrossTheSwitch) {
  StalledPeer peer;
  ASSERT_TRUE(peer.ok()) << strerror(errno);
  int c = start_connect(peer);
  ASSERT_TRUE(set_blocking(c));
  Holder holder;
  std::atomic<pid_t> tid{0};
  std::atomic<ssize_t> got{-2};
  std::atomic<int> err{0};
  char buf[8] = {};
  std::thread receiver([&] {
    tid = static_cast<pid_t>(syscall(SYS_gettid));
    got = recv(c, buf, 5, MSG_WAITALL);
    err = errno;
  });
  while (!tid) usleep(1000);
  ASSERT_TRUE(differential::wait_until_in(tid, {SYS_recvfrom}, kLongMs));
  holder.hold(receiver.native_handle());
  peer.refuse();
  expect_connected(c);
  holder.release();
  int s = peer.accept_kernel();
  EXPECT_GE(s, 0);
  EXPECT_EQ(send(s, "hello", 5, 0), 5);
  receiver.join();
  EXPECT_EQ(got.load(), 5) << strerror(err.load());
  EXPECT_EQ(memcmp(buf, "hello", 5), 0);
  EXPECT_EQ(peer.dialed, preloaded());
  close(s);
  close(c);
}

// poll blocked across the switch another thread makes: it goes on
// waiting on the kernel connection and sees the peer's byte.
TEST(DifferentialLateFallback, PollBlockedAcrossTheSwitch) {
  StalledPeer peer;
  ASSERT_TRUE(peer.ok()) << strerror(errno);
  int c = start_connect(peer);
  std::atomic<pid_t> tid{0};
  std::atomic<int> got{-2};
  std::atomic<short> revents{0};
  std::thread poller([&] {
    tid = static_cast<pid_t>(syscall(SYS_gettid));
    pollfd p{c, POLLIN, 0};
    got = poll(&p, 1, kLongMs);
    revents = p.revents;
  });
  while (!tid) usleep(1000);
  ASSERT_TRUE(differential::wait_until_in(tid, {}, kLongMs));
  peer.refuse();
  expect_connected(c);
  int s = peer.accept_kernel();
  EXPECT_GE(s, 0);
  EXPECT_EQ(send(s, "x", 1, 0), 1);
  poller.join();
  EXPECT_EQ(got.load(), 1);
  EXPECT_EQ(revents.load(), POLLIN);
  EXPECT_EQ(peer.dialed, preloaded());
  close(s);
  close(c);
}

// Unblocks what a broken preload would leave waiting for good: after
// kLongMs the stand-in refuses and the kernel listener's queue drains.
struct Watchdog {
  std::atomic<bool> done{false}, fired{false};
  std::thread t;
  explicit Watchdog(StalledPeer* peer) {
    t = std::thread([this, peer] {
      for (int i = 0; i < kLongMs / 10 && !done; i++) usleep(10000);
      if (done) return;
      fired = true;
      peer->refuse();
      peer->drain_queue();
    });
  }
  ~Watchdog() {
    done = true;
    t.join();
  }
};

// A blocking connect ends at SO_SNDTIMEO with EINPROGRESS, as connect(2)'s
// (the rsocket's wait ignored it). Repeated once the rsocket connect
// failed, it is the kernel's connect, which waits for the kernel
// connection (SO_SNDTIMEO again: EALREADY), on the program's descriptor
// (librsocket's own wait polled the number with no timeout, then
// connected it, whichever socket held it by then).
TEST(DifferentialLateFallback, BlockingConnectHonoursSndtimeoAndRepeats) {
  StalledPeer peer(0);
  ASSERT_TRUE(peer.ok()) << strerror(errno);
  peer.fill_queue();
  Watchdog watchdog(&peer);
  int c = socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{0, 200000};
  ASSERT_EQ(setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv), 0);
  sockaddr_in a = loopback(peer.port);
  EXPECT_EQ(connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), -1);
  EXPECT_EQ(errno, EINPROGRESS);
  EXPECT_FALSE(watchdog.fired) << "the connect waited past SO_SNDTIMEO";
  peer.refuse();
  EXPECT_EQ(connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), -1);
  EXPECT_EQ(errno, EALREADY);
  EXPECT_FALSE(watchdog.fired) << "the repeated connect waited past SO_SNDTIMEO";
  peer.drain_queue();
  expect_connected(c);
  EXPECT_EQ(peer.dialed, preloaded());
  close(c);
}

// Edge-triggered epoll on a connection that fell back, before the
// program's next call on it makes it the kernel's (the set still holds it
// as librsocket's): each kernel event reported once, as the kernel's
// EPOLLET (it reported level-triggered: every wait again).
TEST(DifferentialLateFallback, EdgeTriggeredBeforeTheNextCall) {
  StalledPeer peer;
  ASSERT_TRUE(peer.ok()) << strerror(errno);
  int c = start_connect(peer);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT | EPOLLET;
  ev.data.fd = c;
  ASSERT_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev), 0);
  peer.refuse();
  // Only the set's waits look at c until the end.
  epoll_event got{};
  EXPECT_EQ(epoll_wait(ep, &got, 1, kLongMs), 1);
  EXPECT_EQ(got.events, static_cast<uint32_t>(EPOLLOUT));
  EXPECT_EQ(epoll_wait(ep, &got, 1, 0), 0) << "events " << got.events;
  int s = peer.accept_kernel();
  EXPECT_GE(s, 0);
  EXPECT_EQ(send(s, "x", 1, 0), 1);
  EXPECT_EQ(epoll_wait(ep, &got, 1, kLongMs), 1);
  EXPECT_EQ(got.events, static_cast<uint32_t>(EPOLLIN | EPOLLOUT));
  EXPECT_EQ(epoll_wait(ep, &got, 1, 0), 0) << "events " << got.events;
  char b = 0;
  EXPECT_EQ(recv(c, &b, 1, 0), 1);
  EXPECT_EQ(b, 'x');
  EXPECT_EQ(peer.dialed, preloaded());
  close(s);
  close(ep);
  close(c);
}

// A duplicate made while the connect is under way follows the switch: it
// reads and writes the kernel connection (it got ENOTCONN), and the two
// numbers stay one connection until the last close (the duplicate's group
// outlived the switch, and its last close ended the original's number).
TEST(DifferentialLateFallback, DuplicateFollowsTheSwitch) {
  StalledPeer peer;
  ASSERT_TRUE(peer.ok()) << strerror(errno);
  int c = start_connect(peer);
  ASSERT_TRUE(set_blocking(c));
  int d = dup(c);
  ASSERT_GE(d, 0);
  peer.refuse();
  pollfd p{d, POLLOUT, 0};
  EXPECT_EQ(poll(&p, 1, kLongMs), 1);
  EXPECT_EQ(p.revents, POLLOUT);
  int s = peer.accept_kernel();
  ASSERT_GE(s, 0);
  EXPECT_EQ(send(s, "ab", 2, 0), 2);
  char b = 0;
  EXPECT_EQ(recv(d, &b, 1, MSG_WAITALL), 1) << strerror(errno);
  EXPECT_EQ(b, 'a');
  EXPECT_EQ(recv(c, &b, 1, MSG_WAITALL), 1) << strerror(errno);
  EXPECT_EQ(b, 'b');
  EXPECT_EQ(fcntl(d, F_GETFD), 0);  // dup's own: no close-on-exec
  EXPECT_EQ(close(c), 0);
  EXPECT_EQ(send(d, "y", 1, 0), 1) << strerror(errno);
  EXPECT_EQ(recv(s, &b, 1, MSG_WAITALL), 1);
  EXPECT_EQ(b, 'y');
  EXPECT_EQ(close(d), 0);
  EXPECT_EQ(recv(s, &b, 1, 0), 0);  // the last close ended the connection
  EXPECT_EQ(peer.dialed, preloaded());
  close(s);
}

}  // namespace
