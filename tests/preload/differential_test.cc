// Socket semantics a program relies on, asserted as Linux's kernel TCP
// gives them. differential.sh runs this binary twice, once plain and once
// under librspreload (both ends of each connection in this process), and
// both runs must pass: the preload gives the same return values, errno
// and readiness. Built with _FORTIFY_SOURCE=2, so glibc's __recv_chk,
// __read_chk and __poll_chk are the calls made where it applies.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/preload/pair.h"

namespace {

using differential::connect_pair;
using differential::expect_link;
using differential::loopback;
using differential::make_listener;
using differential::Pair;
using differential::PendingSignal;
using differential::read_full;

TEST(Differential, DataBothWaysIntact) {
  Pair p;
  connect_pair(&p);
  std::vector<char> out(1 << 20), in(out.size());
  for (size_t i = 0; i < out.size(); i++) out[i] = static_cast<char>(i * 7 + 3);
  std::thread writer([&] {
    size_t sent = 0;
    while (sent < out.size()) {
      ssize_t w = send(p.c, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
      if (w <= 0) return;
      sent += static_cast<size_t>(w);
    }
  });
  EXPECT_EQ(read_full(p.s, in.data(), in.size()), static_cast<ssize_t>(in.size()));
  writer.join();
  EXPECT_EQ(in, out);
  char b[8];
  ASSERT_EQ(write(p.s, "reply", 5), 5);
  EXPECT_EQ(read(p.c, b, sizeof b), 5);  // __read_chk under fortify
  EXPECT_EQ(memcmp(b, "reply", 5), 0);
}

TEST(Differential, VectoredCalls) {
  Pair p;
  connect_pair(&p);
  char a[] = "abc", b[] = "defgh";
  iovec iov[2] = {{a, 3}, {b, 5}};
  ASSERT_EQ(writev(p.c, iov, 2), 8);
  msghdr m{};
  iovec riov[2];
  char x[4], y[4];
  riov[0] = {x, 4};
  riov[1] = {y, 4};
  m.msg_iov = riov;
  m.msg_iovlen = 2;
  size_t got = 0;
  while (got < 8) {
    ssize_t r = recvmsg(p.s, &m, 0);
    ASSERT_GT(r, 0);
    got += static_cast<size_t>(r);
    if (got < 8) {  // the rest lands after what came
      riov[0] = {got < 4 ? x + got : y + (got - 4), got < 4 ? 4 - got : 8 - got};
      riov[1] = {y, got < 4 ? 4u : 0u};
      m.msg_iovlen = got < 4 ? 2 : 1;
    }
  }
  EXPECT_EQ(memcmp(x, "abcd", 4), 0);
  EXPECT_EQ(memcmp(y, "efgh", 4), 0);
  msghdr sm{};
  iovec siov{a, 3};
  sm.msg_iov = &siov;
  sm.msg_iovlen = 1;
  EXPECT_EQ(sendmsg(p.s, &sm, 0), 3);
  char r[3];
  EXPECT_EQ(read_full(p.c, r, 3), 3);
  ASSERT_EQ(send(p.s, "12345678", 8, 0), 8);
  ssize_t n = readv(p.c, iov, 2);
  ASSERT_GT(n, 0);
  char all[8];
  memcpy(all, a, 3);
  memcpy(all + 3, b, 5);
  if (n < 8) {
    ASSERT_EQ(read_full(p.c, all + n, static_cast<size_t>(8 - n)), 8 - n);
  }
  EXPECT_EQ(memcmp(all, "12345678", 8), 0);
}

TEST(Differential, NamesMatch) {
  Pair p;
  connect_pair(&p);
  sockaddr_in peer{}, local{};
  socklen_t len = sizeof peer;
  ASSERT_EQ(getpeername(p.c, reinterpret_cast<sockaddr*>(&peer), &len), 0);
  EXPECT_EQ(ntohs(peer.sin_port), p.port);
  EXPECT_EQ(peer.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
  len = sizeof local;
  ASSERT_EQ(getsockname(p.s, reinterpret_cast<sockaddr*>(&local), &len), 0);
  EXPECT_EQ(ntohs(local.sin_port), p.port);
  sockaddr_in cl{}, sp{};
  len = sizeof cl;
  ASSERT_EQ(getsockname(p.c, reinterpret_cast<sockaddr*>(&cl), &len), 0);
  len = sizeof sp;
  ASSERT_EQ(getpeername(p.s, reinterpret_cast<sockaddr*>(&sp), &len), 0);
  EXPECT_EQ(cl.sin_port, sp.sin_port);
}

TEST(Differential, OptionsAndFlags) {
  Pair p;
  connect_pair(&p);
  int v = -1;
  socklen_t len = sizeof v;
  ASSERT_EQ(getsockopt(p.c, SOL_SOCKET, SO_TYPE, &v, &len), 0);
  EXPECT_EQ(v, SOCK_STREAM);
  len = sizeof v;
  ASSERT_EQ(getsockopt(p.c, SOL_SOCKET, SO_ERROR, &v, &len), 0);
  EXPECT_EQ(v, 0);
  int one = 1;
  EXPECT_EQ(setsockopt(p.c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one), 0);
  EXPECT_EQ(fcntl(p.c, F_GETFL) & O_NONBLOCK, 0);
  ASSERT_EQ(fcntl(p.c, F_SETFL, fcntl(p.c, F_GETFL) | O_NONBLOCK), 0);
  EXPECT_NE(fcntl(p.c, F_GETFL) & O_NONBLOCK, 0);
  char b[4];
  EXPECT_EQ(recv(p.c, b, sizeof b, 0), -1);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(recv(p.s, b, sizeof b, MSG_DONTWAIT), -1);
  EXPECT_EQ(errno, EAGAIN);
  ASSERT_EQ(fcntl(p.c, F_SETFD, FD_CLOEXEC), 0);
  EXPECT_EQ(fcntl(p.c, F_GETFD), FD_CLOEXEC);
}

// Buffer sizes set before connect and before listen stay with the
// connection, both ends (an accepted socket takes its listener's), as the
// kernel keeps them. 32 KiB: under net.core.[rw]mem_max, and not what a
// socket gets by default (the kernel's and the rsocket's both double it).
TEST(Differential, BufferSizesSetBeforeConnectStay) {
  const int size = 32 * 1024;
  auto sized = [&](int fd) {
    EXPECT_EQ(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size), 0) << strerror(errno);
    EXPECT_EQ(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size), 0) << strerror(errno);
  };
  auto expect_sizes = [&](int fd, const char* which) {
    for (int name : {SO_SNDBUF, SO_RCVBUF}) {
      int v = -1;
      socklen_t len = sizeof v;
      ASSERT_EQ(getsockopt(fd, SOL_SOCKET, name, &v, &len), 0) << strerror(errno);
      EXPECT_EQ(v, 2 * size) << which << (name == SO_SNDBUF ? " SO_SNDBUF" : " SO_RCVBUF");
    }
  };
  int l = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(l, 0);
  sized(l);
  sockaddr_in a = loopback(0);
  socklen_t alen = sizeof a;
  ASSERT_EQ(bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
  ASSERT_EQ(listen(l, 4), 0) << strerror(errno);
  ASSERT_EQ(getsockname(l, reinterpret_cast<sockaddr*>(&a), &alen), 0);
  int c = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(c, 0);
  sized(c);
  expect_sizes(c, "client before connect");
  ASSERT_EQ(connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
  int s = accept(l, nullptr, nullptr);
  ASSERT_GE(s, 0) << strerror(errno);
  expect_sizes(c, "client");
  expect_sizes(s, "accepted");
  char b = 'x';
  ASSERT_EQ(write(c, &b, 1), 1);
  EXPECT_EQ(read(s, &b, 1), 1);
  for (int fd : {s, c, l}) close(fd);
}

TEST(Differential, SocketFlagsHonoured) {
  uint16_t port;
  int l = make_listener(SOCK_NONBLOCK | SOCK_CLOEXEC, &port);
  ASSERT_GE(l, 0);
  EXPECT_NE(fcntl(l, F_GETFL) & O_NONBLOCK, 0);
  EXPECT_EQ(fcntl(l, F_GETFD), FD_CLOEXEC);
  EXPECT_EQ(accept(l, nullptr, nullptr), -1);  // nobody yet
  EXPECT_TRUE(errno == EAGAIN || errno == EWOULDBLOCK);
  int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  sockaddr_in a = loopback(port);
  int rc = connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a);
  EXPECT_TRUE(rc == 0 || errno == EINPROGRESS) << strerror(errno);
  pollfd pl{l, POLLIN, 0};
  ASSERT_EQ(poll(&pl, 1, 10000), 1);  // __poll_chk under fortify
  int s = accept4(l, nullptr, nullptr, SOCK_NONBLOCK);
  ASSERT_GE(s, 0) << strerror(errno);
  EXPECT_NE(fcntl(s, F_GETFL) & O_NONBLOCK, 0);
  EXPECT_EQ(fcntl(s, F_GETFD), 0);
  pollfd pc{c, POLLOUT, 0};
  ASSERT_EQ(poll(&pc, 1, 10000), 1);
  int err = -1;
  socklen_t len = sizeof err;
  ASSERT_EQ(getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len), 0);
  EXPECT_EQ(err, 0);
  close(s);
  close(c);
  close(l);
}

TEST(Differential, EofAfterShutdownAndClose) {
  Pair p;
  connect_pair(&p);
  ASSERT_EQ(shutdown(p.c, SHUT_WR), 0);
  char b[4];
  EXPECT_EQ(recv(p.s, b, sizeof b, 0), 0);
  ASSERT_EQ(send(p.s, "x", 1, 0), 1);  // the other way still works
  EXPECT_EQ(recv(p.c, b, sizeof b, 0), 1);
  ASSERT_EQ(close(p.s), 0);
  p.s = -1;
  pollfd pc{p.c, POLLIN, 0};
  ASSERT_EQ(poll(&pc, 1, 10000), 1);
  EXPECT_NE(pc.revents & (POLLIN | POLLHUP), 0);
  EXPECT_EQ(recv(p.c, b, sizeof b, 0), 0);
}

TEST(Differential, SelectOverMixedDescriptors) {
  Pair p;
  connect_pair(&p);
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  ASSERT_EQ(write(pipefd[1], "p", 1), 1);
  ASSERT_EQ(send(p.c, "s", 1, 0), 1);
  for (int round = 0; round < 100; round++) {  // until both show (the byte is on its way)
    fd_set r;
    FD_ZERO(&r);
    FD_SET(pipefd[0], &r);
    FD_SET(p.s, &r);
    timeval tv{10, 0};
    int n = select(std::max(pipefd[0], p.s) + 1, &r, nullptr, nullptr, &tv);
    ASSERT_GE(n, 1);
    EXPECT_TRUE(FD_ISSET(pipefd[0], &r));
    if (n == 2) {
      EXPECT_TRUE(FD_ISSET(p.s, &r));
      break;
    }
  }
  char b;
  EXPECT_EQ(recv(p.s, &b, 1, 0), 1);
  close(pipefd[0]);
  close(pipefd[1]);
}

TEST(Differential, PpollAndPselect) {
  Pair p;
  connect_pair(&p);
  ASSERT_EQ(send(p.c, "z", 1, 0), 1);
  sigset_t mask;
  sigemptyset(&mask);
  pollfd pf{p.s, POLLIN, 0};
  timespec ts{10, 0};
  ASSERT_EQ(ppoll(&pf, 1, &ts, &mask), 1);
  EXPECT_NE(pf.revents & POLLIN, 0);
  fd_set r;
  FD_ZERO(&r);
  FD_SET(p.s, &r);
  ASSERT_EQ(pselect(p.s + 1, &r, nullptr, nullptr, &ts, &mask), 1);
  EXPECT_TRUE(FD_ISSET(p.s, &r));
  timespec bad{0, 1000000000};
  EXPECT_EQ(ppoll(&pf, 1, &bad, nullptr), -1);
  EXPECT_EQ(errno, EINVAL);
}

// ppoll, then pselect, on `fd` with timeout `t`, each with a signal
// pending that its mask lets in: -1/EINTR, the handler run once.
void expect_pending_signal_ends_them(int fd, const timespec& t) {
  {
    PendingSignal pending;
    pollfd pf{fd, POLLIN, 0};
    errno = 0;
    EXPECT_EQ(ppoll(&pf, 1, &t, &pending.during), -1);
    EXPECT_EQ(errno, EINTR);
    EXPECT_EQ(pending.handled(), 1);
  }
  PendingSignal pending;
  fd_set r;
  FD_ZERO(&r);
  FD_SET(fd, &r);
  errno = 0;
  EXPECT_EQ(pselect(fd + 1, &r, nullptr, nullptr, &t, &pending.during), -1);
  EXPECT_EQ(errno, EINTR);
  EXPECT_EQ(pending.handled(), 1);
}

// With a connection in the set, as over kernel descriptors only: a signal
// pending before the call and let in by its mask ends it at once.
TEST(Differential, PpollAndPselectLetInAPendingSignal) {
  Pair p;
  connect_pair(&p);
  // No data comes: the signal ends them, else a timeout (0).
  expect_pending_signal_ends_them(p.s, timespec{5, 0});
}

// The same with timeout 0: poll(2) looks at signals before its timeout, so
// a call that may not wait says EINTR too, and its handler runs.
TEST(Differential, PpollAndPselectThatMayNotWaitLetInAPendingSignal) {
  Pair p;
  connect_pair(&p);
  const timespec zero{0, 0};
  expect_pending_signal_ends_them(p.s, zero);
  // Ready beats the signal: the count, the signal left pending (the
  // kernel looks at signals only when nothing is ready), whether the call
  // may wait or not.
  ASSERT_EQ(send(p.c, "z", 1, 0), 1);
  pollfd pf{p.s, POLLIN, 0};
  ASSERT_EQ(poll(&pf, 1, 5000), 1);
  const timespec wait{5, 0};
  for (const timespec* t : {&zero, &wait}) {
    PendingSignal again;
    EXPECT_EQ(ppoll(&pf, 1, t, &again.during), 1);
    EXPECT_EQ(again.handled(), 0) << "ppoll ran the handler, timeout " << t->tv_sec << " s";
    fd_set r;
    FD_ZERO(&r);
    FD_SET(p.s, &r);
    EXPECT_EQ(pselect(p.s + 1, &r, nullptr, nullptr, t, &again.during), 1);
    EXPECT_EQ(again.handled(), 0) << "pselect ran the handler, timeout " << t->tv_sec << " s";
  }
}

// A count known only at run time over an array of known size: fortify
// makes these __poll_chk and __ppoll_chk, which must reach the preload
// (libc's own ppoll saw the connection's number as a bare socket and said
// POLLHUP with data waiting).
TEST(Differential, FortifiedWaitsWithARuntimeCount) {
  Pair p;
  connect_pair(&p);
  ASSERT_EQ(send(p.c, "z", 1, 0), 1);
  pollfd fds[2] = {{p.s, POLLIN, 0}, {-1, 0, 0}};
  volatile nfds_t n = 1;  // not a constant: the _chk call
  ASSERT_EQ(poll(fds, n, 10000), 1);
  EXPECT_EQ(fds[0].revents, POLLIN);
  fds[0].revents = 0;
  timespec ts{10, 0};
  ASSERT_EQ(ppoll(fds, n, &ts, nullptr), 1);
  EXPECT_EQ(fds[0].revents, POLLIN);
}

// SO_RCVLOWAT: below the mark a connection is not readable and a blocking
// receive waits; once the mark is queued it takes all there is. (Linux
// counts only what is queued, not what the waiting receive took already:
// the second send alone reaches the mark.)
TEST(Differential, ReceiveLowMark) {
  Pair p;
  connect_pair(&p);
  const int mark = 10;
  ASSERT_EQ(setsockopt(p.s, SOL_SOCKET, SO_RCVLOWAT, &mark, sizeof mark), 0);
  ASSERT_EQ(send(p.c, "abcd", 4, 0), 4);
  pollfd pf{p.s, POLLIN, 0};
  EXPECT_EQ(poll(&pf, 1, 300), 0) << "readable below the mark";
  std::atomic<ssize_t> got{-2};
  char b[20];
  std::thread receiver([&] { got = recv(p.s, b, sizeof b, 0); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(got.load(), -2) << "a blocking receive returned below the mark";
  ASSERT_EQ(send(p.c, "efghijklmn", 10, 0), 10);
  receiver.join();
  EXPECT_EQ(got.load(), 14);
  EXPECT_EQ(std::string(b, 14), "abcdefghijklmn");
}

// Kernel-only sets: a timeout of 999999999 ns is valid, and the mask is
// swapped atomically with the wait, so a signal pending before the call
// and let in by pselect's mask cuts it short at once.
TEST(Differential, PselectOverKernelDescriptorsOnly) {
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  ASSERT_EQ(write(pipefd[1], "p", 1), 1);
  fd_set r;
  FD_ZERO(&r);
  FD_SET(pipefd[0], &r);
  timespec ts{0, 999999999};
  EXPECT_EQ(pselect(pipefd[0] + 1, &r, nullptr, nullptr, &ts, nullptr), 1) << strerror(errno);
  EXPECT_TRUE(FD_ISSET(pipefd[0], &r));
  char b;
  ASSERT_EQ(read(pipefd[0], &b, 1), 1);

  PendingSignal pending;
  FD_ZERO(&r);
  FD_SET(pipefd[0], &r);
  timespec limit{5, 0};  // no data comes: the signal ends it, else a timeout (0)
  errno = 0;
  EXPECT_EQ(pselect(pipefd[0] + 1, &r, nullptr, nullptr, &limit, &pending.during), -1);
  EXPECT_EQ(errno, EINTR);
  close(pipefd[0]);
  close(pipefd[1]);
}

// A vfork child shares our memory: its close, dup2 and closefrom before
// exec (CPython's subprocess with close_fds=True) close its own
// descriptors only, never the parent's connections or their table.
[[noreturn]] void close_all_and_exec(int s, int c) {
  close(s);
  dup2(0, c);
  closefrom(3);
  execl("/bin/true", "true", static_cast<char*>(nullptr));
  _exit(127);
}

// A signal handler that sends on one connection while its thread echoes
// messages on another (inside the library much of the time, preloaded):
// each send succeeds, or, preloaded, fails with EAGAIN where the call it
// interrupted keeps the library; never another error, never SIGPIPE (the
// kernel socket under an rsocket is not the connection); every byte sent
// arrives.
std::atomic<int> g_handler_ok{0}, g_handler_again{0}, g_handler_other{0};
int g_handler_fd = -1;
void send_a_byte(int) {
  const int saved = errno;
  if (send(g_handler_fd, "x", 1, 0) == 1)
    g_handler_ok++;
  else if (errno == EAGAIN || errno == EWOULDBLOCK)
    g_handler_again++;
  else
    g_handler_other++;
  errno = saved;
}

TEST(Differential, AHandlerSendsBesideTheThreadsCalls) {
  differential::Pair echo, side;
  connect_pair(&echo);
  connect_pair(&side);
  g_handler_fd = side.c;
  struct sigaction sa {
  }, old{};
  sa.sa_handler = send_a_byte;
  sa.sa_flags = SA_RESTART;
  ASSERT_EQ(sigaction(SIGALRM, &sa, &old), 0);
  itimerval every{{0, 200}, {0, 200}}, off{};
  ASSERT_EQ(setitimer(ITIMER_REAL, &every, nullptr), 0);
  char msg[64], got[64];
  int rounds = 0;
  bool intact = true;
  for (; g_handler_ok + g_handler_again + g_handler_other < 500 && rounds < 1000000; rounds++) {
    memset(msg, 'a' + rounds % 26, sizeof msg);
    intact = intact && send(echo.c, msg, sizeof msg, 0) == sizeof msg &&
             differential::read_full(echo.s, got, sizeof got) == sizeof got &&
             !memcmp(msg, got, sizeof msg);
  }
  setitimer(ITIMER_REAL, &off, nullptr);
  sigaction(SIGALRM, &old, nullptr);
  EXPECT_TRUE(intact) << "the thread's own messages";
  EXPECT_EQ(g_handler_other.load(), 0) << "sent " << g_handler_ok << ", EAGAIN " << g_handler_again;
  std::vector<char> sent(static_cast<size_t>(g_handler_ok.load()));
  EXPECT_TRUE(sent.empty() || differential::read_full(side.s, sent.data(), sent.size()) ==
                                  static_cast<ssize_t>(sent.size()));
  EXPECT_TRUE(std::all_of(sent.begin(), sent.end(), [](char c) { return c == 'x'; }));
}

// A handler that sends on the connection its thread is blocked receiving
// on (a heartbeat from SIGALRM), messages coming every 1-2 ms: the
// kernel sends each byte; preloaded, a handler that lands in the
// receive's sleep (it holds nothing of the library's there) sends too,
// one that lands where the call holds the connection gets EAGAIN. Every
// byte sent arrives, the messages come intact, and most handlers' sends
// went through (the thread sleeps most of the time).
TEST(Differential, AHandlerSendsOnTheConnectionItsThreadReceivesOn) {
  Pair p;
  connect_pair(&p);
  g_handler_ok = g_handler_again = g_handler_other = 0;
  g_handler_fd = p.c;
  constexpr int kRounds = 400;
  std::atomic<bool> done{false};
  std::atomic<long> xs{0};
  std::thread peer([&] {
    sigset_t alrm;
    sigemptyset(&alrm);
    sigaddset(&alrm, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &alrm, nullptr);  // the handler runs over the receiving thread
    char msg[64], in[256];
    const auto drain = [&] {
      for (ssize_t n; (n = recv(p.s, in, sizeof in, MSG_DONTWAIT)) > 0;)
        xs += std::count(in, in + n, 'x');
    };
    for (int i = 0; i < kRounds; i++) {
      memset(msg, 'a' + i % 26, sizeof msg);
      if (send(p.s, msg, sizeof msg, 0) != sizeof msg) break;
      usleep(1000 + i % 7 * 150);
      drain();
    }
    while (!done) {
      drain();
      usleep(1000);
    }
    drain();
  });
  struct sigaction sa {
  }, old{};
  sa.sa_handler = send_a_byte;
  sa.sa_flags = SA_RESTART;
  ASSERT_EQ(sigaction(SIGALRM, &sa, &old), 0);
  itimerval every{{0, 300}, {0, 300}}, off{};
  ASSERT_EQ(setitimer(ITIMER_REAL, &every, nullptr), 0);
  bool intact = true;
  for (int i = 0; i < kRounds && intact; i++) {
    char got[64], want[64];
    memset(want, 'a' + i % 26, sizeof want);
    intact = read_full(p.c, got, sizeof got) == sizeof got && !memcmp(got, want, sizeof got);
  }
  setitimer(ITIMER_REAL, &off, nullptr);
  sigaction(SIGALRM, &old, nullptr);
  for (int i = 0; i < 5000 && xs < g_handler_ok; i++) usleep(1000);
  done = true;
  peer.join();
  EXPECT_TRUE(intact) << "the peer's messages";
  EXPECT_EQ(g_handler_other.load(), 0) << "sent " << g_handler_ok << ", EAGAIN " << g_handler_again;
  EXPECT_GT(g_handler_ok.load(), g_handler_again.load()) << "sent and EAGAIN";
  EXPECT_EQ(xs.load(), g_handler_ok.load()) << "the handlers' bytes that arrived";
  std::printf("handlers' sends: %d sent, %d EAGAIN\n", g_handler_ok.load(), g_handler_again.load());
}

// A handler over a blocked receive sends on that connection (waking its
// waiters, the interrupted receive among them) and then waits in a
// blocking receive on another connection until a byte comes 100 ms later:
// it sleeps there, as the kernel's does, rather than spinning on a
// wake-up meant for the call it interrupted.
std::atomic<int> g_io_send{0}, g_io_recv{0};
std::atomic<long> g_io_cpu_ns{0}, g_io_wall_ns{0};
std::atomic<bool> g_io_done{false};
int g_io_fd = -1, g_io_other = -1;
long ns_of(clockid_t c) {
  timespec t{};
  clock_gettime(c, &t);
  return t.tv_sec * 1000000000L + t.tv_nsec;
}
void send_then_wait(int) {
  const int saved = errno;
  g_io_send = static_cast<int>(send(g_io_fd, "h", 1, 0));
  const long cpu = ns_of(CLOCK_THREAD_CPUTIME_ID), wall = ns_of(CLOCK_MONOTONIC);
  char b = 0;
  g_io_recv = static_cast<int>(recv(g_io_other, &b, 1, 0)) == 1 && b == 'q' ? 1 : -1;
  g_io_cpu_ns = ns_of(CLOCK_THREAD_CPUTIME_ID) - cpu;
  g_io_wall_ns = ns_of(CLOCK_MONOTONIC) - wall;
  g_io_done = true;
  errno = saved;
}

TEST(Differential, AHandlerOverABlockedReceiveSleepsInItsOwnWait) {
  Pair p, q;
  connect_pair(&p);
  connect_pair(&q);
  g_io_fd = p.c;
  g_io_other = q.c;
  g_io_done = false;
  struct sigaction sa {
  }, old{};
  sa.sa_handler = send_then_wait;
  sa.sa_flags = SA_RESTART;
  ASSERT_EQ(sigaction(SIGUSR2, &sa, &old), 0);
  const pthread_t receiver = pthread_self();
  std::thread helper([&] {
    sigset_t usr2;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &usr2, nullptr);
    usleep(50000);  // the receiver asleep in recv by now
    pthread_kill(receiver, SIGUSR2);
    char h = 0;
    if (read_full(p.s, &h, 1) == 1 && h == 'h') {
      usleep(100000);
      send(q.s, "q", 1, 0);
    }
    for (int i = 0; i < 5000 && !g_io_done; i++) usleep(1000);
    send(p.s, "m", 1, 0);  // the interrupted receive's byte
  });
  char m = 0;
  const ssize_t r = recv(p.c, &m, 1, 0);
  helper.join();
  sigaction(SIGUSR2, &old, nullptr);
  EXPECT_EQ(r, 1);
  EXPECT_EQ(m, 'm');
  EXPECT_EQ(g_io_send.load(), 1);
  EXPECT_EQ(g_io_recv.load(), 1);
  // A spinning wait burns about its whole wall time; a sleeping one little.
  EXPECT_LT(g_io_cpu_ns.load(), g_io_wall_ns.load() / 2)
      << "the handler's receive took " << g_io_cpu_ns / 1000 << " us of CPU in "
      << g_io_wall_ns / 1000 << " us";
}

TEST(Differential, VforkChildClosingEverythingLeavesTheConnection) {
  Pair p;
  connect_pair(&p);
  const int s = p.s, c = p.c;
  const pid_t pid = vfork();
  if (pid == 0) close_all_and_exec(s, c);
  ASSERT_GT(pid, 0) << strerror(errno);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  char b[8];
  ASSERT_EQ(send(p.c, "ping", 4, MSG_NOSIGNAL), 4) << strerror(errno);
  ASSERT_EQ(read_full(p.s, b, 4), 4) << strerror(errno);
  EXPECT_EQ(memcmp(b, "ping", 4), 0);
  ASSERT_EQ(send(p.s, "pong", 4, MSG_NOSIGNAL), 4) << strerror(errno);
  ASSERT_EQ(read_full(p.c, b, 4), 4) << strerror(errno);
  EXPECT_EQ(memcmp(b, "pong", 4), 0);
}

// A fork while another thread duplicates and closes a connection: the
// child's own dup and close of it go through, whatever that thread was
// doing at the fork (a child stuck on a lock held at the fork dies of
// its alarm and fails the test).
TEST(Differential, ForkWhileAnotherThreadDuplicates) {
  Pair p;
  connect_pair(&p);
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    while (!stop) {
      int d = dup(p.c);
      if (d >= 0) close(d);
    }
  });
  int failed_children = 0;
  for (int i = 0; i < 200 && !failed_children; i++) {
    const pid_t pid = fork();
    if (pid == 0) {
      alarm(10);
      int d = dup(p.c);
      _exit(d >= 0 && close(d) == 0 ? 0 : 1);
    }
    ASSERT_GT(pid, 0) << strerror(errno);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed_children++;
  }
  stop = true;
  churn.join();
  EXPECT_EQ(failed_children, 0);
}

TEST(Differential, BatchCalls) {
  Pair p;
  connect_pair(&p);
  char a[] = "ab", b[] = "cd";
  iovec ia{a, 2}, ib{b, 2};
  mmsghdr out[2] = {};
  out[0].msg_hdr.msg_iov = &ia;
  out[0].msg_hdr.msg_iovlen = 1;
  out[1].msg_hdr.msg_iov = &ib;
  out[1].msg_hdr.msg_iovlen = 1;
  ASSERT_EQ(sendmmsg(p.c, out, 2, 0), 2);
  EXPECT_EQ(out[0].msg_len, 2u);
  EXPECT_EQ(out[1].msg_len, 2u);
  char got[4];
  iovec ig{got, 4};
  mmsghdr in[1] = {};
  in[0].msg_hdr.msg_iov = &ig;
  in[0].msg_hdr.msg_iovlen = 1;
  ASSERT_EQ(recvmmsg(p.s, in, 1, 0, nullptr), 1);
  ASSERT_GE(in[0].msg_len, 1u);
  size_t n = in[0].msg_len;
  if (n < 4) {
    ASSERT_EQ(read_full(p.s, got + n, 4 - n), static_cast<ssize_t>(4 - n));
  }
  EXPECT_EQ(memcmp(got, "abcd", 4), 0);
}

TEST(Differential, CloseRangeEndsTheConnection) {
  Pair p;
  connect_pair(&p);
  // (Under the preload the number may stay taken while the rsocket's
  // close lingers in the background: librspreload(7).)
  ASSERT_EQ(close_range(static_cast<unsigned>(p.c), static_cast<unsigned>(p.c), 0), 0);
  p.c = -1;
  char b[4];
  EXPECT_EQ(recv(p.s, b, sizeof b, 0), 0);  // the peer sees the end
}

// A close by syscall(SYS_close), as libuv (Node.js) closes: the
// connection ends, and whatever the process opens next at the number is
// that new socket.
TEST(Differential, RawCloseEndsTheConnectionAndFreesTheNumber) {
  Pair p;
  connect_pair(&p);
  const int number = p.c;
  ASSERT_EQ(syscall(SYS_close, p.c), 0);
  p.c = -1;
  timeval tv{10, 0};
  setsockopt(p.s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char b[4];
  ASSERT_EQ(recv(p.s, b, sizeof b, 0), 0) << strerror(errno);  // the peer sees the end
  close(p.s);
  p.s = -1;
  // Under the preload the number stays taken while the close lingers
  // in the background (librspreload(7)); the kernel's answer says when
  // it is free.
  for (int i = 0; i < 500 && syscall(SYS_fcntl, number, F_GETFD) >= 0; i++) usleep(10000);
  ASSERT_LT(syscall(SYS_fcntl, number, F_GETFD), 0) << "the number stayed taken";
  // Sockets of the program's own until one lands on the number: that
  // one is the new socket, nothing left of the connection.
  std::vector<int> spare;
  int u[2] = {-1, -1};
  while (spare.size() < 64) {
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, u), 0);
    if (u[0] == number || u[1] == number) break;
    spare.insert(spare.end(), u, u + 2);
  }
  for (int fd : spare) close(fd);
  ASSERT_TRUE(u[0] == number || u[1] == number);
  ASSERT_NO_FATAL_FAILURE(expect_link(u[0], u[1]));
  ASSERT_NO_FATAL_FAILURE(expect_link(u[1], u[0]));
  close(u[0]);
  close(u[1]);
}

// Bytes sent on `from` arrive at `to`, one round trip.
TEST(Differential, DupSharesTheConnectionUntilTheLastClose) {
  Pair p;
  connect_pair(&p);
  int d = dup(p.c);
  ASSERT_GE(d, 0) << strerror(errno);
  expect_link(d, p.s);
  ASSERT_EQ(close(p.c), 0);  // the original goes first: the dup still works
  p.c = -1;
  expect_link(d, p.s);
  expect_link(p.s, d);
  int hi = fcntl(d, F_DUPFD_CLOEXEC, 100);
  ASSERT_GE(hi, 100) << strerror(errno);
  ASSERT_EQ(close(d), 0);
  expect_link(hi, p.s);
  int t = open("/dev/null", O_RDONLY);
  ASSERT_GE(t, 0);
  ASSERT_EQ(dup2(hi, t), t);  // replaces /dev/null
  ASSERT_EQ(close(hi), 0);
  expect_link(t, p.s);
  char b[4];
  ASSERT_EQ(close(t), 0);  // the last: the peer sees the end
  EXPECT_EQ(recv(p.s, b, sizeof b, 0), 0);
}

TEST(Differential, ClosingADupKeepsTheOriginal) {
  Pair p;
  connect_pair(&p);
  int d = dup(p.s);
  ASSERT_GE(d, 0);
  ASSERT_EQ(close(d), 0);
  expect_link(p.c, p.s);
  expect_link(p.s, p.c);
  EXPECT_EQ(dup2(p.s, p.s), p.s);
  EXPECT_EQ(dup3(p.s, p.s, 0), -1);
  EXPECT_EQ(errno, EINVAL);
}

// The duplicate closed first, then the original: both closes succeed and
// the peer sees an orderly end (the preload once lost the connection's
// record at the first close and answered EBADF, the peer a reset).
TEST(Differential, DupClosedBeforeTheOriginal) {
  Pair p;
  connect_pair(&p);
  int d = dup(p.c);
  ASSERT_GE(d, 0) << strerror(errno);
  ASSERT_EQ(close(d), 0);
  expect_link(p.c, p.s);
  ASSERT_EQ(close(p.c), 0) << strerror(errno);
  p.c = -1;
  char b[4];
  EXPECT_EQ(recv(p.s, b, sizeof b, 0), 0) << strerror(errno);
}

// Connects a client to `port` and expects listener number `l` to accept
// it, bytes both ways.
void expect_accepts(int l, uint16_t port) {
  int c = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(c, 0);
  sockaddr_in a = loopback(port);
  ASSERT_EQ(connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
  pollfd pf{l, POLLIN, 0};
  EXPECT_EQ(poll(&pf, 1, 10000), 1);
  int s = accept(l, nullptr, nullptr);
  EXPECT_GE(s, 0) << strerror(errno);
  if (s >= 0) {
    expect_link(c, s);
    expect_link(s, c);
    close(s);
  }
  close(c);
}

// Every duplicate of a listening socket is the listener (dup, F_DUPFD,
// dup3), each with its own close-on-exec flag and the one O_NONBLOCK of
// the open file; it listens until its last number is closed.
TEST(Differential, DupOfAListenerSharesIt) {
  uint16_t port = 0;
  int l = make_listener(0, &port);
  ASSERT_GE(l, 0) << strerror(errno);
  int d = dup(l);
  ASSERT_GE(d, 0) << strerror(errno);
  EXPECT_EQ(fcntl(d, F_GETFD), 0);
  int h = fcntl(l, F_DUPFD_CLOEXEC, 100);
  ASSERT_GE(h, 100) << strerror(errno);
  EXPECT_EQ(fcntl(h, F_GETFD), FD_CLOEXEC);
  int t = open("/dev/null", O_RDONLY);
  ASSERT_GE(t, 0);
  ASSERT_EQ(dup3(l, t, O_CLOEXEC), t) << strerror(errno);  // replaces /dev/null
  EXPECT_EQ(fcntl(t, F_GETFD), FD_CLOEXEC);
  ASSERT_EQ(close(l), 0);  // the original goes first
  for (int n : {d, h, t}) expect_accepts(n, port);
  ASSERT_EQ(fcntl(d, F_SETFL, O_NONBLOCK), 0);
  EXPECT_TRUE(fcntl(t, F_GETFL) & O_NONBLOCK);
  EXPECT_EQ(accept(t, nullptr, nullptr), -1);
  EXPECT_EQ(errno, EAGAIN);
  ASSERT_EQ(fcntl(h, F_SETFL, 0), 0);
  ASSERT_EQ(close(d), 0);
  ASSERT_EQ(close(h), 0);
  expect_accepts(t, port);
  ASSERT_EQ(close(t), 0);  // the last: nothing listens there now
  int c = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(c, 0);
  sockaddr_in a = loopback(port);
  EXPECT_EQ(connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), -1);
  EXPECT_EQ(errno, ECONNREFUSED);
  close(c);
}

// A blocking accept on a duplicate wakes for a client, whichever number
// the program keeps.
TEST(Differential, BlockingAcceptOnAListenersDuplicate) {
  uint16_t port = 0;
  int l = make_listener(0, &port);
  ASSERT_GE(l, 0) << strerror(errno);
  int d = dup2(l, 60);
  ASSERT_EQ(d, 60) << strerror(errno);
  ASSERT_EQ(close(l), 0);
  std::atomic<int> s{-2};
  std::thread acceptor([&] { s = accept(d, nullptr, nullptr); });
  usleep(20000);
  int c = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = loopback(port);
  EXPECT_EQ(connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
  acceptor.join();
  ASSERT_GE(s.load(), 0) << strerror(errno);
  expect_link(c, s);
  expect_link(s, c);
  for (int fd : {s.load(), c, d}) close(fd);
}

TEST(Differential, SecondCloseIsEbadf) {
  Pair p;
  connect_pair(&p);
  ASSERT_EQ(close(p.c), 0);
  EXPECT_EQ(close(p.c), -1);  // (under the preload the number may still be held)
  EXPECT_EQ(errno, EBADF);
  p.c = -1;
}

// Connections close in one thread while another takes and closes
// numbers: a number the kernel hands out is the program's at once, never
// refused (EBADF, EBUSY) as one still in use for a closing connection.
TEST(Differential, FreedNumbersAreFreeAtOnce) {
  std::atomic<bool> stop{false};
  std::atomic<int> refused{0}, taken{0};
  std::thread taker([&] {
    const int null_fd = open("/dev/null", O_RDONLY);
    while (!stop) {
      int fd = open("/dev/null", O_RDONLY);
      if (fd < 0) continue;
      taken++;
      if (dup2(null_fd, fd) != fd) refused++;
      if (close(fd) != 0) refused++;
    }
    close(null_fd);
  });
  for (int i = 0; i < 300 && !refused; i++) {
    Pair p;
    connect_pair(&p);
  }
  while (!taken) usleep(1000);
  stop = true;
  taker.join();
  EXPECT_GT(taken.load(), 0);
  EXPECT_EQ(refused.load(), 0);
}

TEST(Differential, SendfileOffsets) {
  Pair p;
  connect_pair(&p);
  char path[] = "/tmp/ss-diff-XXXXXX";
  int f = mkstemp(path);
  ASSERT_GE(f, 0);
  unlink(path);
  ASSERT_EQ(write(f, "0123456789", 10), 10);
  ASSERT_EQ(lseek(f, 2, SEEK_SET), 2);
  off_t off = 5;
  ASSERT_EQ(sendfile(p.c, f, &off, 3), 3);  // from *off; the position stays
  EXPECT_EQ(off, 8);
  EXPECT_EQ(lseek(f, 0, SEEK_CUR), 2);
  ASSERT_EQ(sendfile(p.c, f, nullptr, 4), 4);  // from the position, which moves
  EXPECT_EQ(lseek(f, 0, SEEK_CUR), 6);
  char b[7];
  ASSERT_EQ(read_full(p.s, b, 7), 7);
  EXPECT_EQ(memcmp(b, "5672345", 7), 0);
  close(f);
}

// Linux does not send from a socket or a pipe: ESPIPE with an offset,
// EINVAL without, whatever the destination, and the bytes stay unread.
TEST(Differential, SendfileFromAConnectionIsRefused) {
  Pair p;
  connect_pair(&p);
  Pair q;
  connect_pair(&q);
  ASSERT_EQ(send(p.c, "abc", 3, 0), 3);
  char path[] = "/tmp/ss-diff-XXXXXX";
  int f = mkstemp(path);
  ASSERT_GE(f, 0);
  unlink(path);
  off_t off = 0;
  for (int out : {q.c, f, p.l}) {
    EXPECT_EQ(sendfile(out, p.s, nullptr, 3), -1) << "out " << out;
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(sendfile(out, p.s, &off, 3), -1) << "out " << out;
    EXPECT_EQ(errno, ESPIPE);
  }
  EXPECT_EQ(sendfile(q.c, p.l, nullptr, 3), -1);  // a listener as the source
  EXPECT_EQ(errno, EINVAL);
  int pp[2];
  ASSERT_EQ(pipe(pp), 0);  // a pipe as the source
  ASSERT_EQ(write(pp[1], "d", 1), 1);
  EXPECT_EQ(sendfile(q.c, pp[0], nullptr, 1), -1);
  EXPECT_EQ(errno, EINVAL);
  char d;
  EXPECT_EQ(read(pp[0], &d, 1), 1);
  close(pp[0]);
  close(pp[1]);
  EXPECT_EQ(off, 0);
  char b[3];
  ASSERT_EQ(read_full(p.s, b, 3), 3);
  EXPECT_EQ(memcmp(b, "abc", 3), 0);
  close(f);
}

std::atomic<int> g_sigpipes{0};

TEST(Differential, SendAfterPeerClosedRaisesSigpipe) {
  struct sigaction sa {
  }, old{};
  sa.sa_handler = [](int) { g_sigpipes++; };
  ASSERT_EQ(sigaction(SIGPIPE, &sa, &old), 0);
  Pair p;
  connect_pair(&p);
  ASSERT_EQ(close(p.s), 0);
  p.s = -1;
  char b[4];
  ASSERT_EQ(recv(p.c, b, sizeof b, 0), 0);  // the end has arrived
  ssize_t n = 0;
  for (int i = 0; i < 1000 && n >= 0; i++) n = send(p.c, "x", 1, 0);
  EXPECT_EQ(n, -1);
  EXPECT_EQ(errno, EPIPE);
  EXPECT_GT(g_sigpipes.load(), 0);
  const int before = g_sigpipes.load();
  EXPECT_EQ(send(p.c, "x", 1, MSG_NOSIGNAL), -1);
  EXPECT_EQ(errno, EPIPE);
  EXPECT_EQ(g_sigpipes.load(), before);
  sigaction(SIGPIPE, &old, nullptr);
}

TEST(Differential, ClosefromEndsTheConnection) {
  Pair p;
  connect_pair(&p);
  // The connection's only descriptor high up, where closefrom takes it
  // and nothing of the test program's.
  int c2 = fcntl(p.c, F_DUPFD, 1000);
  ASSERT_GE(c2, 1000);
  ASSERT_EQ(close(p.c), 0);
  p.c = -1;
  closefrom(1000);
  char b[4];
  EXPECT_EQ(recv(p.s, b, sizeof b, 0), 0);  // the last descriptor went: the end
}

TEST(Differential, StdioOverAConnection) {
  Pair p;
  connect_pair(&p);
  FILE* out = fdopen(p.c, "w");
  ASSERT_NE(out, nullptr);
  p.c = -1;  // the stream owns it now
  FILE* in = fdopen(p.s, "r");
  ASSERT_NE(in, nullptr);
  p.s = -1;
  ASSERT_GT(fprintf(out, "line %d\n", 42), 0);
  ASSERT_EQ(fflush(out), 0);
  char line[32] = {};
  ASSERT_NE(fgets(line, sizeof line, in), nullptr);
  EXPECT_STREQ(line, "line 42\n");
  ASSERT_EQ(fclose(out), 0);  // the end reaches the reader
  EXPECT_EQ(fgets(line, sizeof line, in), nullptr);
  EXPECT_TRUE(feof(in));
  fclose(in);
}

TEST(Differential, RefusedWithNoListener) {
  uint16_t port;
  int l = make_listener(0, &port);
  ASSERT_GE(l, 0);
  close(l);  // the port is free now: nobody listens
  int c = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = loopback(port);
  EXPECT_EQ(connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), -1);
  EXPECT_EQ(errno, ECONNREFUSED);
  close(c);
}

TEST(Differential, UdpUntouched) {
  int a = socket(AF_INET, SOCK_DGRAM, 0), b = socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(a, 0);
  sockaddr_in addr = loopback(0);
  ASSERT_EQ(bind(b, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  getsockname(b, reinterpret_cast<sockaddr*>(&addr), &len);
  ASSERT_EQ(sendto(a, "dgram", 5, 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 5);
  char buf[8];
  EXPECT_EQ(recvfrom(b, buf, sizeof buf, 0, nullptr, nullptr), 5);
  close(a);
  close(b);
}

}  // namespace

namespace differential {
namespace {

// A connection is a socket: fstat says so; preadv/pwritev (and
// preadv2/pwritev2 with an offset) are ESPIPE; preadv2/pwritev2 at offset
// -1 are readv/writev, RWF_NOWAIT without blocking.
TEST(DifferentialVectored, FstatAndPositionedCalls) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(&p));
  struct stat st {};
  ASSERT_EQ(fstat(p.c, &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  char a[3] = {'a', 'b', 'c'}, b[4] = {};
  iovec out{a, sizeof a}, in{b, sizeof b};
  EXPECT_EQ(pwritev(p.c, &out, 1, 0), -1);
  EXPECT_EQ(errno, ESPIPE);
  EXPECT_EQ(preadv(p.s, &in, 1, 0), -1);
  EXPECT_EQ(errno, ESPIPE);
  EXPECT_EQ(pwritev2(p.c, &out, 1, 5, 0), -1);
  EXPECT_EQ(errno, ESPIPE);
  EXPECT_EQ(preadv2(p.s, &in, 1, -1, RWF_NOWAIT), -1);  // nothing sent yet
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(pwritev2(p.c, &out, 1, -1, 0), 3);
  EXPECT_EQ(preadv2(p.s, &in, 1, -1, 0), 3);
  EXPECT_EQ(memcmp(a, b, 3), 0);
}

}  // namespace
}  // namespace differential

namespace differential {
namespace {

// Waits for fork child `pid`, which must exit with 0. A child stuck in a
// fork handler (before any line of its own runs) is killed after 10 s and
// fails the test.
void expect_child_exits_0(pid_t pid) {
  int status = 0;
  pid_t w = 0;
  for (int i = 0; i < 1000 && (w = waitpid(pid, &status, WNOHANG)) == 0; i++) usleep(10000);
  if (w == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    ADD_FAILURE() << "the child never got out of fork";
  } else {
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "child: " << (WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status));
  }
}

// A fork while another thread sleeps in a receive on a connection (its
// wake-up descriptor exists): the child's fork handlers finish and the
// child runs.
TEST(DifferentialFork, ForkWhileAThreadSleepsInAReceive) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(&p));
  // The first number closed while a duplicate lives (the preload holds
  // such a number: its close path then takes the duplicates' lock).
  const int keep = dup(p.s);
  ASSERT_GE(keep, 0);
  ASSERT_EQ(close(p.s), 0);
  p.s = keep;
  std::thread reader([&] {
    char b;
    recv(p.s, &b, 1, 0);
  });
  usleep(100000);  // asleep by now
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int d = dup(p.c);
    _exit(d >= 0 && close(d) == 0 ? 0 : 1);
  }
  expect_child_exits_0(pid);
  ASSERT_EQ(send(p.c, "x", 1, MSG_NOSIGNAL), 1);
  reader.join();
}

// A close while another thread is in recv on the connection, then a
// fork: in the child the descriptor is closed (Linux freed the number at
// the close; under the preload the close waits for the recv, which the
// child does not have, so the fork finishes it there), and its number,
// given to a new descriptor, is an ordinary one: closing that works.
TEST(DifferentialFork, CloseUnderABlockedRecvIsDoneInTheChild) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(&p));
  std::atomic<pid_t> tid{0};
  const int s = p.s;
  std::thread reader([&] {
    tid = static_cast<pid_t>(syscall(SYS_gettid));
    char b;
    recv(s, &b, 1, 0);
  });
  while (!tid) usleep(1000);
  ASSERT_TRUE(differential::wait_until_in(tid, {SYS_recvfrom}, 10000));
  ASSERT_EQ(close(p.s), 0);
  p.s = -1;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(10);
    if (fcntl(s, F_GETFD) != -1 || errno != EBADF) _exit(2);
    const int again = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, s);  // the lowest free from s: s
    if (again != s) _exit(4);
    if (close(again) != 0) _exit(5);
    _exit(fcntl(s, F_GETFD) == -1 && errno == EBADF ? 0 : 6);
  }
  expect_child_exits_0(pid);
  ASSERT_EQ(send(p.c, "x", 1, MSG_NOSIGNAL), 1);
  reader.join();
}

}  // namespace
}  // namespace differential
