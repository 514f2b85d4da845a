// What the differential suite's tests share: a listener on loopback, a
// connected pair through it, a read of exactly n bytes, a signal pending
// for a wait's mask to let in.
#pragma once
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <set>

namespace differential {

inline sockaddr_in loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// A listening socket on 127.0.0.1 and an ephemeral port.
inline int make_listener(int flags = 0, uint16_t* port = nullptr) {
  if (port) *port = 0;
  int l = socket(AF_INET, SOCK_STREAM | flags, 0);
  if (l < 0) return -1;
  int one = 1;
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a = loopback(0);
  if (bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) || listen(l, 16)) return -1;
  socklen_t len = sizeof a;
  getsockname(l, reinterpret_cast<sockaddr*>(&a), &len);
  if (port) *port = ntohs(a.sin_port);
  return l;
}

struct Pair {
  int l = -1, c = -1, s = -1;
  uint16_t port = 0;
  ~Pair() {
    for (int fd : {c, s, l})
      if (fd >= 0) close(fd);
  }
};

// A connected pair through a listener: c connected, s accepted.
inline void connect_pair(Pair* p) {
  p->l = make_listener(0, &p->port);
  ASSERT_GE(p->l, 0) << strerror(errno);
  p->c = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(p->c, 0);
  sockaddr_in a = loopback(p->port);
  ASSERT_EQ(connect(p->c, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
  p->s = accept(p->l, nullptr, nullptr);
  ASSERT_GE(p->s, 0) << strerror(errno);
}

inline ssize_t read_full(int fd, char* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = recv(fd, buf + got, n - got, 0);
    if (r <= 0) return r;
    got += static_cast<size_t>(r);
  }
  return static_cast<ssize_t>(got);
}

// Four bytes from `from` arrive at `to` intact.
inline void expect_link(int from, int to) {
  char b[4];
  ASSERT_EQ(send(from, "ping", 4, 0), 4);
  ASSERT_EQ(read_full(to, b, 4), 4);
  EXPECT_EQ(memcmp(b, "ping", 4), 0);
}

// Whether thread `tid` sleeps in one of `calls` (the kernel's own call)
// or in the poll a preloaded call sleeps in: its system call, read every
// millisecond for at most `ms`.
inline bool wait_until_in(pid_t tid, std::set<long> calls, int ms) {
  calls.insert(SYS_ppoll);
#ifdef SYS_poll
  calls.insert(SYS_poll);
#endif
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/syscall", static_cast<int>(tid));
  for (int i = 0; i < ms; i++) {
    FILE* f = fopen(path, "r");
    long nr = -1;
    if (f) {
      if (fscanf(f, "%ld", &nr) != 1) nr = -1;
      fclose(f);
    }
    if (calls.count(nr)) return true;
    usleep(1000);
  }
  return false;
}

// SIGUSR1 blocked and pending on this thread (a handler that counts its
// runs installed), for a wait whose mask, `during`, lets it in: the
// kernel's ppoll, pselect and epoll_pwait swap the mask in with the wait
// as one step, so the wait fails with EINTR at once.
class PendingSignal {
 public:
  PendingSignal() {
    struct sigaction sa {};
    sa.sa_handler = [](int) { ran() = ran() + 1; };
    ran() = 0;
    sigaction(SIGUSR1, &sa, &old_action_);
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &block, &before_);
    during = before_;
    sigdelset(&during, SIGUSR1);
    pthread_kill(pthread_self(), SIGUSR1);
  }
  ~PendingSignal() {
    pthread_sigmask(SIG_SETMASK, &before_, nullptr);
    sigaction(SIGUSR1, &old_action_, nullptr);
  }
  PendingSignal(const PendingSignal&) = delete;
  PendingSignal& operator=(const PendingSignal&) = delete;
  sigset_t during;
  // How many times the handler ran since construction.
  static int handled() { return ran(); }

 private:
  static volatile sig_atomic_t& ran() {
    static volatile sig_atomic_t count = 0;
    return count;
  }
  struct sigaction old_action_ {};
  sigset_t before_;
};

}  // namespace differential
