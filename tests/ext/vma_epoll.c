/* epoll over an offloaded UDP socket, a pipe and an eventfd, for
 * vma_netns.sh.
 * server ADDR PORT PEER-ADDR PEER-PORT: (under LD_PRELOAD=libvma.so)
 *   binds ADDR:PORT, prints "ready PID", then drives the peer with
 *   commands ("send N DELAY-MS": N datagrams after DELAY-MS) and checks
 *   what one epoll set reports: an idle wait that sleeps until the first
 *   datagram (flat and nested), level-triggered (reported again while
 *   unread), the pipe and the eventfd beside the socket, EPOLLET (once per
 *   datagram, not again while unread; also for datagrams from this host,
 *   which come through the kernel socket, the wait between them asleep;
 *   in two sets waited on by two threads, an edge in each, from the
 *   kernel path and from the rings), a wait on a socket from before its
 *   bind asleep until the bind, then until its first datagram on the rings,
 *   EPOLLONESHOT (once, then only after EPOLL_CTL_MOD), a set nested in
 *   the set, the set's duplicate (the same set); then a blocking receive
 *   that sleeps until its datagram; a second socket in a kernel epoll set
 *   the preload does not know (the system call instruction's), handed
 *   back to the kernel.
 *   Every datagram of the first socket is read and checked. Prints
 *   "kernel path K" (the datagrams sent to it by the kernel path) and
 *   "received N sent M" (the datagrams and commands), then waits for a
 *   line on stdin (its vmastat block stays readable). Exit 0 if every
 *   check passed; each failure is printed.
 * peer PORT: (kernel) serves the commands until "end". */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "unseen_syscall.h"

static int fails;
static int received, sent;
static int others; /* the peer's datagrams to other sockets (its numbers are shared) */
static int kernel_sent; /* datagrams to the socket by the kernel path */
static struct sockaddr_in peer;
static int sock;

#define CHECK(cond, ...)                  \
  do {                                    \
    if (!(cond)) {                        \
      fprintf(stderr, "FAIL: " __VA_ARGS__); \
      fprintf(stderr, "\n");              \
      fails++;                            \
    }                                     \
  } while (0)

static struct sockaddr_in addr_of(const char* ip, int port) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)port);
  if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
    fprintf(stderr, "bad address %s\n", ip);
    exit(2);
  }
  return a;
}

static double now_ms(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int peer_main(int port) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in a = addr_of("0.0.0.0", port);
  if (fd < 0 || bind(fd, (struct sockaddr*)&a, sizeof a) < 0) {
    perror("peer bind");
    return 1;
  }
  for (int seq = 0;;) {
    char cmd[64];
    struct sockaddr_in from;
    socklen_t len = sizeof from;
    const ssize_t n = recvfrom(fd, cmd, sizeof cmd - 1, 0, (struct sockaddr*)&from, &len);
    if (n < 0) return 1;
    cmd[n] = 0;
    int count, delay;
    if (strcmp(cmd, "end") == 0) return 0;
    if (sscanf(cmd, "send %d %d", &count, &delay) != 2) continue;
    usleep((useconds_t)delay * 1000);
    for (int i = 0; i < count; i++, seq++) {
      char d[32];
      const int k = snprintf(d, sizeof d, "datagram %d", seq);
      sendto(fd, d, (size_t)k, 0, (struct sockaddr*)&from, len);
    }
  }
}

static void command(int count, int delay_ms) {
  char c[64];
  const int n = snprintf(c, sizeof c, "send %d %d", count, delay_ms);
  if (sendto(sock, c, (size_t)n, 0, (struct sockaddr*)&peer, sizeof peer) != n)
    CHECK(0, "command: sendto: %s", strerror(errno));
  sent++;
}

/* Reads one datagram (`flags` MSG_DONTWAIT: 1, or 0 when none waits). */
static int read_one_flags(int flags) {
  char d[64];
  const ssize_t n = recv(sock, d, sizeof d - 1, flags);
  if (n < 0) return 0;
  d[n] = 0;
  char want[32];
  snprintf(want, sizeof want, "datagram %d", received + others);
  CHECK(strcmp(d, want) == 0, "datagram %d: got \"%s\"", received, d);
  received++;
  return 1;
}

static int read_one(void) { return read_one_flags(MSG_DONTWAIT); }

/* One epoll_wait: whether `data` was reported (with EPOLLIN), the count in *n. */
static int reported(int ep, int timeout, uint64_t data, int* n) {
  struct epoll_event ev[8];
  *n = epoll_wait(ep, ev, 8, timeout);
  CHECK(*n >= 0, "epoll_wait: %s", strerror(errno));
  for (int i = 0; i < *n; i++)
    if (ev[i].data.u64 == data) return (ev[i].events & EPOLLIN) != 0;
  return 0;
}

/* An idle wait: the peer sends one datagram after 1.5 s; the wait ends
 * with it, having slept (CPU time under a quarter of the wall time). */
static void idle_wait(int ep, uint64_t data, const char* what) {
  int n;
  command(1, 1500);
  const double w0 = now_ms(CLOCK_MONOTONIC), c0 = now_ms(CLOCK_PROCESS_CPUTIME_ID);
  const int got = reported(ep, 20000, data, &n);
  const double wall = now_ms(CLOCK_MONOTONIC) - w0, cpu = now_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
  printf("idle %s: wall %.0f ms, cpu %.0f ms\n", what, wall, cpu);
  CHECK(got, "idle %s: the datagram was not reported (%d events)", what, n);
  CHECK(cpu < wall / 4, "idle %s: cpu %.0f ms of %.0f ms: it did not sleep", what, cpu, wall);
}

/* One datagram by raw socket `k` (one the preload does not know), counted. */
static int kernel_send(int k, const char* d, size_t len, const struct sockaddr_in* a) {
  if (syscall(SYS_sendto, k, d, len, 0, a, sizeof *a) != (long)len) return 0;
  kernel_sent++;
  return 1;
}

/* A thread's epoll set holding the socket edge-triggered: the edges it
 * saw, and whether a wait ran out (an edge missed). */
struct edge_waiter {
  int ep;
  int edges;
  int quiet;
  pthread_t thread;
};
enum { kEdgeRounds = 100 };

static void* wait_edges(void* arg) {
  struct edge_waiter* w = arg;
  for (int i = 0; i < kEdgeRounds; i++) {
    struct epoll_event e;
    if (epoll_wait(w->ep, &e, 1, 5000) != 1) {
      __atomic_store_n(&w->quiet, 1, __ATOMIC_SEQ_CST);
      return NULL;
    }
    __atomic_add_fetch(&w->edges, 1, __ATOMIC_SEQ_CST);
  }
  return NULL;
}

/* The socket edge-triggered in two sets, each waited on by its own
 * thread: each datagram is an edge in both, whichever looks first. The
 * datagrams come from raw socket `k` (the kernel path, whose arrivals
 * both sets count), or with k < 0 from the peer (the rings). */
static void edges_in_two_sets(int k, const struct sockaddr_in* a) {
  const char* path = k >= 0 ? "kernel path" : "rings";
  struct edge_waiter w[2];
  memset(w, 0, sizeof w);
  for (int i = 0; i < 2; i++) {
    struct epoll_event ev = {EPOLLIN | EPOLLET, {.u64 = 9}};
    w[i].ep = epoll_create1(EPOLL_CLOEXEC);
    CHECK(w[i].ep >= 0 && epoll_ctl(w[i].ep, EPOLL_CTL_ADD, sock, &ev) == 0,
          "two sets: set %d: %s", i, strerror(errno));
    CHECK(pthread_create(&w[i].thread, NULL, wait_edges, &w[i]) == 0, "two sets: thread");
  }
  unsigned seed = 1;
  const char kd[] = "edge";
  for (int n = 0; n < kEdgeRounds; n++) {
    usleep(rand_r(&seed) % 300); /* the arrival at any point of the waiters' loops */
    if (k >= 0)
      CHECK(kernel_send(k, kd, sizeof kd - 1, a), "two sets: sendto: %s", strerror(errno));
    else
      command(1, 0);
    while (__atomic_load_n(&w[0].edges, __ATOMIC_SEQ_CST) <= n ||
           __atomic_load_n(&w[1].edges, __ATOMIC_SEQ_CST) <= n) {
      if (__atomic_load_n(&w[0].quiet, __ATOMIC_SEQ_CST) ||
          __atomic_load_n(&w[1].quiet, __ATOMIC_SEQ_CST))
        break;
      usleep(50);
    }
    char kb[16];
    if (k >= 0)
      CHECK(recv(sock, kb, sizeof kb, MSG_DONTWAIT) == sizeof kd - 1, "two sets: datagram %d", n);
    else
      CHECK(read_one(), "two sets, rings: datagram %d not there", n);
    if (w[0].quiet || w[1].quiet) break;
  }
  for (int i = 0; i < 2; i++) {
    pthread_join(w[i].thread, NULL);
    close(w[i].ep);
  }
  printf("EPOLLET in two sets, %s: %d and %d edges of %d datagrams\n", path, w[0].edges,
         w[1].edges, kEdgeRounds);
  CHECK(!w[0].quiet && !w[1].quiet && w[0].edges == kEdgeRounds && w[1].edges == kEdgeRounds,
        "EPOLLET in two sets, %s: an edge missed (%d and %d of %d)", path, w[0].edges, w[1].edges,
        kEdgeRounds);
}

struct set_wait {
  int ep;
  int got;
  long sleeps; /* the waiting thread's voluntary context switches in the wait */
};

static long voluntary_switches(void) {
  struct rusage u;
  return getrusage(RUSAGE_THREAD, &u) == 0 ? u.ru_nvcsw : -1;
}

static void* wait_in_set(void* arg) {
  struct set_wait* w = arg;
  struct epoll_event e;
  const long before = voluntary_switches();
  w->got = epoll_wait(w->ep, &e, 1, 10000);
  w->sleeps = voluntary_switches() - before;
  return NULL;
}

static void before_bind(const char* ip, int port) {
  struct set_wait w = {epoll_create1(EPOLL_CLOEXEC), -1, -1};
  const int s = socket(AF_INET, SOCK_DGRAM, 0);
  struct epoll_event ev = {EPOLLIN, {.u64 = 10}};
  CHECK(w.ep >= 0 && s >= 0 && epoll_ctl(w.ep, EPOLL_CTL_ADD, s, &ev) == 0,
        "before bind: set: %s", strerror(errno));
  pthread_t t;
  CHECK(pthread_create(&t, NULL, wait_in_set, &w) == 0, "before bind: thread");
  usleep(500000); /* past the wait's busy phase (VMA_SELECT_POLL): asleep */
  struct sockaddr_in a = addr_of(ip, port);
  CHECK(bind(s, (struct sockaddr*)&a, sizeof a) == 0, "before bind: bind: %s", strerror(errno));
  const char one[] = "send 1 0";
  CHECK(sendto(s, one, sizeof one - 1, 0, (struct sockaddr*)&peer, sizeof peer) ==
            (ssize_t)sizeof one - 1, "before bind: command: %s", strerror(errno));
  pthread_join(t, NULL);
  char d[64];
  const ssize_t got = recv(s, d, sizeof d, MSG_DONTWAIT);
  others++;
  printf("a wait from before bind: %d event(s), then %zd bytes, %ld sleeps\n", w.got, got,
         w.sleeps);
  CHECK(w.got == 1 && got > 0, "before bind: the datagram did not wake the wait (%d)", w.got);
  /* Asleep until the bind, then until the datagram: a few sleeps, not one
   * per slice of a bounded sleep (20 per 400 ms at 20 ms). */
  CHECK(w.sleeps >= 0 && w.sleeps <= 8, "before bind: the wait slept %ld times", w.sleeps);
  close(s);
  close(w.ep);
}

static int server_main(const char* ip, int port, const char* peer_ip, int peer_port) {
  sock = socket(AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in a = addr_of(ip, port);
  if (sock < 0 || bind(sock, (struct sockaddr*)&a, sizeof a) < 0) {
    perror("bind");
    return 1;
  }
  peer = addr_of(peer_ip, peer_port);
  int p[2];
  const int efd = eventfd(0, EFD_NONBLOCK);
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  if (pipe(p) < 0 || efd < 0 || ep < 0) {
    perror("pipe/eventfd/epoll_create1");
    return 1;
  }
  struct epoll_event ev = {EPOLLIN, {.u64 = 1}};
  int n;
  CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, sock, &ev) == 0, "add socket: %s", strerror(errno));
  ev.data.u64 = 2;
  CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) == 0, "add pipe: %s", strerror(errno));
  ev.data.u64 = 3;
  CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) == 0, "add eventfd: %s", strerror(errno));
  CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, sock, &ev) < 0 && errno == EEXIST, "second add: not EEXIST");
  printf("ready %d\n", (int)getpid());
  fflush(stdout);

  /* Idle, then level-triggered: reported again while unread. */
  idle_wait(ep, 1, "flat set");
  CHECK(reported(ep, 0, 1, &n), "level: an unread datagram not reported again");
  CHECK(read_one(), "level: no datagram to read");
  CHECK(!reported(ep, 0, 1, &n) && n == 0, "level: reported after it was read (%d events)", n);

  /* The pipe and the eventfd beside it. */
  uint64_t one = 1;
  CHECK(write(p[1], "x", 1) == 1 && write(efd, &one, sizeof one) == sizeof one, "pipe/eventfd write");
  struct epoll_event evs[8];
  n = epoll_wait(ep, evs, 8, 1000);
  int saw = 0;
  for (int i = 0; i < n; i++) saw |= 1 << evs[i].data.u64;
  CHECK(n == 2 && saw == (1 << 2 | 1 << 3), "pipe and eventfd: %d events, mask %#x", n, saw);
  char c;
  CHECK(read(p[0], &c, 1) == 1 && read(efd, &one, sizeof one) == sizeof one, "pipe/eventfd read");
  CHECK(epoll_wait(ep, evs, 8, 0) == 0, "pipe and eventfd: reported after they were read");

  /* EPOLLET: one report per datagram, none while it stays unread. */
  ev.events = EPOLLIN | EPOLLET;
  ev.data.u64 = 1;
  CHECK(epoll_ctl(ep, EPOLL_CTL_MOD, sock, &ev) == 0, "mod EPOLLET: %s", strerror(errno));
  command(1, 0);
  CHECK(reported(ep, 5000, 1, &n), "EPOLLET: the first datagram not reported");
  CHECK(!reported(ep, 300, 1, &n), "EPOLLET: reported again without a new datagram");
  command(1, 0);
  CHECK(reported(ep, 5000, 1, &n), "EPOLLET: the second datagram not reported");
  CHECK(read_one() && read_one(), "EPOLLET: two datagrams not there");
  CHECK(!read_one(), "EPOLLET: a third datagram");

  /* EPOLLET on the kernel path: a datagram from this host comes through
   * the socket's kernel twin (sent by raw syscalls: a socket the preload
   * does not know). Each one is an edge, read or not, and the wait in
   * between sleeps while the first stays unread. */
  const int k = (int)syscall(SYS_socket, AF_INET, SOCK_DGRAM, 0);
  const char kd[] = "kernel";
  CHECK(k >= 0 && kernel_send(k, kd, sizeof kd - 1, &a),
        "EPOLLET, kernel path: sendto: %s", strerror(errno));
  CHECK(reported(ep, 5000, 1, &n), "EPOLLET, kernel path: the first datagram not reported");
  {
    const double w0 = now_ms(CLOCK_MONOTONIC), c0 = now_ms(CLOCK_PROCESS_CPUTIME_ID);
    CHECK(!reported(ep, 1000, 1, &n), "EPOLLET, kernel path: reported again without a new datagram");
    const double wall = now_ms(CLOCK_MONOTONIC) - w0, cpu = now_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
    printf("idle EPOLLET over an unread datagram: wall %.0f ms, cpu %.0f ms\n", wall, cpu);
    CHECK(cpu < wall / 4, "EPOLLET, kernel path: cpu %.0f ms of %.0f ms: it did not sleep", cpu,
          wall);
  }
  CHECK(kernel_send(k, kd, sizeof kd - 1, &a),
        "EPOLLET, kernel path: second sendto: %s", strerror(errno));
  CHECK(reported(ep, 5000, 1, &n), "EPOLLET, kernel path: the second datagram not reported");
  for (int i = 0; i < 3; i++) {
    char kb[16];
    const ssize_t got = recv(sock, kb, sizeof kb, MSG_DONTWAIT);
    if (i < 2)
      CHECK(got == sizeof kd - 1 && memcmp(kb, kd, sizeof kd - 1) == 0,
            "EPOLLET, kernel path: datagram %d: %zd bytes (%s)", i, got,
            got < 0 ? strerror(errno) : "read");
    else
      CHECK(got < 0 && errno == EAGAIN, "EPOLLET, kernel path: a third datagram (%zd)", got);
  }
  edges_in_two_sets(k, &a);
  edges_in_two_sets(-1, NULL);
  close(k);

  /* EPOLLONESHOT: once, then only after EPOLL_CTL_MOD. */
  ev.events = EPOLLIN | EPOLLONESHOT;
  CHECK(epoll_ctl(ep, EPOLL_CTL_MOD, sock, &ev) == 0, "mod EPOLLONESHOT: %s", strerror(errno));
  command(1, 0);
  CHECK(reported(ep, 5000, 1, &n), "EPOLLONESHOT: not reported");
  CHECK(!reported(ep, 300, 1, &n), "EPOLLONESHOT: reported twice");
  CHECK(epoll_ctl(ep, EPOLL_CTL_MOD, sock, &ev) == 0, "re-arm EPOLLONESHOT: %s", strerror(errno));
  CHECK(reported(ep, 1000, 1, &n), "EPOLLONESHOT: not reported after the re-arm");
  CHECK(read_one(), "EPOLLONESHOT: no datagram to read");

  /* Nested: the socket in an inner set, the inner set in the outer one. */
  const int inner = epoll_create1(0);
  ev.events = EPOLLIN;
  ev.data.u64 = 1;
  CHECK(inner >= 0 && epoll_ctl(inner, EPOLL_CTL_ADD, sock, &ev) == 0, "inner add: %s",
        strerror(errno));
  CHECK(epoll_ctl(ep, EPOLL_CTL_DEL, sock, NULL) == 0, "del socket: %s", strerror(errno));
  ev.data.u64 = 4;
  CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, inner, &ev) == 0, "add inner set: %s", strerror(errno));
  ev.data.u64 = 5;
  CHECK(epoll_ctl(inner, EPOLL_CTL_ADD, ep, &ev) < 0 && errno == ELOOP, "a loop: not ELOOP");
  idle_wait(ep, 4, "nested set");
  CHECK(reported(inner, 0, 1, &n), "nested: the inner set does not report the socket");
  CHECK(read_one(), "nested: no datagram to read");
  CHECK(!reported(ep, 0, 4, &n), "nested: the inner set reported after the read");

  /* A duplicate of the set is the same set (closed, the set lives on). */
  const int twin = dup(ep);
  CHECK(twin >= 0, "dup of the set: %s", strerror(errno));
  command(1, 0);
  CHECK(reported(twin, 5000, 4, &n), "the set's duplicate does not report the inner set");
  CHECK(close(twin) == 0, "close of the duplicate: %s", strerror(errno));
  CHECK(reported(ep, 0, 4, &n), "the set lost its member with its duplicate");
  CHECK(read_one(), "duplicate: no datagram to read");

  /* A socket in a set before its bind, its thread asleep: bound
   * (offloaded), it asks the peer for a datagram, which comes on the
   * rings and must end that sleep (its sleeps on the kernel socket are
   * sliced, socket_record.cc, so it looks at the rings after the bind). */
  before_bind(ip, port + 2);

  /* A blocking receive sleeps on the rings too. */
  command(1, 1500);
  const double w0 = now_ms(CLOCK_MONOTONIC), c0 = now_ms(CLOCK_PROCESS_CPUTIME_ID);
  const int got = read_one_flags(0);
  const double wall = now_ms(CLOCK_MONOTONIC) - w0, cpu = now_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
  printf("idle blocking recv: wall %.0f ms, cpu %.0f ms\n", wall, cpu);
  CHECK(got, "blocking recv: no datagram");
  CHECK(cpu < wall / 4, "blocking recv: cpu %.0f ms of %.0f ms: it did not sleep", cpu, wall);

  /* A kernel epoll set the preload does not know (made by the system
   * call instruction): a second socket added there is handed back to the
   * kernel, and the kernel's epoll_wait sees its datagram. */
  const int raw = (int)unseen_syscall1(SYS_epoll_create1, EPOLL_CLOEXEC);
  const int sock2 = socket(AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in a2 = addr_of(ip, port + 1);
  CHECK(raw >= 0 && sock2 >= 0 && bind(sock2, (struct sockaddr*)&a2, sizeof a2) == 0,
        "raw set, second socket: %s", strerror(errno));
  ev.events = EPOLLIN;
  ev.data.u64 = 8;
  CHECK(epoll_ctl(raw, EPOLL_CTL_ADD, sock2, &ev) == 0, "raw set add: %s", strerror(errno));
  const char two[] = "send 1 0";
  CHECK(sendto(sock2, two, sizeof two - 1, 0, (struct sockaddr*)&peer, sizeof peer) ==
            (ssize_t)sizeof two - 1, "raw set: command: %s", strerror(errno));
  CHECK(reported(raw, 5000, 8, &n), "raw set: the handed-back socket's datagram not reported");
  char d2[64];
  CHECK(recv(sock2, d2, sizeof d2, MSG_DONTWAIT) > 0, "raw set: nothing to read");
  close(sock2);
  close(raw);

  const char end[] = "end";
  sendto(sock, end, 3, 0, (struct sockaddr*)&peer, sizeof peer);
  sent++;
  printf("kernel path %d\n", kernel_sent);
  printf("received %d sent %d\n", received, sent);
  fflush(stdout);
  char line[8];
  if (!fgets(line, sizeof line, stdin)) { /* the script closed the hold */
  }
  close(inner);
  close(ep);
  close(sock);
  return fails ? 1 : 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "peer") == 0) return peer_main(atoi(argv[2]));
  if (argc == 6 && strcmp(argv[1], "server") == 0)
    return server_main(argv[2], atoi(argv[3]), argv[4], atoi(argv[5]));
  fprintf(stderr, "usage: %s server ADDR PORT PEER-ADDR PEER-PORT | peer PORT\n", argv[0]);
  return 2;
}
