/* The socket calls vma_calls.sh checks, run the same way plain (the
 * kernel's answers) and under LD_PRELOAD=libvma.so (the rings').
 * peer PORT: (kernel, the other namespace) a dual-stack UDP socket on
 *   PORT (and TCP there: each connection echoed to its end); "burst N TAG" makes it send N datagrams "TAG i ..." (lengths
 *   burst_len(i)) back to the asker, "group N TAG GROUP PORT" the same to
 *   IPv4 group GROUP, port PORT, "quit" ends it, anything else comes back
 *   as it is.
 * mmsg ADDR PORT PEER PEERPORT: recvmmsg and sendmmsg on a UDP socket bound
 *   at ADDR:PORT, every rule of interpose/mmsg.h, data checked.
 * dup ADDR PORT PEER PEERPORT: dup, fcntl F_DUPFD(_CLOEXEC), dup2, dup3 and
 *   close_range of such a socket (PORT and PORT+1): every number receives
 *   the socket's datagrams until the last is closed, then the port is free.
 * fork ADDR PORT PEER PEERPORT: a child's inherited socket while the parent
 *   keeps its copy (a receive, a send whose replies the child receives,
 *   close, exit) and a new one; the parent's socket receiving after the
 *   child is gone (preloaded: on the rings again, the kernel socket read
 *   by the system call to tell); a child receiving on its inherited
 *   socket once the parent closed its copy.
 * fork-group ADDR PORT PEER PEERPORT: a socket bound to the IPv4 wildcard
 *   that joined a group on ADDR's interface; a fork child's inherited copy
 *   receives the group's datagrams the peer sends while the parent keeps
 *   its copy (preloaded: the parent lends the group's flow too), the
 *   parent none of them; the child gone, the parent's copy gets the
 *   group's datagrams again (preloaded: on the rings, the kernel socket
 *   read by the system call to tell).
 * fork-exit ADDR PORT PEER PEERPORT: a process P binds, receives, forks C
 *   and exits; C's inherited socket then receives.
 * chk ADDR PORT PEER PEERPORT: recv, recvfrom and read of a buffer whose
 *   size the compiler knows (built with _FORTIFY_SOURCE: glibc's __recv_chk,
 *   __recvfrom_chk and __read_chk).
 * vfork ADDR PORT PEER PEERPORT: a vfork child closes the socket and exits;
 *   the parent's socket still receives.
 * eintr ADDR PORT PEER PEERPORT: a blocking recv with nothing there, a
 *   SIGALRM handler running meanwhile: EINTR without SA_RESTART; with it,
 *   the recv goes on (the handler asks the peer for the datagram it then
 *   gets); with SA_RESTART and SO_RCVTIMEO set, EINTR (signal(7)).
 * muxintr ADDR PORT PEER PEERPORT: poll and epoll_wait (no timeout) on an
 *   idle socket, a SIGALRM handler with SA_RESTART meanwhile: EINTR.
 * handlerclose ADDR PORT PEER PEERPORT: a SIGALRM handler every 1 ms closes
 *   one of 64 bound sockets (PORT+1...) and binds and closes a new one
 *   while the main thread asks for and receives datagrams on PORT: every
 *   call succeeds, nothing hangs, every datagram arrives.
 * tcphandler ADDR PORT PEER PEERPORT: two TCP connections to the peer's
 *   echo (PEERPORT): a SIGALRM handler every 200 us sends a byte on one
 *   while the main thread echoes messages on the other; every handler send
 *   succeeds or (preloaded) fails with EAGAIN, never SIGPIPE, and every
 *   byte sent comes back.
 * tcpsame ADDR PORT PEER PEERPORT: as tcphandler, the handler sending on
 *   the connection the main thread echoes on (its bytes come back among
 *   the messages, counted apart).
 * duphandler ADDR PORT PEER PEERPORT: a SIGALRM handler every 100 us dups
 *   and closes a socket (PORT+1) while the main thread dups and closes
 *   another (PORT): every call succeeds, nothing hangs, both receive after.
 * skipos ADDR PORT PEER PEERPORT N: 8 polls, then 8 epoll_waits (timeout 0)
 *   of a readable socket and a readable pipe: the socket is reported every
 *   time, the pipe N times of 8 (the kernel: 8; libvma's
 *   VMA_SELECT_SKIP_OS=4: 2).
 * exits ADDR PORT PEER PEERPORT: 10 times, the program run anew (the same
 *   environment) as "exit1": two threads dup, close, ask and receive on
 *   a socket while the main thread returns from main; each run exits 0
 *   (no crash while exit destroys what those threads and the library's
 *   service threads still use).
 * Each check prints PASS/FAIL; the last line is "done: N failure(s)", the
 * exit status 0 when N is 0. */
#define _GNU_SOURCE /* recvmmsg, sendmmsg */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_addr.h"

static int failures;
static void check(int ok, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("%s: ", ok ? "PASS" : "FAIL");
  vprintf(fmt, ap);
  printf("\n");
  fflush(stdout);
  va_end(ap);
  if (!ok) failures++;
}

/* Datagram i of a burst: "TAG i" then a pattern of its own, burst_len(i) bytes. */
static size_t burst_len(int i) { return 24 + (size_t)(i * 173) % 1200; }
static size_t fill(char* p, const char* tag, int i) {
  const size_t n = burst_len(i);
  memset(p, 0, n);
  int h = snprintf(p, n, "%s %d", tag, i);
  for (size_t k = (size_t)h + 1; k < n; k++) p[k] = (char)('a' + (k * 7 + (size_t)i) % 26);
  return n;
}
/* Whether the first `got` bytes of p are datagram i of TAG. */
static int is_datagram(const char* p, size_t got, const char* tag, int i) {
  char want[2048];
  const size_t n = fill(want, tag, i);
  return got <= n && memcmp(p, want, got) == 0;
}

/* ---- peer ---- */
static int peer(unsigned short port) {
  int fd = socket(AF_INET6, SOCK_DGRAM, 0);
  int off = 0;
  setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
  struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
  if (fd < 0 || bind(fd, (struct sockaddr*)&a, sizeof a) < 0) {
    perror("peer: bind");
    return 1;
  }
  int on = 1;
  setsockopt(fd, IPPROTO_IP, IP_RECVTTL, &on, sizeof on);
  setsockopt(fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &on, sizeof on);
  /* TCP on the same port: each connection echoed to its end, by a child
   * of a child that goes with this process. */
  const int l = socket(AF_INET6, SOCK_STREAM, 0);
  setsockopt(l, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (l < 0 || bind(l, (struct sockaddr*)&a, sizeof a) < 0 || listen(l, 16) < 0) {
    perror("peer: tcp");
    return 1;
  }
  if (fork() == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    signal(SIGCHLD, SIG_IGN);
    for (;;) {
      const int c = accept(l, NULL, NULL);
      if (c >= 0 && fork() == 0) {
        char b[4096];
        ssize_t n;
        while ((n = recv(c, b, sizeof b, 0)) > 0)
          if (send(c, b, (size_t)n, MSG_NOSIGNAL) != n) break;
        _exit(0);
      }
      if (c >= 0) close(c);
    }
  }
  close(l);
  printf("ready\n");
  fflush(stdout);
  char buf[4096], out[2048], tag[64];
  for (;;) {
    struct sockaddr_storage from;
    char ctl[256];
    struct iovec iov = {buf, sizeof buf - 1};
    struct msghdr m = {.msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &iov,
                       .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
    ssize_t n = recvmsg(fd, &m, 0);
    if (n < 0) continue;
    socklen_t flen = m.msg_namelen;
    buf[n] = 0;
    int count;
    if (!strcmp(buf, "quit")) return 0;
    if (!strcmp(buf, "ttl?")) { /* the TTL or hop limit it arrived with */
      int ttl = -1;
      for (struct cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
        if ((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TTL) ||
            (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_HOPLIMIT))
          memcpy(&ttl, CMSG_DATA(c), sizeof ttl);
      const int len = snprintf(out, sizeof out, "ttl %d", ttl);
      sendto(fd, out, (size_t)len, 0, (struct sockaddr*)&from, flen);
      continue;
    }
    char group[64];
    unsigned gport;
    if (sscanf(buf, "group %d %63s %63s %u", &count, tag, group, &gport) == 4) {
      struct sockaddr_in g = {.sin_family = AF_INET, .sin_port = htons((unsigned short)gport)};
      if (inet_pton(AF_INET, group, &g.sin_addr) != 1) continue;
      for (int i = 0; i < count; i++)
        if (sendto(fd, out, fill(out, tag, i), 0, (struct sockaddr*)&g, sizeof g) < 0)
          perror("peer: to the group");
      continue;
    }
    if (sscanf(buf, "burst %d %63s", &count, tag) == 2) {
      for (int i = 0; i < count; i++)
        sendto(fd, out, fill(out, tag, i), 0, (struct sockaddr*)&from, flen);
      continue;
    }
    sendto(fd, buf, (size_t)n, 0, (struct sockaddr*)&from, flen);
  }
}

/* ---- helpers of the checks ---- */
static struct sockaddr_storage g_peer;
static socklen_t g_peer_len;

/* A receive that waits longer has lost its datagram: it fails its check. */
static void set_timeout(int fd) {
  struct timeval tv = {20, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

static int bound_socket(const char* ip, unsigned short port) {
  struct sockaddr_storage a;
  socklen_t len = make_addr(ip, port, &a);
  int fd = socket(a.ss_family, SOCK_DGRAM, 0);
  if (fd < 0 || bind(fd, (struct sockaddr*)&a, len) < 0) {
    perror("bind");
    exit(2);
  }
  set_timeout(fd);
  return fd;
}

static void ask(int fd, const char* fmt, ...) {
  char msg[128];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (sendto(fd, msg, strlen(msg), 0, (struct sockaddr*)&g_peer, g_peer_len) < 0) perror("ask");
}

enum { kVec = 16 };
static char g_bufs[kVec][2048];
static struct iovec g_iov[kVec];
static struct sockaddr_storage g_names[kVec];
static struct mmsghdr g_v[kVec];

static void reset_vec(void) {
  memset(g_v, 0, sizeof g_v);
  for (int i = 0; i < kVec; i++) {
    g_iov[i].iov_base = g_bufs[i];
    g_iov[i].iov_len = sizeof g_bufs[i];
    g_v[i].msg_hdr.msg_iov = &g_iov[i];
    g_v[i].msg_hdr.msg_iovlen = 1;
    g_v[i].msg_hdr.msg_name = &g_names[i];
    g_v[i].msg_hdr.msg_namelen = sizeof g_names[i];
    g_v[i].msg_len = 12345;
  }
}

/* Whether entry e holds datagram i of TAG whole, from the peer. */
static int entry_is(int e, const char* tag, int i) {
  const struct msghdr* m = &g_v[e].msg_hdr;
  return g_v[e].msg_len == burst_len(i) && is_datagram(g_bufs[e], g_v[e].msg_len, tag, i) &&
         m->msg_namelen == g_peer_len && !(m->msg_flags & MSG_TRUNC) &&
         memcmp(&g_names[e], &g_peer, g_peer_len) == 0;
}

static int nothing_left(int fd) {
  reset_vec();
  return recvmmsg(fd, g_v, kVec, MSG_DONTWAIT, NULL) == -1 && errno == EAGAIN;
}

/* ---- mmsg ---- */
static void mmsg_recv_checks(int fd, const char* ip) {
  reset_vec();
  check(recvmmsg(fd, g_v, 0, MSG_DONTWAIT, NULL) == 0, "recvmmsg vlen 0: 0");
  int r = recvmmsg(fd, NULL, 1, MSG_DONTWAIT, NULL), e = errno;
  check(r == -1 && e == EFAULT, "recvmmsg of a null vector: EFAULT (%s)", strerror(e));
  struct timespec bad[2] = {{0, 1000000000L}, {-1, 0}};
  for (int k = 0; k < 2; k++) {
    r = recvmmsg(fd, g_v, 1, MSG_DONTWAIT, &bad[k]);
    e = errno;
    check(r == -1 && e == EINVAL, "recvmmsg timeout {%ld, %ld}: EINVAL (%s)",
          (long)bad[k].tv_sec, bad[k].tv_nsec, strerror(e));
  }
  r = recvmmsg(fd, g_v, kVec, MSG_DONTWAIT, NULL);
  e = errno;
  check(r == -1 && e == EAGAIN, "recvmmsg with nothing there, MSG_DONTWAIT: EAGAIN (%s)",
        strerror(e));

  /* A blocking call without MSG_WAITFORONE waits for every entry. */
  ask(fd, "burst %d A", kVec);
  reset_vec();
  g_iov[5].iov_len = 10;
  r = recvmmsg(fd, g_v, kVec, 0, NULL);
  int ok = r == kVec;
  for (int e = 0; ok && e < kVec; e++)
    ok = e == 5 ? g_v[e].msg_len == 10 && (g_v[e].msg_hdr.msg_flags & MSG_TRUNC) &&
                      is_datagram(g_bufs[e], 10, "A", e)
                : entry_is(e, "A", e);
  check(ok, "blocking recvmmsg of %d: %d, each datagram whole with its msg_len and source, "
            "a 10-byte entry truncated (msg_len 10, MSG_TRUNC)", kVec, r);

  /* MSG_WAITFORONE: from the second datagram on, nothing waits. */
  ask(fd, "burst 3 B");
  int total = 0, calls = 0, in_order = 1;
  while (total < 3 && calls < 10) {
    reset_vec();
    r = recvmmsg(fd, g_v, 8, MSG_WAITFORONE, NULL);
    calls++;
    if (r < 1 || total + r > 3) break;
    for (int e = 0; e < r; e++) in_order &= entry_is(e, "B", total + e);
    total += r;
  }
  check(total == 3 && in_order && nothing_left(fd),
        "MSG_WAITFORONE with vlen 8 and 3 datagrams: each call 1..3 and back without waiting "
        "for 8 (%d in %d call(s), in order: %d)", total, calls, in_order);

  /* The timeout, looked at after each datagram, the time left written back. */
  ask(fd, "burst 4 C");
  reset_vec();
  struct timespec t = {30, 0};
  r = recvmmsg(fd, g_v, 4, 0, &t);
  ok = r == 4;
  for (int e = 0; ok && e < 4; e++) ok = entry_is(e, "C", e);
  check(ok && t.tv_sec >= 0 && t.tv_sec <= 30 && t.tv_nsec >= 0 && t.tv_nsec < 1000000000L &&
            (t.tv_sec < 30 || t.tv_nsec == 0),
        "recvmmsg of 4 with a 30 s timeout: %d, the time left written back {%ld, %ld}", r,
        (long)t.tv_sec, t.tv_nsec);
  ask(fd, "burst 2 D");
  reset_vec();
  t.tv_sec = 0;
  t.tv_nsec = 1;
  r = recvmmsg(fd, g_v, 4, 0, &t);
  check(r == 1 && entry_is(0, "D", 0) && t.tv_sec == 0 && t.tv_nsec == 0,
        "a 1 ns timeout: the first datagram, then the call ends (%d, {%ld, %ld})", r,
        (long)t.tv_sec, t.tv_nsec);
  reset_vec();
  t.tv_sec = t.tv_nsec = 0;
  r = recvmmsg(fd, g_v, 4, 0, &t);
  check(r == 1 && entry_is(0, "D", 1) && t.tv_sec == 0 && t.tv_nsec == 0 && nothing_left(fd),
        "a zero timeout: one datagram (%d)", r);

  /* One datagram on the kernel socket (a same-host sender) among the rings'. */
  int local = socket(g_peer.ss_family, SOCK_DGRAM, 0);
  struct sockaddr_storage me;
  socklen_t me_len = sizeof me;
  getsockname(fd, (struct sockaddr*)&me, &me_len);
  char lbuf[2048];
  const size_t llen = fill(lbuf, "L", 0);
  ssize_t sent = sendto(local, lbuf, llen, 0, (struct sockaddr*)&me, me_len);
  ask(fd, "burst 2 H");
  reset_vec();
  r = recvmmsg(fd, g_v, 3, 0, NULL);
  int seen_l = 0, seen_h = 0;
  for (int e = 0; e < r && e < 3; e++) {
    if (g_v[e].msg_len == llen && is_datagram(g_bufs[e], llen, "L", 0)) seen_l++;
    else if (entry_is(e, "H", seen_h)) seen_h++;
  }
  check(sent == (ssize_t)llen && r == 3 && seen_l == 1 && seen_h == 2 && nothing_left(fd),
        "recvmmsg of 3: a same-host datagram (kernel socket) and 2 from %s's peer (%d)", ip, r);
  close(local);
}

static void mmsg_send_checks(int fd) {
  reset_vec();
  check(sendmmsg(fd, g_v, 0, 0) == 0, "sendmmsg vlen 0: 0");
  int r = sendmmsg(fd, NULL, 1, 0), e = errno;
  check(r == -1 && e == EFAULT, "sendmmsg of a null vector: EFAULT (%s)", strerror(e));
  /* Six to the peer, which echoes each. */
  enum { kSend = 6 };
  static char out[kSend][2048];
  struct iovec iov[kSend];
  struct mmsghdr v[kSend];
  memset(v, 0, sizeof v);
  for (int i = 0; i < kSend; i++) {
    iov[i].iov_base = out[i];
    iov[i].iov_len = fill(out[i], "S", i);
    v[i].msg_hdr.msg_iov = &iov[i];
    v[i].msg_hdr.msg_iovlen = 1;
    v[i].msg_hdr.msg_name = &g_peer;
    v[i].msg_hdr.msg_namelen = g_peer_len;
  }
  r = sendmmsg(fd, v, kSend, 0);
  int ok = r == kSend;
  for (int i = 0; ok && i < kSend; i++) ok = v[i].msg_len == burst_len(i);
  reset_vec();
  int back = recvmmsg(fd, g_v, kSend, 0, NULL);
  for (int e = 0; ok && e < kSend; e++) ok = back == kSend && entry_is(e, "S", e);
  check(ok, "sendmmsg of %d: %d, each msg_len its length; the peer's echoes all back (%d)", kSend,
        r, back);
  /* An error after the first: the count of those sent. */
  for (int i = 0; i < kSend; i++) v[i].msg_len = 777;
  v[3].msg_hdr.msg_namelen = 3;
  r = sendmmsg(fd, v, kSend, 0);
  reset_vec();
  back = recvmmsg(fd, g_v, 3, 0, NULL);
  ok = r == 3 && back == 3 && v[3].msg_len == 777;
  for (int e = 0; ok && e < 3; e++) ok = entry_is(e, "S", e);
  check(ok && nothing_left(fd),
        "sendmmsg with entry 3 invalid: 3 (%d), those 3 echoed (%d), nothing more", r, back);
  /* A TTL (hop limit) as ancillary data: the datagram leaves with it. */
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } ctl;
  char q[] = "ttl?";
  struct iovec qv = {q, 4};
  struct mmsghdr t[1];
  memset(t, 0, sizeof t);
  t[0].msg_hdr.msg_name = &g_peer;
  t[0].msg_hdr.msg_namelen = g_peer_len;
  t[0].msg_hdr.msg_iov = &qv;
  t[0].msg_hdr.msg_iovlen = 1;
  t[0].msg_hdr.msg_control = ctl.buf;
  t[0].msg_hdr.msg_controllen = sizeof ctl.buf;
  struct cmsghdr* c = CMSG_FIRSTHDR(&t[0].msg_hdr);
  c->cmsg_level = g_peer.ss_family == AF_INET6 ? IPPROTO_IPV6 : IPPROTO_IP;
  c->cmsg_type = g_peer.ss_family == AF_INET6 ? IPV6_HOPLIMIT : IP_TTL;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  const int seven = 7;
  memcpy(CMSG_DATA(c), &seven, sizeof seven);
  char ans[64] = {0};
  ssize_t a1 = sendmsg(fd, &t[0].msg_hdr, 0);
  ssize_t g1 = recv(fd, ans, sizeof ans - 1, 0);
  const int ok1 = a1 == 4 && g1 > 0 && !strcmp(ans, "ttl 7");
  memset(ans, 0, sizeof ans);
  int a2 = sendmmsg(fd, t, 1, 0);
  ssize_t g2 = recv(fd, ans, sizeof ans - 1, 0);
  check(ok1 && a2 == 1 && g2 > 0 && !strcmp(ans, "ttl 7"),
        "sendmsg and sendmmsg with a TTL as ancillary data: the peer saw TTL 7 (%s)", ans);

  v[0].msg_hdr.msg_namelen = 3;
  r = sendmmsg(fd, v, kSend, 0);
  e = errno;
  check(r == -1 && e == EINVAL, "sendmmsg with entry 0 invalid: -1 EINVAL (%d, %s)", r,
        strerror(e));
}

static int mmsg(const char* ip, unsigned short port) {
  int fd = bound_socket(ip, port);
  mmsg_recv_checks(fd, ip);
  mmsg_send_checks(fd);
  close(fd);
  return 0;
}

/* ---- dup ---- */
/* Whether a blocking receive on fd gets datagram i of TAG whole. */
static int recv_is(int fd, const char* tag, int i) {
  char buf[2048];
  struct sockaddr_storage from;
  socklen_t flen = sizeof from;
  ssize_t n = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr*)&from, &flen);
  return n == (ssize_t)burst_len(i) && is_datagram(buf, (size_t)n, tag, i) && flen == g_peer_len &&
         memcmp(&from, &g_peer, flen) == 0;
}

static int cloexec(int fd) { return (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0; }

/* Whether ip:port can be bound again (the socket that had it is gone);
 * the new socket, or -1. */
static int rebind(const char* ip, unsigned short port) {
  struct sockaddr_storage a;
  socklen_t len = make_addr(ip, port, &a);
  int fd = socket(a.ss_family, SOCK_DGRAM, 0);
  set_timeout(fd);
  if (bind(fd, (struct sockaddr*)&a, len) == 0) return fd;
  close(fd);
  return -1;
}

static void dups(const char* ip, unsigned short port) {
  int fd = bound_socket(ip, port);
  int d = dup(fd);
  ask(fd, "burst 4 A");
  int ok = d >= 0 && d != fd && !cloexec(d) && recv_is(d, "A", 0) && recv_is(fd, "A", 1) &&
           recv_is(d, "A", 2);
  reset_vec();
  ok = ok && recvmmsg(d, g_v, 1, 0, NULL) == 1 && entry_is(0, "A", 3) && nothing_left(fd);
  check(ok, "dup: %d and %d both receive the socket's datagrams, in turn", fd, d);

  int r = close(fd);
  ask(d, "burst 3 B");
  ok = r == 0 && recv_is(d, "B", 0) && recv_is(d, "B", 1) && recv_is(d, "B", 2);
  r = close(fd);
  int e = errno;
  char cmd[64];
  snprintf(cmd, sizeof cmd, "test ! -e /dev/fd/%d", fd);
  const int gone_in_exec = system(cmd) == 0;
  check(ok && r == -1 && e == EBADF && gone_in_exec,
        "the first number closed: the duplicate sends and receives; a second close EBADF (%s); "
        "an exec'd program does not have it (%d)", strerror(e), gone_in_exec);

  int c = fcntl(d, F_DUPFD_CLOEXEC, 100);
  ask(c, "burst 3 C");
  struct pollfd p = {c, POLLIN, 0};
  ok = c >= 100 && cloexec(c) && !cloexec(d) && poll(&p, 1, 20000) == 1 && (p.revents & POLLIN) &&
       recv_is(d, "C", 0) && recv_is(c, "C", 1);
  int f = fcntl(d, F_DUPFD, c);
  ok = ok && f > c && !cloexec(f) && recv_is(f, "C", 2);
  check(ok, "fcntl F_DUPFD_CLOEXEC at 100 (%d, close-on-exec) and F_DUPFD (%d): poll and receive "
            "on each number", c, f);

  errno = 0;
  int bad = dup3(d, 120, 12345);
  e = errno;
  int same3 = dup3(d, d, 0), e3 = errno;
  ok = bad == -1 && e == EINVAL && same3 == -1 && e3 == EINVAL && dup2(d, d) == d;
  int g = dup3(d, 121, O_CLOEXEC);
  ok = ok && g == 121 && cloexec(g);
  check(ok, "dup3 bad flags EINVAL, onto itself EINVAL, dup2 onto itself the number, dup3 "
            "O_CLOEXEC at 121 (%d)", g);

  /* dup2 onto a second socket's number closes that socket: its port is free. */
  int s2 = bound_socket(ip, (unsigned short)(port + 1));
  ask(s2, "burst 1 X");
  ok = recv_is(s2, "X", 0);
  int at = dup2(d, s2);
  ask(s2, "burst 2 D");
  ok = ok && at == s2 && recv_is(s2, "D", 0) && recv_is(g, "D", 1);
  int s3 = rebind(ip, (unsigned short)(port + 1));
  if (s3 >= 0) ask(s3, "burst 8 E");
  for (int i = 0; s3 >= 0 && i < 8; i++) ok = ok && recv_is(s3, "E", i);
  check(ok && s3 >= 0,
        "dup2 onto another socket's number (%d): the number now names the first socket; the "
        "second socket's port bound again (%d) and its 8 datagrams received there", s2, s3);
  close(s3);

  /* close_range of one number, then of the rest: the port is free only then. */
  r = close_range((unsigned)g, (unsigned)g, 0);
  ask(d, "burst 2 G");
  ok = r == 0 && fcntl(g, F_GETFD) == -1 && recv_is(c, "G", 0) && recv_is(f, "G", 1) &&
       rebind(ip, port) == -1;
  close(c);
  close(f);
  close(s2);
  int fresh = rebind(ip, port);
  ok = ok && fresh == -1;
  r = close_range((unsigned)d, (unsigned)d, 0);
  fresh = rebind(ip, port);
  if (fresh >= 0) ask(fresh, "burst 2 F");
  ok = ok && r == 0 && fresh >= 0 && recv_is(fresh, "F", 0) && recv_is(fresh, "F", 1);
  check(ok, "close_range and close of the numbers one by one: the port stays taken until the "
            "last is closed, then a new socket binds it and receives");

  /* An epoll set in a close_range is gone as the kernel's would be: its
     number then names nothing (EBADF), and a pipe reusing it is a pipe. */
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN};
  ev.data.fd = fresh;
  ok = ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, fresh, &ev) == 0;
  r = close_range((unsigned)ep, (unsigned)ep, 0);
  errno = 0;
  ok = ok && r == 0 && epoll_ctl(ep, EPOLL_CTL_DEL, fresh, NULL) == -1 && errno == EBADF;
  int pp[2] = {-1, -1};
  if (ok && pipe(pp) == 0 && write(pp[1], "x", 1) == 1) {
    struct pollfd pf = {.fd = pp[0], .events = POLLIN};
    ok = poll(&pf, 1, 0) == 1 && pf.revents == POLLIN;
  } else {
    ok = 0;
  }
  check(ok, "close_range over an epoll set: its number EBADF for epoll_ctl, a pipe reusing it "
            "polls as a pipe (fds %d %d)", ep, pp[0]);
  if (pp[0] >= 0) close(pp[0]);
  if (pp[1] >= 0) close(pp[1]);
  close(fresh);
}

/* ---- fork ---- */
static int child_status(pid_t c) {
  int st = 0;
  if (waitpid(c, &st, 0) != c) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Under libvma.so: getsockopt(-1, SOL_SOCKET, 2800) is vma_get_api's. */
static int preloaded(void) {
  void* api = NULL;
  socklen_t len = sizeof api;
  return getsockopt(-1, SOL_SOCKET, 2800, &api, &len) == 0 && api != NULL;
}

/* Preloaded: whether the rings have the port again (the fork child that
 * shared it gone), asking for one "Y" datagram at a time until one comes
 * through the rings, not the kernel socket (read behind the preload's
 * back by the system call); a bounded number of tries. Plain: 1. */
static int back_on_rings(int fd, const char* request) {
  if (!preloaded()) return 1;
  for (int tries = 0, ms = 100; tries < 10; tries++, ms = ms < 2000 ? 2 * ms : ms) {
    ask(fd, "%s", request);
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 5000) != 1) return 0;
    char buf[2048];
    if (syscall(SYS_recvfrom, fd, buf, sizeof buf, MSG_DONTWAIT, NULL, NULL) > 0) {
      usleep((useconds_t)ms * 1000); /* the kernel's still: look again */
      continue;
    }
    return recv_is(fd, "Y", 0) && nothing_left(fd);
  }
  return 0;
}

static int port_back_on_rings(int fd) { return back_on_rings(fd, "burst 1 Y"); }

static void forks(const char* ip, unsigned short port) {
  int fd = bound_socket(ip, port);
  ask(fd, "burst 2 P");
  check(recv_is(fd, "P", 0) && recv_is(fd, "P", 1), "before fork: the socket receives");
  pid_t c = fork();
  if (c == 0) {
    int bad = 0;
    char b[16];
    ssize_t n = recv(fd, b, sizeof b, MSG_DONTWAIT);
    if (!(n == -1 && errno == EAGAIN)) bad |= 1;
    /* The parent keeps its copy and reads nothing: the replies are ours. */
    ask(fd, "burst 3 K");
    for (int i = 0; i < 3; i++)
      if (!recv_is(fd, "K", i)) bad |= 8;
    int s = bound_socket(ip, (unsigned short)(port + 1));
    ask(s, "burst 2 N");
    if (!recv_is(s, "N", 0) || !recv_is(s, "N", 1)) bad |= 2;
    close(s);
    if (close(fd) != 0) bad |= 4;
    exit(bad);  /* atexit handlers and static destructors too */
  }
  int st = child_status(c);
  check(st == 0, "fork child, the parent keeping the socket: a receive on the inherited socket "
                 "EAGAIN, the replies to its send received by it, a new socket bound and "
                 "received on, the inherited one closed, exit (status %d: 8 is the replies)", st);
  check(nothing_left(fd), "the parent got none of the replies the child took");
  check(port_back_on_rings(fd), "the child gone, the parent's port is back on the rings");
  ask(fd, "burst 4 Q");
  int ok = 1;
  for (int i = 0; i < 4; i++) ok = ok && recv_is(fd, "Q", i);
  check(ok && nothing_left(fd), "the child gone, the parent's socket receives");

  /* A child that only waits in epoll on its inherited copy: its
   * epoll_ctl asks for the port, so the replies to the parent's ask
   * reach it (the parent reads nothing meanwhile). */
  int go[2];
  if (pipe(go) < 0) exit(2);
  c = fork();
  if (c == 0) {
    int ep = epoll_create1(0);
    struct epoll_event e = {.events = EPOLLIN, .data.fd = fd}, out;
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e) != 0) _exit(3);
    if (write(go[1], "x", 1) != 1) _exit(2);
    if (epoll_wait(ep, &out, 1, 20000) != 1) _exit(4);
    _exit(recv_is(fd, "E", 0) ? 0 : 5);
  }
  char x;
  if (read(go[0], &x, 1) != 1) exit(2);
  close(go[0]);
  close(go[1]);
  ask(fd, "burst 1 E");
  st = child_status(c);
  check(st == 0, "a fork child waiting in epoll on its inherited copy gets the reply to the "
                 "parent's ask (status %d: 4 none came)", st);
  check(nothing_left(fd) && port_back_on_rings(fd),
        "that child gone, the parent's port is back on the rings");

  /* More children asking at once than the parent used to have room for
   * (64 lends): 70 ask, all but the last exit, and the last still has
   * the port lent to the kernel socket: the reply to its ask reaches it. */
  enum { kMany = 70 };
  int asked[2], hold[2], go_last[2];
  pid_t kids[kMany];
  if (pipe(asked) < 0 || pipe(hold) < 0 || pipe(go_last) < 0) exit(2);
  for (int k = 0; k < kMany; k++) {
    if ((kids[k] = fork()) < 0) exit(2);
    if (kids[k] == 0) {
      char b[16], x;
      close(hold[1]);
      close(go_last[1]);
      if (recv(fd, b, sizeof b, MSG_DONTWAIT) != -1 || errno != EAGAIN) _exit(1);
      if (write(asked[1], "x", 1) != 1) _exit(2);
      if (read(hold[0], &x, 1) != 0) _exit(2); /* all hold their copies until told */
      if (k < kMany - 1) _exit(0);
      if (read(go_last[0], &x, 1) != 1) _exit(2);
      ask(fd, "burst 1 M");
      _exit(recv_is(fd, "M", 0) ? 0 : 8);
    }
  }
  char one;
  for (int k = 0; k < kMany; k++)
    if (read(asked[0], &one, 1) != 1) exit(2);
  close(hold[1]);
  int others = 0;
  for (int k = 0; k < kMany - 1; k++) others |= child_status(kids[k]);
  sleep(3); /* the parent's look each second finds the others gone */
  if (write(go_last[1], "x", 1) != 1) exit(2);
  st = child_status(kids[kMany - 1]);
  check(others == 0 && st == 0,
        "%d fork children asking for the inherited socket at once, all but the last gone: the "
        "last receives the reply to its ask (status %d: 8 it came to the parent's rings)",
        kMany, st);
  close(asked[0]);
  close(asked[1]);
  close(hold[0]);
  close(go_last[0]);
  close(go_last[1]);
  check(nothing_left(fd) && port_back_on_rings(fd),
        "those children gone, the parent's port is back on the rings");

  /* The parent closes its copy: the child's inherited socket gets the port's datagrams. */
  int pp[2];
  if (pipe(pp) < 0) exit(2);
  c = fork();
  if (c == 0) {
    char x;
    close(pp[1]);
    if (read(pp[0], &x, 1) != 1) _exit(9);
    ask(fd, "burst 5 W");
    int bad = 0;
    for (int i = 0; i < 5; i++) bad |= !recv_is(fd, "W", i);
    _exit(bad);
  }
  close(pp[0]);
  close(fd);
  if (write(pp[1], "x", 1) != 1) exit(2);
  close(pp[1]);
  st = child_status(c);
  check(st == 0, "the parent closed the socket: the child's inherited copy sends and receives "
                 "(status %d)", st);
}

static void fork_group(const char* ip, unsigned short port) {
  const char* group = "239.221.1.1";
  int fd = bound_socket("0.0.0.0", port);
  struct ip_mreq m = {{0}, {0}};
  if (inet_pton(AF_INET, group, &m.imr_multiaddr) != 1 ||
      inet_pton(AF_INET, ip, &m.imr_interface) != 1 ||
      setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m) != 0) {
    perror("IP_ADD_MEMBERSHIP");
    exit(2);
  }
  ask(fd, "group 2 G %s %u", group, port);
  check(recv_is(fd, "G", 0) && recv_is(fd, "G", 1), "before fork: the socket receives the group");
  pid_t c = fork();
  if (c == 0) {
    int bad = 0;
    ask(fd, "group 3 M %s %u", group, port);
    for (int i = 0; i < 3; i++)
      if (!recv_is(fd, "M", i)) bad |= 1;
    if (close(fd) != 0) bad |= 2;
    exit(bad);
  }
  int st = child_status(c);
  check(st == 0, "fork child, the parent keeping the socket: its inherited copy receives the "
                 "group's datagrams it asked for (status %d: 1 they never came)", st);
  check(nothing_left(fd), "the parent got none of the group's datagrams the child took");
  char again[96];
  snprintf(again, sizeof again, "group 1 Y %s %u", group, port);
  check(back_on_rings(fd, again), "the child gone, the parent's group is back on the rings");
  close(fd);
}

/* Whether fd gets a reply to "burst 1 Y" within a few tries (the rings'
 * steering goes with the process that held it, not at once). */
static int reply_comes(int fd) {
  for (int tries = 0; tries < 10; tries++) {
    ask(fd, "burst 1 Y");
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 2000) == 1) return 1;
  }
  return 0;
}

/* A blocking receive of datagram i of Z, skipping late "Y" replies. */
static int recv_z(int fd, int i) {
  char buf[2048];
  for (;;) {
    struct sockaddr_storage from;
    socklen_t flen = sizeof from;
    ssize_t n = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr*)&from, &flen);
    if (n > 2 && buf[0] == 'Y' && buf[1] == ' ') continue;
    return n == (ssize_t)burst_len(i) && is_datagram(buf, (size_t)n, "Z", i);
  }
}

static void fork_exit(const char* ip, unsigned short port) {
  int res[2];
  if (pipe(res) < 0) exit(2);
  pid_t p = fork();
  if (p == 0) { /* P */
    close(res[0]);
    int fd = bound_socket(ip, port);
    ask(fd, "burst 2 R");
    const int ok = recv_is(fd, "R", 0) && recv_is(fd, "R", 1);
    int gone[2];
    if (pipe(gone) < 0) _exit(2);
    if (fork() == 0) { /* C */
      char x;
      close(gone[1]);
      while (read(gone[0], &x, 1) > 0) {
      } /* end of file: P has exited */
      int good = reply_comes(fd);
      if (good) ask(fd, "burst 5 Z");
      for (int i = 0; good && i < 5; i++) good = recv_z(fd, i);
      if (write(res[1], good ? "c" : "C", 1) != 1) _exit(2);
      _exit(0);
    }
    if (write(res[1], ok ? "p" : "P", 1) != 1) _exit(2);
    _exit(0); /* the socket, its rings and everything else close with the process */
  }
  close(res[1]);
  char got[8] = {0};
  size_t n = 0;
  ssize_t r;
  while (n < sizeof got - 1 && (r = read(res[0], got + n, sizeof got - 1 - n)) > 0) n += (size_t)r;
  child_status(p);
  check(strchr(got, 'p') != NULL, "P received before it forked (%s)", got);
  check(strchr(got, 'c') != NULL,
        "P exited without closing: its child C's inherited socket receives (%s)", got);
}

/* ---- exits ---- */
static int g_exit_fd;
static void* churn(void* arg) {
  (void)arg;
  char buf[2048];
  for (unsigned i = 0;; i++) {
    const int d = dup(g_exit_fd);
    if (d >= 0) close(d);
    if (i % 16 == 0) ask(g_exit_fd, "burst 8 E");
    recv(g_exit_fd, buf, sizeof buf, MSG_DONTWAIT);
  }
  return NULL;
}

static void exit1(const char* ip, unsigned short port) {
  g_exit_fd = bound_socket(ip, port);
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    if (pthread_create(&t[i], NULL, churn, NULL) != 0) exit(2);
  usleep(20000); /* then main returns, the threads still at it */
}

static void exits(char** argv) {
  for (int i = 0; i < 10; i++) {
    pid_t c = fork();
    if (c == 0) {
      char* args[] = {argv[0], "exit1", argv[2], argv[3], argv[4], argv[5], NULL};
      execv("/proc/self/exe", args);
      _exit(3);
    }
    const int st = child_status(c);
    check(st == 0, "run %d exits 0 while its threads use the socket (status %d)", i, st);
  }
}

/* ---- chk, vfork ---- */
static void chk(const char* ip, unsigned short port) {
  int fd = bound_socket(ip, port);
  ask(fd, "burst 3 T");
  char buf[2048];
  volatile size_t len = sizeof buf; /* not a constant: fortify calls the _chk variant */
  struct sockaddr_storage from;
  socklen_t flen = sizeof from;
  ssize_t a = recv(fd, buf, len, 0);
  int ok = a == (ssize_t)burst_len(0) && is_datagram(buf, (size_t)a, "T", 0);
  ssize_t b = recvfrom(fd, buf, len, 0, (struct sockaddr*)&from, &flen);
  ok = ok && b == (ssize_t)burst_len(1) && is_datagram(buf, (size_t)b, "T", 1) &&
       flen == g_peer_len && memcmp(&from, &g_peer, flen) == 0;
  ssize_t c = read(fd, buf, len);
  ok = ok && c == (ssize_t)burst_len(2) && is_datagram(buf, (size_t)c, "T", 2);
  check(ok, "recv, recvfrom and read into a buffer of known size: %zd, %zd, %zd bytes", a, b, c);
  close(fd);
}

/* ---- unbound ---- */
/* A socket not bound yet, waited on by one thread while another thread's
 * first send binds it (under the preload: puts its port on the rings):
 * the reply wakes the waiter, asleep in recv, then in poll. */
struct unbound_ask {
  int fd;
  const char* tag;
};
static void* ask_later(void* arg) {
  const struct unbound_ask* a = arg;
  usleep(200000); /* the waiter asleep first */
  ask(a->fd, "burst 1 %s", a->tag);
  return NULL;
}

static void unbound(const char* ip) {
  for (int use_poll = 0; use_poll < 2; use_poll++) {
    struct sockaddr_storage local;
    const socklen_t len = make_addr(ip, 0, &local);
    (void)len;
    const int fd = socket(local.ss_family, SOCK_DGRAM, 0);
    set_timeout(fd);
    struct unbound_ask a = {fd, use_poll ? "P" : "R"};
    pthread_t t;
    pthread_create(&t, NULL, ask_later, &a);
    int woke = 1, pr = 0, ev = 0;
    if (use_poll) {
      struct pollfd p = {fd, POLLIN, 0};
      pr = poll(&p, 1, 20000);
      ev = p.revents;
      woke = pr == 1 && (p.revents & POLLIN);
    }
    char buf[2048];
    const ssize_t n = woke ? recv(fd, buf, sizeof buf, 0) : -1;
    pthread_join(t, NULL);
    check(n > 0 && is_datagram(buf, (size_t)n, a.tag, 0),
          "a %s on a socket another thread's first send bound gets the reply (%zd; poll %d, %#x)",
          use_poll ? "poll" : "blocking recv", n, pr, ev);
    close(fd);
  }
}

/* SIGALRM to h (SA_RESTART) every us microseconds; (NULL, 0) stops it. */
static void tick_every(void (*h)(int), long us) {
  if (h) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
  }
  struct itimerval it = {{0, us}, {0, us}};
  setitimer(ITIMER_REAL, &it, NULL);
}

/* One "M" datagram asked for and received whole on fd: 1, else 0. */
static int ask_m(int fd) {
  ask(fd, "burst 1 M");
  char buf[2048];
  ssize_t n;
  do
    n = recv(fd, buf, sizeof buf, 0);
  while (n < 0 && errno == EINTR); /* SO_RCVTIMEO is set: EINTR, as the kernel */
  return n > 0 && is_datagram(buf, (size_t)n, "M", 0);
}

/* ---- handlerio ---- */
/* A signal handler that sends and receives on an offloaded socket while
 * the main thread sends and receives on another of the same netdev (with
 * VMA_RX_POLL=-1 it spins inside the offload, holding its locks much of
 * the time): every datagram of the main thread arrives, nothing hangs. */
static int g_hfd = -1;
static volatile sig_atomic_t g_hsent;
static void on_tick(int sig) {
  (void)sig;
  const int saved = errno;
  char b[64];
  if (sendto(g_hfd, "burst 0 H", 9, 0, (struct sockaddr*)&g_peer, g_peer_len) == 9) g_hsent++;
  while (recv(g_hfd, b, sizeof b, MSG_DONTWAIT) > 0) {
  }
  errno = saved;
}

static void handler_io(const char* ip, unsigned short port) {
  int fd = bound_socket(ip, port);
  g_hfd = bound_socket(ip, (unsigned short)(port + 1));
  tick_every(on_tick, 200);
  int ok = 0, rounds = 0;
  /* At least kRounds, and on until the handler sent 100 times (a fast
   * run's 3000 can fit in fewer ticks), kMost at most. */
  enum { kRounds = 3000, kMost = 100000 };
  for (; rounds < kMost && (rounds < kRounds || g_hsent < 100); rounds++) ok += ask_m(fd);
  tick_every(NULL, 0);
  check(ok == rounds, "every datagram of the main thread while a handler did I/O (%d of %d)", ok,
        rounds);
  check(g_hsent >= 100, "the handler ran and sent (%d times)", (int)g_hsent);
  close(fd);
  close(g_hfd);
}

/* ---- tcphandler ---- */
/* A signal handler that sends on one TCP connection while the main thread
 * echoes 64-byte messages on another: the kernel sends each byte;
 * preloaded, a byte whose connection the interrupted call keeps out of
 * reach fails with EAGAIN. Never any other error, never SIGPIPE (which
 * would kill the program), and every byte sent comes back. */
static int g_tfd = -1;
/* g_in_recv: the main thread is inside recv (tcpsame); g_tok_in_recv:
 * the handler's bytes sent then. */
static volatile sig_atomic_t g_tok, g_tagain, g_tother, g_in_recv, g_tok_in_recv;
static void on_send_tick(int sig) {
  (void)sig;
  const int saved = errno;
  if (send(g_tfd, "x", 1, 0) == 1) {
    g_tok++;
    g_tok_in_recv += g_in_recv;
  } else if (errno == EAGAIN || errno == EWOULDBLOCK)
    g_tagain++;
  else
    g_tother++;
  errno = saved;
}

static int tcp_to_peer(void) {
  const int c = socket(g_peer.ss_family, SOCK_STREAM, 0);
  if (c < 0 || connect(c, (struct sockaddr*)&g_peer, g_peer_len) < 0) {
    perror("tcphandler: connect");
    exit(2);
  }
  return c;
}

/* n bytes into buf from c, whole: 1, else 0. */
static int recv_whole(int c, char* buf, size_t n) {
  for (size_t got = 0; got < n;) {
    const ssize_t r = recv(c, buf + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return 0;
    got += (size_t)r;
  }
  return 1;
}

/* The next 64 message bytes from c into back, the handler's echoed 'x'
 * bytes among them counted into *xs: 1, else 0. */
static int recv_message(int c, char* back, ssize_t* xs) {
  char in[64];
  for (size_t got = 0; got < 64;) {
    g_in_recv = 1;
    const ssize_t r = recv(c, in, 64 - got, 0);
    g_in_recv = 0;
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return 0;
    for (ssize_t i = 0; i < r; i++) {
      if (in[i] == 'x')
        (*xs)++;
      else
        back[got++] = in[i];
    }
  }
  return 1;
}

/* same: the handler sends on the connection the main thread echoes on
 * (its bytes come back among the messages). */
static void tcp_handler(int same) {
  const int c = tcp_to_peer();
  g_tfd = same ? c : tcp_to_peer();
  int ok = 0, rounds;
  char msg[64], back[64];
  ssize_t total = 0;
  tick_every(on_send_tick, 200);
  for (rounds = 0; g_tok + g_tagain + g_tother < 1000 && rounds < 1000000; rounds++) {
    memset(msg, 'A' + rounds % 26, sizeof msg);  // never the handler's 'x'
    ok += send(c, msg, sizeof msg, 0) == (ssize_t)sizeof msg &&
          (same ? recv_message(c, back, &total) : recv_whole(c, back, sizeof back)) &&
          !memcmp(msg, back, sizeof msg);
  }
  tick_every(NULL, 0);
  shutdown(g_tfd, SHUT_WR);
  char echoed[2048];
  ssize_t n;
  while ((n = recv(g_tfd, echoed, sizeof echoed, 0)) > 0 || (n < 0 && errno == EINTR))
    total += n > 0 ? n : 0;
  check(ok == rounds, "every message of the main thread echoed (%d of %d)", ok, rounds);
  check(g_tother == 0 && g_tok + g_tagain >= 1000,
        "the handler's sends: %d sent, %d EAGAIN, %d other errors", (int)g_tok, (int)g_tagain,
        (int)g_tother);
  check(total == g_tok, "every byte the handler sent came back (%zd of %d)", total, (int)g_tok);
  /* Preloaded (VMA_RX_POLL=0), a handler over the receive's sleep sends
   * on the rings (fenced, it got EAGAIN there; the instants around the
   * call outside the library are a few in a thousand ticks at most). */
  if (same)
    check(g_tok_in_recv > 10, "the handler's sends while its thread was in recv: %d",
          (int)g_tok_in_recv);
  close(c);
  if (!same) close(g_tfd);
}

/* ---- duphandler ---- */
/* A signal handler that duplicates and closes one offloaded socket while
 * the main thread duplicates and closes another: ticks land around the
 * library's bookkeeping of duplicates, and inside its table lookups.
 * Nothing hangs, every call succeeds, and both sockets receive after. */
static int g_dfd = -1;
static volatile sig_atomic_t g_dran, g_dbad;
static void on_dup_tick(int sig) {
  (void)sig;
  const int saved = errno;
  const int n = dup(g_dfd);
  if (n < 0 || close(n) != 0) g_dbad++;
  g_dran++;
  errno = saved;
}

static void dup_handler(const char* ip, unsigned short port) {
  const int fd = bound_socket(ip, port);
  g_dfd = bound_socket(ip, (unsigned short)(port + 1));
  int bad = 0, rounds;
  tick_every(on_dup_tick, 100);
  for (rounds = 0; g_dran < 2000 && rounds < 5000000; rounds++) {
    const int n = dup(fd);
    bad += n < 0 || close(n) != 0;
  }
  tick_every(NULL, 0);
  check(bad == 0 && g_dbad == 0,
        "every dup and close succeeded (%d rounds, %d handler runs; failed: %d, in handlers %d)",
        rounds, (int)g_dran, bad, (int)g_dbad);
  check(g_dran >= 2000, "the handler ran (%d times)", (int)g_dran);
  ask(fd, "burst 1 M");
  check(recv_is(fd, "M", 0), "the main thread's socket receives after");
  ask(g_dfd, "burst 1 H");
  check(recv_is(g_dfd, "H", 0), "the handler's socket receives after");
  close(fd);
  close(g_dfd);
}

/* ---- handlerclose ---- */
/* A signal handler that closes an offloaded socket, and binds and closes
 * a new one, at each tick while the main thread asks for and receives
 * datagrams on the rings (inside the library much of the time): nothing
 * hangs, every call succeeds, every datagram of the main thread arrives. */
enum { kPool = 64 };
static int g_open[kPool], g_fresh[kPool];
static struct sockaddr_storage g_fresh_at[kPool];
static socklen_t g_fresh_len;
static volatile sig_atomic_t g_cran, g_cbad;
static void on_close_tick(int sig) {
  (void)sig;
  const int saved = errno, i = g_cran;
  if (i < kPool) {
    g_cbad += close(g_open[i]) != 0;
    g_cbad += bind(g_fresh[i], (struct sockaddr*)&g_fresh_at[i], g_fresh_len) != 0;
    g_cbad += close(g_fresh[i]) != 0;
    g_cran++;
  }
  errno = saved;
}

static void handler_close(const char* ip, unsigned short port) {
  const int fd = bound_socket(ip, port);
  for (int i = 0; i < kPool; i++) {
    g_open[i] = bound_socket(ip, (unsigned short)(port + 1 + i));
    g_fresh_len = make_addr(ip, (unsigned short)(port + 1 + kPool + i), &g_fresh_at[i]);
    g_fresh[i] = socket(g_fresh_at[i].ss_family, SOCK_DGRAM, 0);
  }
  int ok = 0, rounds;
  tick_every(on_close_tick, 1000);
  for (rounds = 0; g_cran < kPool && rounds < 1000000; rounds++) ok += ask_m(fd);
  tick_every(NULL, 0);
  check(g_cran == kPool && g_cbad == 0, "the handler closed, bound and closed (%d of %d; failed %d)",
        (int)g_cran, kPool, (int)g_cbad);
  check(ok == rounds, "every datagram of the main thread (%d of %d)", ok, rounds);
  close(fd);
}

/* ---- efault ---- */
/* Receives naming memory that cannot be used: EFAULT, never a crash. A
 * socket per case: a datagram E waits (or comes) for the bad call, then K;
 * a good receive gets E or K whole (the kernel drops the datagram a failed
 * copy was for, the preload keeps it: either is right). */
enum { kBadCases = 11 };
static void* volatile g_bad = (void*)8; /* volatile: the compiler may not see it */
static ssize_t bad_call(int c, int fd, void* bad, char* ro) {
  char buf[2048];
  struct sockaddr_storage from;
  socklen_t flen = sizeof from;
  struct iovec iov = {buf, sizeof buf}, ro_iov = {ro, 100};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
  struct mmsghdr v = {.msg_hdr = m};
  switch (c) {
    case 0: return recv(fd, bad, 100, 0);
    case 1: return recv(fd, ro, 100, 0);
    case 2: return read(fd, bad, 100);
    case 3: return recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr*)bad, &flen);
    case 4: return recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr*)&from, (socklen_t*)bad);
    case 5: return recvmsg(fd, (struct msghdr*)bad, 0);
    case 6: m.msg_iov = (struct iovec*)bad; return recvmsg(fd, &m, 0);
    case 7: m.msg_iov = &ro_iov; return recvmsg(fd, &m, 0);
    case 8: return recvmmsg(fd, (struct mmsghdr*)bad, 1, 0, NULL);
    case 9: return recvmmsg(fd, &v, 1, 0, (struct timespec*)bad);
    default: return recvmmsg(fd, (struct mmsghdr*)ro, 1, 0, NULL);
  }
}
static const char* const kBadWhat[kBadCases] = {
    "recv into address 8",      "recv into read-only memory", "read into address 8",
    "recvfrom, address 8",      "recvfrom, length at 8",      "recvmsg, header at 8",
    "recvmsg, iovec array at 8", "recvmsg, read-only buffer",  "recvmmsg, vector at 8",
    "recvmmsg, timeout at 8",    "recvmmsg, read-only vector"};

static void efault(const char* ip, unsigned short port) {
  char* ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (ro == MAP_FAILED) {
    perror("mmap");
    exit(2);
  }
  for (int c = 0; c < kBadCases; c++) {
    int fd = bound_socket(ip, (unsigned short)(port + c));
    ask(fd, "burst 1 E");
    errno = 0;
    const ssize_t r = bad_call(c, fd, g_bad, ro);
    check(r == -1 && errno == EFAULT, "%s: -1/EFAULT (%zd, %s)", kBadWhat[c], r, strerror(errno));
    ask(fd, "burst 1 K");
    char buf[2048];
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    const int e = n > 0 && is_datagram(buf, (size_t)n, "E", 0);
    const int k = n > 0 && is_datagram(buf, (size_t)n, "K", 0);
    check(e || k, "%s: the next receive gets a whole datagram (%s)", kBadWhat[c],
          e ? "the one the bad call was for" : k ? "the next one" : "none");
    close(fd);
  }
  munmap(ro, 4096);
}

static void vforks(const char* ip, unsigned short port) {
  int fd = bound_socket(ip, port);
  ask(fd, "burst 1 V");
  check(recv_is(fd, "V", 0), "before vfork: the socket receives");
  pid_t c = vfork();
  if (c == 0) {
    close(fd);
    _exit(0);
  }
  const int st = child_status(c);
  ask(fd, "burst 4 U");
  int ok = st == 0;
  for (int i = 0; i < 4; i++) ok = ok && recv_is(fd, "U", i);
  check(ok, "a vfork child closed the socket and exited (status %d): the parent's socket receives",
        st);
  close(fd);
}

/* ---- eintr ---- */
static int g_alarm_fd = -1;
/* The ask goes out by the raw system call: a handler that runs while the
 * preload's receive spins holding its rings' locks must not call back
 * into the preload's send on those rings (libvma(7), BUGS). */
static void on_alarm(int sig) {
  (void)sig;
  if (g_alarm_fd >= 0) {
    const char msg[] = "burst 1 R";
    syscall(SYS_sendto, g_alarm_fd, msg, sizeof msg - 1, 0, (struct sockaddr*)&g_peer,
            g_peer_len);
  }
}

/* A blocking recv on fd while SIGALRM (flags) comes in a second; its
 * result and errno. */
static ssize_t recv_alarmed(int fd, int flags, int ask_in_handler, int* err) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sa.sa_flags = flags;
  sigaction(SIGALRM, &sa, NULL);
  g_alarm_fd = ask_in_handler ? fd : -1;
  char buf[2048];
  alarm(1);
  errno = 0;
  ssize_t r = recv(fd, buf, sizeof buf, 0);
  *err = errno;
  alarm(0);
  if (r > 0 && !is_datagram(buf, (size_t)r, "R", 0)) r = -2;
  return r;
}

static void eintr(const char* ip, unsigned short port) {
  int fd = bound_socket(ip, port);
  struct timeval none = {0, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
  int e;
  ssize_t r = recv_alarmed(fd, 0, 0, &e);
  check(r == -1 && e == EINTR, "a handler without SA_RESTART: recv fails with EINTR (%zd, %s)", r,
        strerror(e));
  r = recv_alarmed(fd, SA_RESTART, 1, &e);
  check(r == (ssize_t)burst_len(0),
        "with SA_RESTART: recv goes on and gets the datagram the handler asked for (%zd, %s)", r,
        strerror(e));
  set_timeout(fd);
  r = recv_alarmed(fd, SA_RESTART, 0, &e);
  check(r == -1 && e == EINTR, "with SA_RESTART and SO_RCVTIMEO: EINTR (%zd, %s)", r, strerror(e));
  close(fd);
}

/* ---- muxintr ---- */
/* poll and epoll_wait with no timeout on an idle socket while SIGALRM (a
 * handler with SA_RESTART) comes in a second: EINTR, as poll(2) and
 * epoll_wait(2) are never restarted. */
static void mux_intr(const char* ip, unsigned short port) {
  int fd = bound_socket(ip, port);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &sa, NULL);
  g_alarm_fd = -1;
  struct pollfd p = {fd, POLLIN, 0};
  alarm(1);
  errno = 0;
  int r = poll(&p, 1, -1);
  int e = errno;
  alarm(0);
  check(r == -1 && e == EINTR, "poll: a handler (SA_RESTART) ends it with EINTR (%d, %s)", r,
        strerror(e));
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
  epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  alarm(1);
  errno = 0;
  r = epoll_wait(ep, &ev, 1, -1);
  e = errno;
  alarm(0);
  check(r == -1 && e == EINTR, "epoll_wait: a handler ends it with EINTR (%d, %s)", r,
        strerror(e));
  close(ep);
  close(fd);
}

/* ---- skipos ---- */
static void skip_os(const char* ip, unsigned short port, int expect) {
  int fd = bound_socket(ip, port);
  ask(fd, "burst 1 S");
  char b[64];
  ssize_t n = recv(fd, b, sizeof b, MSG_PEEK); /* there now; not a poll (which counts) */
  int pp[2];
  if (pipe(pp) < 0 || write(pp[1], "x", 1) != 1) exit(2);
  struct pollfd p[2] = {{fd, POLLIN, 0}, {pp[0], POLLIN, 0}};
  int sock_seen = 0, pipe_seen = 0;
  for (int i = 0; i < 8; i++) {
    p[0].revents = p[1].revents = 0;
    const int r = poll(p, 2, 0);
    sock_seen += r >= 1 && (p[0].revents & POLLIN);
    pipe_seen += (p[1].revents & POLLIN) != 0;
  }
  check(n > 0 && sock_seen == 8 && pipe_seen == expect,
        "8 polls: the socket ready in %d, the pipe in %d (expected 8 and %d)", sock_seen,
        pipe_seen, expect);
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
  epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  ev.data.fd = pp[0];
  epoll_ctl(ep, EPOLL_CTL_ADD, pp[0], &ev);
  sock_seen = pipe_seen = 0;
  for (int i = 0; i < 8; i++) {
    struct epoll_event out[4];
    const int r = epoll_wait(ep, out, 4, 0);
    for (int k = 0; k < r; k++) {
      sock_seen += out[k].data.fd == fd;
      pipe_seen += out[k].data.fd == pp[0];
    }
  }
  check(sock_seen == 8 && pipe_seen == expect,
        "8 epoll_waits: the socket ready in %d, the pipe in %d (expected 8 and %d)", sock_seen,
        pipe_seen, expect);
  check(recv_is(fd, "S", 0), "the datagram read (the kernel counts it when read)");
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc == 3 && !strcmp(argv[1], "peer")) return peer((unsigned short)atoi(argv[2]));
  if (argc >= 6) g_peer_len = make_addr(argv[4], (unsigned short)atoi(argv[5]), &g_peer);
  if (argc == 6 && !strcmp(argv[1], "mmsg"))
    mmsg(argv[2], (unsigned short)atoi(argv[3]));
  else if (argc == 6 && !strcmp(argv[1], "dup"))
    dups(argv[2], (unsigned short)atoi(argv[3]));
  else if (argc == 6 && !strcmp(argv[1], "fork"))
    forks(argv[2], (unsigned short)atoi(argv[3]));
  else if (argc == 6 && !strcmp(argv[1], "fork-group"))
    fork_group(argv[2], (unsigned short)atoi(argv[3]));
  else if (argc == 6 && !strcmp(argv[1], "chk"))
    chk(argv[2], (unsigned short)atoi(argv[3]));
  else if (argc == 6 && !strcmp(argv[1], "eintr"))
    eintr(argv[2], (unsigned short)atoi(argv[3]));
  else if (argc == 6 && !strcmp(argv[1], "muxintr"))
    mux_intr(argv[2], (unsigned short)atoi(argv[3]));
  else if (argc == 6 && !strcmp(argv[1], "unbound"))
    unbound(argv[2]);
  else if (argc == 6 && !strcmp(argv[1], "handlerio"))
    handler_io(argv[2], (unsigned short)atoi(argv[3]));
  else if (argc == 6 && !strcmp(argv[1], "tcphandler"))
    tcp_handler(0);
  else if (argc == 6 && !strcmp(argv[1], "tcpsame"))
    tcp_handler(1);
  else if (argc == 6 && !strcmp(argv[1], "handlerclose"))
    handler_close(argv[2], (unsigned short)atoi(argv[3]));
  else if (argc == 6 && !strcmp(argv[1], "duphandler"))
    dup_handler(argv[2], (unsigned short)atoi(argv[3]));
  else if (argc == 6 && !strcmp(argv[1], "efault"))
    efault(argv[2], (unsigned short)atoi(argv[3]));
  else if (argc == 6 && !strcmp(argv[1], "vfork"))
    vforks(argv[2], (unsigned short)atoi(argv[3]));
  else if (argc == 7 && !strcmp(argv[1], "skipos"))
    skip_os(argv[2], (unsigned short)atoi(argv[3]), atoi(argv[6]));
  else if (argc == 6 && !strcmp(argv[1], "exits"))
    exits(argv);
  else if (argc == 6 && !strcmp(argv[1], "exit1")) {
    exit1(argv[2], (unsigned short)atoi(argv[3]));
    return 0;
  } else if (argc == 6 && !strcmp(argv[1], "fork-exit"))
    fork_exit(argv[2], (unsigned short)atoi(argv[3]));
  else {
    fprintf(stderr, "usage: %s peer PORT | mmsg|dup|fork|fork-group|fork-exit|exits|chk|efault|handlerio|handlerclose|tcphandler|tcpsame|duphandler|unbound|vfork|eintr|muxintr ADDR PORT PEER PEERPORT | skipos ... N\n", argv[0]);
    return 2;
  }
  printf("done: %d failure(s)\n", failures);
  return failures != 0;
}
