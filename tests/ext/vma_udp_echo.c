/* UDP echo for vma_netns.sh.
 * server 4|6 PORT COUNT: (under LD_PRELOAD=libvma.so) binds the wildcard
 *   address of the family, prints "ready PID FD", echoes COUNT datagrams
 *   back to their senders with recvfrom/sendto (a blocking socket: the
 *   preload's spin-then-sleep path); with ECHO_HOLD set, then waits for a
 *   line on stdin before closing (its vmastat block stays readable); with
 *   ECHO_WAIT set, waits for each datagram first in ppoll (even ones) or
 *   pselect (odd ones), SIGUSR1 blocked for the wait, 20 s at most.
 * client ADDR PORT COUNT: (kernel) sends COUNT datagrams of different
 *   lengths and contents, each checked when it comes back; exit 0 if all
 *   did, 1 otherwise (a 5 s timeout per datagram). */
#define _GNU_SOURCE /* ppoll */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

static int client(const char* addr, unsigned short port, int count) {
  struct sockaddr_storage to;
  memset(&to, 0, sizeof to);
  socklen_t len;
  struct sockaddr_in6* s6 = (struct sockaddr_in6*)&to;
  struct sockaddr_in* s4 = (struct sockaddr_in*)&to;
  if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(port);
    len = sizeof *s6;
  } else if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
    s4->sin_family = AF_INET;
    s4->sin_port = htons(port);
    len = sizeof *s4;
  } else {
    fprintf(stderr, "bad address %s\n", addr);
    return 2;
  }
  const int fd = socket(to.ss_family, SOCK_DGRAM, 0);
  struct timeval tv = {5, 0};
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0) {
    perror("socket");
    return 1;
  }
  char out[1500], in[2048];
  for (int i = 0; i < count; i++) {
    const size_t n = 1 + (size_t)(i * 97) % 1400;
    for (size_t k = 0; k < n; k++) out[k] = (char)('a' + (i * 7 + k) % 26);
    if (sendto(fd, out, n, 0, (struct sockaddr*)&to, len) != (ssize_t)n) {
      perror("sendto");
      return 1;
    }
    const ssize_t r = recv(fd, in, sizeof in, 0);
    if (r != (ssize_t)n || memcmp(in, out, n) != 0) {
      fprintf(stderr, "datagram %d: %zd bytes back, %zu sent%s\n", i, r, n,
              r == (ssize_t)n ? ", contents differ" : "");
      return 1;
    }
  }
  printf("echoed %d\n", count);
  return 0;
}

/* ppoll or pselect until fd is readable: 1, or 0 after printing why not. */
static int wait_readable(int fd, int i) {
  const struct timespec t = {20, 0};
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGUSR1);
  int r;
  if (i % 2 == 0) {
    struct pollfd p = {fd, POLLIN, 0};
    r = ppoll(&p, 1, &t, &mask);
    r = r == 1 && (p.revents & POLLIN);
  } else {
    fd_set rs;
    FD_ZERO(&rs);
    FD_SET(fd, &rs);
    r = pselect(fd + 1, &rs, NULL, NULL, &t, &mask);
    r = r == 1 && FD_ISSET(fd, &rs);
  }
  if (!r) fprintf(stderr, "datagram %d: %s did not see it\n", i, i % 2 ? "pselect" : "ppoll");
  return r;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s server 4|6 PORT COUNT | client ADDR PORT COUNT\n", argv[0]);
    return 2;
  }
  const int count = atoi(argv[4]);
  const unsigned short port = (unsigned short)atoi(argv[3]);
  if (strcmp(argv[1], "client") == 0) return client(argv[2], port, count);
  const int v6 = atoi(argv[2]) == 6;
  const int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_storage a;
  memset(&a, 0, sizeof a);
  socklen_t len;
  if (v6) {
    struct sockaddr_in6* s6 = (struct sockaddr_in6*)&a;
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(port);
    s6->sin6_addr = in6addr_any;
    len = sizeof *s6;
  } else {
    struct sockaddr_in* s4 = (struct sockaddr_in*)&a;
    s4->sin_family = AF_INET;
    s4->sin_port = htons(port);
    s4->sin_addr.s_addr = htonl(INADDR_ANY);
    len = sizeof *s4;
  }
  if (fd < 0 || bind(fd, (struct sockaddr*)&a, len) < 0) {
    perror("socket/bind");
    return 1;
  }
  printf("ready %d %d\n", (int)getpid(), fd);
  fflush(stdout);
  char buf[2048];
  const int wait = getenv("ECHO_WAIT") != NULL;
  for (int i = 0; i < count; i++) {
    if (wait && !wait_readable(fd, i)) return 1;
    struct sockaddr_storage from;
    socklen_t flen = sizeof from;
    const ssize_t n = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr*)&from, &flen);
    if (n < 0) {
      perror("recvfrom");
      return 1;
    }
    if (sendto(fd, buf, (size_t)n, 0, (struct sockaddr*)&from, flen) != n) {
      perror("sendto");
      return 1;
    }
  }
  /* Hold the socket (and its vmastat block) until told to go. */
  if (getenv("ECHO_HOLD")) (void)getchar();
  close(fd);
  return 0;
}
