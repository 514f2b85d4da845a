// epoll in the differential suite: the same answers plain and under
// librspreload, where the connections and listeners are rsockets and the
// sets mix them with kernel descriptors. Also a blocking accept and a
// blocking recv under signals, with and without SA_RESTART. Timeouts only bound the waits;
// nothing asserts on wall time.
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <thread>

#include "tests/ext/unseen_syscall.h"
#include "tests/preload/pair.h"

namespace {

using differential::connect_pair;
using differential::loopback;
using differential::make_listener;
using differential::Pair;
using differential::read_full;

constexpr int kLongMs = 10000;  // a bound, never reached when things work

int add(int ep, int fd, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

// One epoll_wait for a single event (maxevents 1).
int wait_one(int ep, int timeout, epoll_event* ev) { return epoll_wait(ep, ev, 1, timeout); }

struct Epoll {
  int fd = epoll_create1(EPOLL_CLOEXEC);
  ~Epoll() { close(fd); }
};

TEST(DifferentialEpoll, LevelTriggered) {
  Pair p;
  connect_pair(&p);
  Epoll ep;
  ASSERT_GE(ep.fd, 0);
  EXPECT_EQ(fcntl(ep.fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  ASSERT_EQ(add(ep.fd, p.s, EPOLLIN), 0);
  EXPECT_EQ(add(ep.fd, p.s, EPOLLIN), -1);
  EXPECT_EQ(errno, EEXIST);
  epoll_event ev{};
  EXPECT_EQ(wait_one(ep.fd, 0, &ev), 0);
  ASSERT_EQ(send(p.c, "a", 1, 0), 1);
  ASSERT_EQ(wait_one(ep.fd, kLongMs, &ev), 1);
  EXPECT_EQ(ev.data.fd, p.s);
  EXPECT_EQ(ev.events, static_cast<uint32_t>(EPOLLIN));
  EXPECT_EQ(wait_one(ep.fd, 0, &ev), 1);  // still readable: again
  char b;
  ASSERT_EQ(recv(p.s, &b, 1, 0), 1);
  EXPECT_EQ(wait_one(ep.fd, 0, &ev), 0);
  ASSERT_EQ(epoll_ctl(ep.fd, EPOLL_CTL_DEL, p.s, nullptr), 0);
  EXPECT_EQ(epoll_ctl(ep.fd, EPOLL_CTL_DEL, p.s, nullptr), -1);
  EXPECT_EQ(errno, ENOENT);
}

TEST(DifferentialEpoll, WritableAndModify) {
  Pair p;
  connect_pair(&p);
  Epoll ep;
  ASSERT_EQ(add(ep.fd, p.c, EPOLLOUT), 0);
  epoll_event ev{};
  ASSERT_EQ(wait_one(ep.fd, kLongMs, &ev), 1);
  EXPECT_EQ(ev.events, static_cast<uint32_t>(EPOLLOUT));
  ev.events = EPOLLIN;
  ev.data.fd = p.c;
  ASSERT_EQ(epoll_ctl(ep.fd, EPOLL_CTL_MOD, p.c, &ev), 0);
  EXPECT_EQ(wait_one(ep.fd, 0, &ev), 0);
  ev.events = EPOLLIN | EPOLLEXCLUSIVE;
  EXPECT_EQ(epoll_ctl(ep.fd, EPOLL_CTL_MOD, p.c, &ev), -1);  // only with ADD
  EXPECT_EQ(errno, EINVAL);
}

TEST(DifferentialEpoll, EdgeTriggered) {
  Pair p;
  connect_pair(&p);
  Epoll ep;
  ASSERT_EQ(add(ep.fd, p.s, EPOLLIN | EPOLLET), 0);
  epoll_event ev{};
  ASSERT_EQ(send(p.c, "a", 1, 0), 1);
  ASSERT_EQ(wait_one(ep.fd, kLongMs, &ev), 1);
  EXPECT_EQ(ev.events, static_cast<uint32_t>(EPOLLIN));
  EXPECT_EQ(wait_one(ep.fd, 0, &ev), 0);  // nothing new since
  ASSERT_EQ(send(p.c, "b", 1, 0), 1);
  ASSERT_EQ(wait_one(ep.fd, kLongMs, &ev), 1);  // a new arrival: again
  char b[2];
  EXPECT_EQ(differential::read_full(p.s, b, 2), 2);
  EXPECT_EQ(wait_one(ep.fd, 0, &ev), 0);
}

TEST(DifferentialEpoll, OneShotUntilModified) {
  Pair p;
  connect_pair(&p);
  Epoll ep;
  ASSERT_EQ(add(ep.fd, p.s, EPOLLIN | EPOLLONESHOT), 0);
  epoll_event ev{};
  ASSERT_EQ(send(p.c, "a", 1, 0), 1);
  ASSERT_EQ(wait_one(ep.fd, kLongMs, &ev), 1);
  ASSERT_EQ(send(p.c, "b", 1, 0), 1);
  EXPECT_EQ(wait_one(ep.fd, 0, &ev), 0);  // disabled
  ev.events = EPOLLIN | EPOLLONESHOT;
  ev.data.fd = p.s;
  ASSERT_EQ(epoll_ctl(ep.fd, EPOLL_CTL_MOD, p.s, &ev), 0);
  ASSERT_EQ(wait_one(ep.fd, kLongMs, &ev), 1);
  EXPECT_EQ(ev.data.fd, p.s);
}

TEST(DifferentialEpoll, RdhupAfterPeerShutdown) {
  Pair p;
  connect_pair(&p);
  Epoll ep;
  ASSERT_EQ(add(ep.fd, p.s, EPOLLIN | EPOLLRDHUP), 0);
  ASSERT_EQ(shutdown(p.c, SHUT_WR), 0);
  epoll_event ev{};
  for (int round = 0; round < 100 && !(ev.events & EPOLLRDHUP); round++)
    ASSERT_EQ(wait_one(ep.fd, kLongMs, &ev), 1);
  EXPECT_EQ(ev.events, static_cast<uint32_t>(EPOLLIN | EPOLLRDHUP));
  char b;
  EXPECT_EQ(recv(p.s, &b, 1, 0), 0);
}

TEST(DifferentialEpoll, MixedWithPipeEventfdTimerfd) {
  Pair p;
  connect_pair(&p);
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  int efd = eventfd(0, EFD_CLOEXEC);
  int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
  ASSERT_GE(efd, 0);
  ASSERT_GE(tfd, 0);
  Epoll ep;
  for (int fd : {p.s, pipefd[0], efd, tfd}) ASSERT_EQ(add(ep.fd, fd, EPOLLIN), 0);
  itimerspec it{};
  it.it_value.tv_nsec = 1000000;
  ASSERT_EQ(timerfd_settime(tfd, 0, &it, nullptr), 0);
  ASSERT_EQ(write(pipefd[1], "p", 1), 1);
  uint64_t one = 1;
  ASSERT_EQ(write(efd, &one, sizeof one), 8);
  ASSERT_EQ(send(p.c, "s", 1, 0), 1);
  std::set<int> seen;
  for (int round = 0; round < 100 && seen.size() < 4; round++) {
    epoll_event evs[8];
    int n = epoll_wait(ep.fd, evs, 8, kLongMs);
    ASSERT_GE(n, 1);
    for (int i = 0; i < n; i++) {
      EXPECT_EQ(evs[i].events, static_cast<uint32_t>(EPOLLIN));
      seen.insert(evs[i].data.fd);
      epoll_ctl(ep.fd, EPOLL_CTL_DEL, evs[i].data.fd, nullptr);  // seen: out
    }
  }
  EXPECT_EQ(seen, (std::set<int>{p.s, pipefd[0], efd, tfd}));
  for (int fd : {pipefd[0], pipefd[1], efd, tfd}) close(fd);
}

// A set made, filled and waited on by raw system calls (syscall(2), as
// programs that pass libc by do): it sees a connection and a listener as
// one made by libc's names does, and the listener stays an rsocket
// listener (differential.sh: the process's connections all on rsockets).
TEST(DifferentialEpoll, RawSystemCalls) {
  Pair p;
  connect_pair(&p);
  const int ep = static_cast<int>(syscall(SYS_epoll_create1, EPOLL_CLOEXEC));
  ASSERT_GE(ep, 0) << strerror(errno);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = p.s;
  ASSERT_EQ(syscall(SYS_epoll_ctl, ep, EPOLL_CTL_ADD, p.s, &ev), 0) << strerror(errno);
  ev.data.fd = p.l;
  ASSERT_EQ(syscall(SYS_epoll_ctl, ep, EPOLL_CTL_ADD, p.l, &ev), 0) << strerror(errno);
  epoll_event got{};
  EXPECT_EQ(syscall(SYS_epoll_pwait, ep, &got, 1, 0, nullptr, _NSIG / 8), 0);
  ASSERT_EQ(send(p.c, "a", 1, 0), 1);
  ASSERT_EQ(syscall(SYS_epoll_pwait, ep, &got, 1, kLongMs, nullptr, _NSIG / 8), 1);
  EXPECT_EQ(got.data.fd, p.s);
  char b;
  ASSERT_EQ(recv(p.s, &b, 1, 0), 1);
  // A second client: the listener readable, its connection accepted.
  const int c2 = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = loopback(p.port);
  ASSERT_EQ(connect(c2, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
  ASSERT_EQ(syscall(SYS_epoll_pwait, ep, &got, 1, kLongMs, nullptr, _NSIG / 8), 1);
  EXPECT_EQ(got.data.fd, p.l);
  const int s2 = accept(p.l, nullptr, nullptr);
  ASSERT_GE(s2, 0) << strerror(errno);
  ASSERT_NO_FATAL_FAILURE(differential::expect_link(c2, s2));
  ASSERT_EQ(syscall(SYS_epoll_ctl, ep, EPOLL_CTL_DEL, p.l, nullptr), 0);
  ASSERT_EQ(syscall(SYS_epoll_ctl, ep, EPOLL_CTL_DEL, p.s, nullptr), 0);
  EXPECT_EQ(syscall(SYS_epoll_ctl, ep, EPOLL_CTL_DEL, p.s, nullptr), -1);
  EXPECT_EQ(errno, ENOENT);
  for (int fd : {s2, c2, ep}) close(fd);
}

// A set no preload saw made (the system call instruction itself, as Go's
// runtime makes one; an exec's inherited set is the same), then used by
// libc's names: a connection and a listener join it and are seen there,
// a pipe already in it too (differential.sh: the process's connections
// all on rsockets, none a kernel listener).
TEST(DifferentialEpoll, ASetMadeUnseenTakesConnections) {
  Pair p;
  connect_pair(&p);
  const int ep = static_cast<int>(unseen_syscall1(SYS_epoll_create1, EPOLL_CLOEXEC));
  ASSERT_GE(ep, 0) << strerror(errno);
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  ASSERT_EQ(add(ep, pipe_fds[0], EPOLLIN), 0) << strerror(errno);
  ASSERT_EQ(add(ep, p.s, EPOLLIN), 0) << strerror(errno);
  ASSERT_EQ(add(ep, p.l, EPOLLIN), 0) << strerror(errno);
  epoll_event got{};
  EXPECT_EQ(epoll_wait(ep, &got, 1, 0), 0);
  ASSERT_EQ(send(p.c, "a", 1, 0), 1);
  ASSERT_EQ(epoll_wait(ep, &got, 1, kLongMs), 1);
  EXPECT_EQ(got.data.fd, p.s);
  char b;
  ASSERT_EQ(recv(p.s, &b, 1, 0), 1);
  ASSERT_EQ(write(pipe_fds[1], "x", 1), 1);
  ASSERT_EQ(epoll_wait(ep, &got, 1, kLongMs), 1);
  EXPECT_EQ(got.data.fd, pipe_fds[0]);
  ASSERT_EQ(read(pipe_fds[0], &b, 1), 1);
  const int c2 = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = loopback(p.port);
  ASSERT_EQ(connect(c2, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
  ASSERT_EQ(epoll_wait(ep, &got, 1, kLongMs), 1);
  EXPECT_EQ(got.data.fd, p.l);
  const int s2 = accept(p.l, nullptr, nullptr);
  ASSERT_GE(s2, 0) << strerror(errno);
  ASSERT_NO_FATAL_FAILURE(differential::expect_link(c2, s2));
  for (int fd : {s2, c2, ep, pipe_fds[0], pipe_fds[1]}) close(fd);
}

TEST(DifferentialEpoll, NestedSets) {
  Pair p;
  connect_pair(&p);
  Epoll inner, outer;
  ASSERT_EQ(add(inner.fd, p.s, EPOLLIN), 0);
  ASSERT_EQ(add(outer.fd, inner.fd, EPOLLIN), 0);
  EXPECT_EQ(add(inner.fd, outer.fd, EPOLLIN), -1);  // a loop
  EXPECT_EQ(errno, ELOOP);
  EXPECT_EQ(add(inner.fd, inner.fd, EPOLLIN), -1);  // itself
  EXPECT_EQ(errno, EINVAL);
  epoll_event ev{};
  EXPECT_EQ(wait_one(outer.fd, 0, &ev), 0);
  ASSERT_EQ(send(p.c, "a", 1, 0), 1);
  ASSERT_EQ(wait_one(outer.fd, kLongMs, &ev), 1);
  EXPECT_EQ(ev.data.fd, inner.fd);
  ASSERT_EQ(wait_one(inner.fd, 0, &ev), 1);
  EXPECT_EQ(ev.data.fd, p.s);
  pollfd pf{inner.fd, POLLIN, 0};  // poll sees the set's members too
  EXPECT_EQ(poll(&pf, 1, 0), 1);
}

TEST(DifferentialEpoll, Timeouts) {
  Pair p;
  connect_pair(&p);
  Epoll ep;
  ASSERT_EQ(add(ep.fd, p.s, EPOLLIN), 0);
  epoll_event ev{};
  EXPECT_EQ(wait_one(ep.fd, 0, &ev), 0);
  EXPECT_EQ(wait_one(ep.fd, 30, &ev), 0);
  timespec ts{0, 20000000};
  EXPECT_EQ(epoll_pwait2(ep.fd, &ev, 1, &ts, nullptr), 0);
  timespec bad{0, 1000000000};
  EXPECT_EQ(epoll_pwait2(ep.fd, &ev, 1, &bad, nullptr), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(epoll_wait(ep.fd, &ev, 0, 0), -1);
  EXPECT_EQ(errno, EINVAL);
  // Unbounded: ends with the first byte.
  std::thread sender([&] {
    usleep(20000);
    send(p.c, "a", 1, 0);
  });
  sigset_t none;
  sigemptyset(&none);
  EXPECT_EQ(epoll_pwait(ep.fd, &ev, 1, -1, &none), 1);
  EXPECT_EQ(ev.data.fd, p.s);
  sender.join();
}

std::atomic<int> g_signals{0};

// Signals `t` until `done`, with a handler installed with `flags`.
struct SignalStorm {
  SignalStorm(pthread_t t, int flags) : target(t) {
    struct sigaction sa {};
    sa.sa_handler = [](int) { g_signals++; };
    sa.sa_flags = flags;
    sigaction(SIGUSR1, &sa, &old);
    th = std::thread([this] {
      while (!done) {
        pthread_kill(target, SIGUSR1);
        usleep(5000);
      }
    });
  }
  ~SignalStorm() {
    done = true;
    th.join();
    sigaction(SIGUSR1, &old, nullptr);
  }
  pthread_t target;
  std::atomic<bool> done{false};
  std::thread th;
  struct sigaction old {};
};

TEST(DifferentialEpoll, WaitFailsWithEintrEvenWithSaRestart) {
  Pair p;
  connect_pair(&p);
  Epoll ep;
  ASSERT_EQ(add(ep.fd, p.s, EPOLLIN), 0);
  epoll_event ev{};
  int rc, err;
  {
    SignalStorm storm(pthread_self(), SA_RESTART);
    rc = wait_one(ep.fd, -1, &ev);
    err = errno;
  }
  EXPECT_EQ(rc, -1);
  EXPECT_EQ(err, EINTR);
}

// A blocking accept on a listener while signals arrive: restarted after
// an SA_RESTART handler (a connection comes), EINTR otherwise.
void accept_under_signals(int flags, bool restarted) {
  uint16_t port = 0;
  int l = make_listener(0, &port);
  ASSERT_GE(l, 0);
  const int before = g_signals.load();
  std::atomic<int> got{-2}, err{0};
  std::atomic<bool> waiting{false};
  pthread_t acceptor_id;
  std::thread acceptor([&] {
    waiting = true;
    int c = accept(l, nullptr, nullptr);
    err = errno;
    got = c;
  });
  acceptor_id = acceptor.native_handle();
  while (!waiting) usleep(1000);
  int c = -1;
  {
    SignalStorm storm(acceptor_id, flags);
    while (g_signals.load() < before + 5 && got == -2) usleep(1000);
    if (restarted) {
      EXPECT_EQ(got.load(), -2);  // still in accept after the signals
      c = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a = loopback(port);
      EXPECT_EQ(connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    }
    while (got == -2) usleep(1000);
  }
  acceptor.join();
  if (restarted) {
    EXPECT_GE(got.load(), 0);
    close(got);
  } else {
    EXPECT_EQ(got.load(), -1);
    EXPECT_EQ(err.load(), EINTR);
  }
  if (c >= 0) close(c);
  close(l);
}

TEST(DifferentialEpoll, BlockingAcceptRestartsWithSaRestart) {
  accept_under_signals(SA_RESTART, true);
}

TEST(DifferentialEpoll, BlockingAcceptEintrWithoutSaRestart) { accept_under_signals(0, false); }

// A blocking recv while signals arrive (200 of them, about 1 s): EINTR
// without SA_RESTART; with SA_RESTART it goes on until a byte comes.
// differential.sh also runs these under the preload with a busy phase
// (polling_time) longer than the storm: the receive then spins, in no
// system call a signal could interrupt, and must see from the preload's
// count of handlers (interpose/signal_count.h) that the kernel's sleep
// would have been interrupted (sockperf's under-load client lost the
// SIGINT that ends its receiving thread so, and failed).
void recv_under_signals(int flags, bool restarted) {
  Pair p;
  connect_pair(&p);
  const int before = g_signals.load();
  std::atomic<int> got{-2}, err{0};
  std::atomic<bool> waiting{false};
  std::thread receiver([&] {
    waiting = true;
    char b;
    int n = static_cast<int>(recv(p.s, &b, 1, 0));
    err = errno;
    got = n;
  });
  while (!waiting) usleep(1000);
  {
    SignalStorm storm(receiver.native_handle(), flags);
    while (g_signals.load() < before + 200 && got == -2) usleep(1000);
    if (restarted) {
      EXPECT_EQ(got.load(), -2);  // still in recv after the signals
    }
    // Ends a recv the signals left waiting (restarted, or a signal lost).
    ASSERT_EQ(send(p.c, "x", 1, 0), 1);
    while (got == -2) usleep(1000);
  }
  receiver.join();
  if (restarted) {
    EXPECT_EQ(got.load(), 1);
  } else {
    EXPECT_EQ(got.load(), -1);
    EXPECT_EQ(err.load(), EINTR);
  }
}

TEST(DifferentialSignals, BlockingRecvRestartsWithSaRestart) {
  recv_under_signals(SA_RESTART, true);
}

TEST(DifferentialSignals, BlockingRecvEintrWithoutSaRestart) { recv_under_signals(0, false); }

// Whether thread `tid` sleeps in accept (or in the poll of the preload's
// accept).
bool wait_until_in_accept(pid_t tid) {
  return differential::wait_until_in(tid, {SYS_accept, SYS_accept4}, kLongMs);
}

// A thread blocked in accept(l), its result in got and err. finish():
// whether it returned within `ms`; one that did not is left asleep and
// its Acceptor leaked (the test fails; process exit ends it).
struct Acceptor {
  std::atomic<pid_t> tid{0};
  std::atomic<int> got{-2}, err{0};
  int done[2] = {-1, -1};
  std::thread t;
  explicit Acceptor(int l) {
    if (pipe(done)) return;
    t = std::thread([this, l] {
      tid = static_cast<pid_t>(syscall(SYS_gettid));
      int c = accept(l, nullptr, nullptr);
      err = errno;
      got = c;
      (void)!write(done[1], "x", 1);
    });
    while (!tid) usleep(1000);
  }
  static bool finish(Acceptor* a, int ms) {
    pollfd p{a->done[0], POLLIN, 0};
    if (poll(&p, 1, ms) != 1) {
      a->t.detach();
      return false;
    }
    a->t.join();
    return true;
  }
  ~Acceptor() {
    close(done[0]);
    close(done[1]);
  }
};

// Linux's accept holds its listener: closed by another thread meanwhile,
// the listener goes on listening while that accept waits, and a client
// still reaches it through the accept. A socket made meanwhile (on the
// freed numbers) is never acted on.
TEST(DifferentialEpoll, ListenerClosedUnderABlockedAccept) {
  uint16_t port = 0, other_port = 0;
  int l = make_listener(0, &port);
  ASSERT_GE(l, 0);
  auto* acc = new Acceptor(l);
  ASSERT_TRUE(wait_until_in_accept(acc->tid));
  ASSERT_EQ(close(l), 0);
  int other = make_listener(0, &other_port);
  ASSERT_GE(other, 0);
  int c = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = loopback(port);
  EXPECT_EQ(connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
  ASSERT_TRUE(Acceptor::finish(acc, kLongMs));
  const int s = acc->got;
  ASSERT_GE(s, 0) << strerror(acc->err);
  delete acc;
  char b[2];
  ASSERT_EQ(send(c, "hi", 2, 0), 2);
  ASSERT_EQ(read_full(s, b, 2), 2);
  EXPECT_EQ(memcmp(b, "hi", 2), 0);
  // The other listener was left alone: its client waits for it.
  int c3 = socket(AF_INET, SOCK_STREAM, 0);
  a = loopback(other_port);
  ASSERT_EQ(connect(c3, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
  int s3 = accept(other, nullptr, nullptr);
  EXPECT_GE(s3, 0) << strerror(errno);
  for (int fd : {s3, c3, c, s, other})
    if (fd >= 0) close(fd);
}

// Linux's recv holds its socket too: closed by another thread meanwhile,
// the connection goes on while that recv waits (never an end of stream
// the peer did not send: sockperf's under-load client took one for its
// server's close and failed), the peer's byte still reaches it, and the
// peer reads the end once that recv is over.
TEST(DifferentialEpoll, ConnectionClosedUnderABlockedRecv) {
  Pair p;
  connect_pair(&p);
  struct Receiver {  // leaked when its recv never returns (the test fails)
    std::atomic<pid_t> tid{0};
    std::atomic<int> got{-2};
    char b = 0;
    std::thread t;
  };
  auto* r = new Receiver;
  const int s = p.s;
  r->t = std::thread([r, s] {
    r->tid = static_cast<pid_t>(syscall(SYS_gettid));
    r->got = static_cast<int>(recv(s, &r->b, 1, 0));
  });
  while (!r->tid) usleep(1000);
  ASSERT_TRUE(differential::wait_until_in(r->tid, {SYS_recvfrom}, kLongMs));
  ASSERT_EQ(close(p.s), 0);
  p.s = -1;
  usleep(50000);  // an end of stream the close made up would be there by now
  EXPECT_EQ(r->got.load(), -2);
  ASSERT_EQ(send(p.c, "y", 1, 0), 1);
  for (int i = 0; i < kLongMs && r->got == -2; i++) usleep(1000);
  if (r->got == -2) {
    r->t.detach();
    FAIL() << "the recv never returned";
  }
  r->t.join();
  EXPECT_EQ(r->got.load(), 1);
  EXPECT_EQ(r->b, 'y');
  delete r;
  pollfd pc{p.c, POLLIN, 0};
  ASSERT_EQ(poll(&pc, 1, kLongMs), 1);
  char e;
  EXPECT_EQ(recv(p.c, &e, 1, 0), 0);
}

// shutdown of a listener as Linux: SHUT_WR changes nothing; SHUT_RD
// stops it: a blocked accept wakes with EINVAL, later accepts fail with
// EINVAL, a new client is refused (rsocket peers included); it may
// listen again.
TEST(DifferentialEpoll, ShutdownStopsAListener) {
  uint16_t port = 0;
  int l = make_listener(0, &port);
  ASSERT_GE(l, 0);
  sockaddr_in a = loopback(port);
  EXPECT_EQ(shutdown(l, SHUT_WR), 0);
  int c = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
  int s = accept(l, nullptr, nullptr);
  EXPECT_GE(s, 0) << strerror(errno);
  auto* acc = new Acceptor(l);
  ASSERT_TRUE(wait_until_in_accept(acc->tid));
  EXPECT_EQ(shutdown(l, SHUT_RD), 0);
  ASSERT_TRUE(Acceptor::finish(acc, kLongMs));
  EXPECT_EQ(acc->got.load(), -1);
  EXPECT_EQ(acc->err.load(), EINVAL);
  delete acc;
  int c2 = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_EQ(connect(c2, reinterpret_cast<sockaddr*>(&a), sizeof a), -1);
  EXPECT_EQ(errno, ECONNREFUSED);
  EXPECT_EQ(accept(l, nullptr, nullptr), -1);
  EXPECT_EQ(errno, EINVAL);
  // It may listen again (on a new port: an ephemeral one is given back).
  ASSERT_EQ(listen(l, 4), 0) << strerror(errno);
  socklen_t alen = sizeof a;
  ASSERT_EQ(getsockname(l, reinterpret_cast<sockaddr*>(&a), &alen), 0);
  int c3 = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(connect(c3, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
  int s3 = accept(l, nullptr, nullptr);
  EXPECT_GE(s3, 0) << strerror(errno);
  for (int fd : {s3, c3, c2, s, c, l})
    if (fd >= 0) close(fd);
}

TEST(DifferentialEpoll, ListenerInASet) {
  uint16_t port = 0;
  int l = make_listener(SOCK_NONBLOCK, &port);
  ASSERT_GE(l, 0);
  Epoll ep;
  ASSERT_EQ(add(ep.fd, l, EPOLLIN), 0);
  epoll_event ev{};
  EXPECT_EQ(wait_one(ep.fd, 0, &ev), 0);
  int c = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = loopback(port);
  ASSERT_EQ(connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(wait_one(ep.fd, kLongMs, &ev), 1);
  EXPECT_EQ(ev.data.fd, l);
  int s = accept(l, nullptr, nullptr);
  ASSERT_GE(s, 0) << strerror(errno);
  EXPECT_EQ(wait_one(ep.fd, 0, &ev), 0);
  EXPECT_EQ(accept(l, nullptr, nullptr), -1);
  EXPECT_EQ(errno, EAGAIN);
  for (int fd : {s, c, l}) close(fd);
}

// Edge-triggered, a listener reports each connection once: one left
// unaccepted is no new edge (a level report here would make an event loop
// that hands accepts to another thread spin), the next client is.
TEST(DifferentialEpoll, EdgeTriggeredListener) {
  uint16_t port = 0;
  int l = make_listener(SOCK_NONBLOCK, &port);
  ASSERT_GE(l, 0);
  Epoll ep;
  ASSERT_EQ(add(ep.fd, l, EPOLLIN | EPOLLET), 0);
  epoll_event ev{};
  EXPECT_EQ(wait_one(ep.fd, 0, &ev), 0);
  sockaddr_in a = loopback(port);
  int c[3];
  for (int i = 0; i < 2; i++) {
    c[i] = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_EQ(connect(c[i], reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
    ASSERT_EQ(wait_one(ep.fd, kLongMs, &ev), 1) << "client " << i;
    EXPECT_EQ(ev.data.fd, l);
    EXPECT_EQ(ev.events, static_cast<uint32_t>(EPOLLIN));
    EXPECT_EQ(wait_one(ep.fd, 0, &ev), 0) << "client " << i << ": reported again";
  }
  EXPECT_EQ(wait_one(ep.fd, 100, &ev), 0);  // a sleep, not woken by the two waiting
  int s[3];
  for (int i = 0; i < 2; i++) ASSERT_GE(s[i] = accept(l, nullptr, nullptr), 0) << strerror(errno);
  EXPECT_EQ(accept(l, nullptr, nullptr), -1);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(wait_one(ep.fd, 0, &ev), 0);
  // Asleep when the third arrives.
  std::thread late([&] {
    usleep(50000);
    c[2] = socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_EQ(connect(c[2], reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
  });
  EXPECT_EQ(wait_one(ep.fd, kLongMs, &ev), 1);
  late.join();
  ASSERT_GE(s[2] = accept(l, nullptr, nullptr), 0) << strerror(errno);
  for (int i = 0; i < 3; i++) {
    differential::expect_link(c[i], s[i]);
    close(c[i]);
    close(s[i]);
  }
  close(l);
}

// One listener edge-triggered in two sets, each waited on by its own
// thread: every connection is an edge in both, whichever thread looks
// first (one's look must not take the other's edge while it arms its sleep).
TEST(DifferentialEpoll, EdgeTriggeredListenerInTwoSets) {
  uint16_t port = 0;
  int l = make_listener(SOCK_NONBLOCK, &port);
  ASSERT_GE(l, 0);
  constexpr int kRounds = 200;
  Epoll sets[2];
  std::atomic<int> edges[2] = {0, 0};
  std::atomic<bool> quiet_wait{false};  // a wait ran out: an edge was missed
  std::thread waiters[2];
  for (int i = 0; i < 2; i++) {
    ASSERT_EQ(add(sets[i].fd, l, EPOLLIN | EPOLLET), 0);
    waiters[i] = std::thread([&, i] {
      for (int n = 0; n < kRounds; n++) {
        epoll_event ev{};
        if (wait_one(sets[i].fd, kLongMs, &ev) != 1) {
          quiet_wait = true;
          return;
        }
        edges[i]++;
      }
    });
  }
  const sockaddr_in a = loopback(port);
  unsigned seed = 1;
  for (int n = 0; n < kRounds && !quiet_wait; n++) {
    usleep(rand_r(&seed) % 300);  // the arrival at any point of the waiters' loops
    const int c = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_EQ(connect(c, reinterpret_cast<const sockaddr*>(&a), sizeof a), 0) << strerror(errno);
    while (!quiet_wait && (edges[0] <= n || edges[1] <= n)) usleep(50);
    const int s = accept(l, nullptr, nullptr);
    EXPECT_GE(s, 0) << strerror(errno);
    close(s);
    close(c);
  }
  for (std::thread& t : waiters) t.join();
  EXPECT_FALSE(quiet_wait) << "edges seen: " << edges[0] << " and " << edges[1];
  EXPECT_EQ(edges[0], kRounds);
  EXPECT_EQ(edges[1], kRounds);
  close(l);
}

TEST(DifferentialEpoll, CloseLeavesTheSet) {
  Pair p;
  connect_pair(&p);
  Epoll ep;
  ASSERT_EQ(add(ep.fd, p.s, EPOLLIN), 0);
  ASSERT_EQ(send(p.c, "a", 1, 0), 1);
  epoll_event ev{};
  ASSERT_EQ(wait_one(ep.fd, kLongMs, &ev), 1);
  const int s = p.s;
  ASSERT_EQ(close(p.s), 0);
  p.s = -1;
  EXPECT_EQ(wait_one(ep.fd, 0, &ev), 0);
  EXPECT_EQ(epoll_ctl(ep.fd, EPOLL_CTL_DEL, s, nullptr), -1);
  EXPECT_EQ(errno, EBADF);
}

// A set holds the connection until its last descriptor closes: closing
// the number it was added under while a duplicate lives keeps it there
// (its events still carry that number's data).
TEST(DifferentialEpoll, DuplicateKeepsItInTheSet) {
  Pair p;
  connect_pair(&p);
  Epoll ep;
  ASSERT_EQ(add(ep.fd, p.s, EPOLLIN), 0);
  const int s = p.s;
  const int d = dup(p.s);
  ASSERT_GE(d, 0);
  ASSERT_EQ(close(p.s), 0);
  p.s = -1;
  ASSERT_EQ(send(p.c, "a", 1, 0), 1);
  epoll_event ev{};
  ASSERT_EQ(wait_one(ep.fd, kLongMs, &ev), 1);
  EXPECT_EQ(ev.data.fd, s);
  pollfd pf{d, POLLIN, 0};  // the duplicate is the connection for poll too
  EXPECT_EQ(poll(&pf, 1, 0), 1);
  ASSERT_EQ(close(d), 0);
  EXPECT_EQ(wait_one(ep.fd, 0, &ev), 0);
}

// The same for a listener: the set keeps it while a duplicate lives.
TEST(DifferentialEpoll, ListenersDuplicateKeepsItInTheSet) {
  uint16_t port = 0;
  int l = make_listener(SOCK_NONBLOCK, &port);
  ASSERT_GE(l, 0);
  Epoll ep;
  ASSERT_EQ(add(ep.fd, l, EPOLLIN), 0);
  const int d = dup(l);
  ASSERT_GE(d, 0) << strerror(errno);
  ASSERT_EQ(close(l), 0);
  int c = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = loopback(port);
  ASSERT_EQ(connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  epoll_event ev{};
  ASSERT_EQ(wait_one(ep.fd, kLongMs, &ev), 1);
  EXPECT_EQ(ev.data.fd, l);
  int s = accept(d, nullptr, nullptr);
  EXPECT_GE(s, 0) << strerror(errno);
  EXPECT_EQ(wait_one(ep.fd, 0, &ev), 0);
  ASSERT_EQ(close(d), 0);
  for (int fd : {s, c})
    if (fd >= 0) close(fd);
}

// Two threads asleep on one set; one-shot members: each event goes to one.
TEST(DifferentialEpoll, OneSetSeveralThreads) {
  Pair p1, p2;
  connect_pair(&p1);
  connect_pair(&p2);
  Epoll ep;
  ASSERT_EQ(add(ep.fd, p1.s, EPOLLIN | EPOLLONESHOT), 0);
  ASSERT_EQ(add(ep.fd, p2.s, EPOLLIN | EPOLLONESHOT), 0);
  std::atomic<int> a{-1}, b{-1};
  std::thread t1([&] {
    epoll_event ev{};
    if (wait_one(ep.fd, kLongMs, &ev) == 1) a = ev.data.fd;
  });
  std::thread t2([&] {
    epoll_event ev{};
    if (wait_one(ep.fd, kLongMs, &ev) == 1) b = ev.data.fd;
  });
  ASSERT_EQ(send(p1.c, "a", 1, 0), 1);
  ASSERT_EQ(send(p2.c, "b", 1, 0), 1);
  t1.join();
  t2.join();
  EXPECT_EQ((std::set<int>{a.load(), b.load()}), (std::set<int>{p1.s, p2.s}));
}

// A thread asleep on a set of kernel descriptors when a connection joins
// it wakes for the connection's first byte.
// A connected pair, and a set of kernel descriptors only (a pipe's read
// end) for the connection to join.
struct KernelOnlySet {
  KernelOnlySet() {
    connect_pair(&p);
    EXPECT_EQ(pipe(pipefd), 0);
    EXPECT_EQ(add(ep.fd, pipefd[0], EPOLLIN), 0);
  }
  ~KernelOnlySet() {
    close(pipefd[0]);
    close(pipefd[1]);
  }
  Pair p;
  int pipefd[2] = {-1, -1};
  Epoll ep;
};

TEST(DifferentialEpoll, ConnectionJoiningASetInUse) {
  KernelOnlySet k;
  Pair& p = k.p;
  Epoll& ep = k.ep;
  std::atomic<int> got{-1};
  std::atomic<bool> started{false};
  std::thread waiter([&] {
    started = true;
    epoll_event ev{};
    if (wait_one(ep.fd, kLongMs, &ev) == 1) got = ev.data.fd;
  });
  while (!started) usleep(1000);
  usleep(20000);  // most likely asleep by now (either way the test holds)
  ASSERT_EQ(add(ep.fd, p.s, EPOLLIN), 0);
  ASSERT_EQ(send(p.c, "a", 1, 0), 1);
  waiter.join();
  EXPECT_EQ(got.load(), p.s);
}

// A duplicate of an epoll descriptor (dup, dup3, F_DUPFD_CLOEXEC) names
// the same set: a connection added through either is reported by both,
// and the set outlives the number it was made at. A dup2 onto a set's
// number leaves the other numbers' set as it was. F_DUPFD's lowest
// number is an int, as the kernel reads it.
TEST(DifferentialEpoll, DuplicatesNameTheSameSet) {
  Pair p, q;
  connect_pair(&p);
  connect_pair(&q);
  int ep = epoll_create1(0);
  ASSERT_GE(ep, 0);
  ASSERT_EQ(add(ep, p.s, EPOLLIN), 0);
  const int d = dup(ep);
  ASSERT_GE(d, 0) << strerror(errno);
  ASSERT_EQ(add(d, q.s, EPOLLIN), 0);
  ASSERT_EQ(add(ep, q.s, EPOLLIN), -1);
  EXPECT_EQ(errno, EEXIST);
  ASSERT_EQ(send(p.c, "a", 1, 0), 1);
  epoll_event ev{};
  ASSERT_EQ(wait_one(d, kLongMs, &ev), 1);
  EXPECT_EQ(ev.data.fd, p.s);
  for (int n : {ep, p.s}) {  // the kernel reads the lowest number as an int
    const int x = fcntl(n, F_DUPFD, (1L << 32) + 50);
    EXPECT_GE(x, 50) << strerror(errno);
    close(x);
    EXPECT_EQ(fcntl(n, F_DUPFD, -1L), -1);
    EXPECT_EQ(errno, EINVAL);
  }
  const int e = fcntl(ep, F_DUPFD_CLOEXEC, 100);
  ASSERT_GE(e, 100) << strerror(errno);
  EXPECT_EQ(fcntl(e, F_GETFD), FD_CLOEXEC);
  EXPECT_EQ(fcntl(d, F_GETFD), 0);
  int f = dup(0);  // a number for dup3 to take
  ASSERT_GE(f, 0);
  ASSERT_EQ(dup3(ep, f, O_CLOEXEC), f) << strerror(errno);
  ASSERT_EQ(close(ep), 0);
  char b;
  ASSERT_EQ(recv(p.s, &b, 1, 0), 1);
  ASSERT_EQ(send(q.c, "b", 1, 0), 1);
  for (int n : {d, e, f}) {
    ASSERT_EQ(wait_one(n, kLongMs, &ev), 1) << "number " << n;
    EXPECT_EQ(ev.data.fd, q.s) << "number " << n;
  }
  pollfd pf{e, POLLIN, 0};
  EXPECT_EQ(poll(&pf, 1, 0), 1);
  EXPECT_EQ(pf.revents, POLLIN);
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  ASSERT_EQ(dup2(pipefd[0], f), f);  // f is a pipe now; d and e keep the set
  EXPECT_EQ(epoll_wait(f, &ev, 1, 0), -1);
  EXPECT_EQ(errno, EINVAL);
  ASSERT_EQ(recv(q.s, &b, 1, 0), 1);
  ASSERT_EQ(send(p.c, "c", 1, 0), 1);
  ASSERT_EQ(wait_one(e, kLongMs, &ev), 1);
  EXPECT_EQ(ev.data.fd, p.s);
  for (int n : {d, e, f, pipefd[0], pipefd[1]}) close(n);
}

// A connection joining a set a thread sleeps on ends nothing early nor
// late: the wait keeps its timeout (1 s), so the byte sent 0.3 s after it
// comes too late (a wait that started its timeout over at the join would
// return it).
TEST(DifferentialEpoll, AJoiningConnectionKeepsTheTimeout) {
  KernelOnlySet k;
  std::thread joiner([&] {
    usleep(700000);
    add(k.ep.fd, k.p.s, EPOLLIN);
    usleep(600000);
    send(k.p.c, "a", 1, 0);
  });
  epoll_event ev{};
  EXPECT_EQ(wait_one(k.ep.fd, 1000, &ev), 0) << "the timeout started over at the join";
  joiner.join();
}

// epoll_pwait and epoll_pwait2 over a connection: a signal pending before
// the call and let in by its mask ends it at once, as the kernel swaps the
// mask in with the wait.
TEST(DifferentialEpoll, MaskedWaitsLetInAPendingSignal) {
  Pair p;
  connect_pair(&p);
  Epoll ep;
  ASSERT_EQ(add(ep.fd, p.s, EPOLLIN), 0);
  epoll_event ev{};
  {
    differential::PendingSignal pending;
    errno = 0;
    EXPECT_EQ(epoll_pwait(ep.fd, &ev, 1, 5000, &pending.during), -1);
    EXPECT_EQ(errno, EINTR);
  }
  {
    differential::PendingSignal pending;
    const timespec limit{5, 0};
    errno = 0;
    EXPECT_EQ(epoll_pwait2(ep.fd, &ev, 1, &limit, &pending.during), -1);
    EXPECT_EQ(errno, EINTR);
  }
  // Timeout 0: epoll_wait, unlike poll, looks at its timeout before
  // signals, so nothing ready is 0, the signal left pending.
  {
    differential::PendingSignal pending;
    EXPECT_EQ(epoll_pwait(ep.fd, &ev, 1, 0, &pending.during), 0);
    EXPECT_EQ(pending.handled(), 0);
  }
  // Ready beats the signal: the event, the signal left pending.
  ASSERT_EQ(send(p.c, "z", 1, 0), 1);
  differential::PendingSignal pending;
  EXPECT_EQ(epoll_pwait(ep.fd, &ev, 1, 5000, &pending.during), 1);
  EXPECT_EQ(pending.handled(), 0);
}

// An idle wait sleeps: a second of it costs little CPU time (a spinning
// wait would cost about a second).
TEST(DifferentialEpoll, IdleWaitSleeps) {
  Pair p;
  connect_pair(&p);
  Epoll ep;
  ASSERT_EQ(add(ep.fd, p.s, EPOLLIN), 0);
  rusage before{}, after{};
  ASSERT_EQ(getrusage(RUSAGE_THREAD, &before), 0);
  epoll_event ev{};
  EXPECT_EQ(wait_one(ep.fd, 1000, &ev), 0);
  ASSERT_EQ(getrusage(RUSAGE_THREAD, &after), 0);
  auto us = [](const rusage& r) {
    return (r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1000000LL + r.ru_utime.tv_usec +
           r.ru_stime.tv_usec;
  };
  EXPECT_LT(us(after) - us(before), 300000);
}

}  // namespace
