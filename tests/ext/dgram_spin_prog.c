/* Compiled by dgram_spin.sh. Two threads of one process echo COUNT 64 B
 * datagrams over datagram rsockets on 127.0.0.1 (shared-memory rings when
 * SLIPSTREAM_PROVIDER allows): an echo thread (blocking rrecvfrom, then
 * rsendto) and the main thread (rsend, then a blocking rrecv for even
 * rounds, rpoll with a timeout and rrecv MSG_DONTWAIT for odd ones).
 * Around the measured rounds it makes a marker syscall (getppid), so a
 * tracer can count the syscalls made in between. Exit 0 when every echo
 * came back intact. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rsocket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { kWarm = 200, kSize = 64 };
static long total;  /* warm-up rounds plus measured ones */

static int bound(struct sockaddr_in *a) {
  int fd = rsocket(AF_INET, SOCK_DGRAM, 0);
  socklen_t len = sizeof *a;
  memset(a, 0, sizeof *a);
  a->sin_family = AF_INET;
  a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || rbind(fd, (struct sockaddr *)a, sizeof *a) < 0 ||
      rgetsockname(fd, (struct sockaddr *)a, &len) < 0) {
    perror("dgram_spin_prog: socket");
    exit(2);
  }
  return fd;
}

static void *echo(void *arg) {
  int fd = *(int *)arg;
  char buf[kSize];
  for (long i = 0; i < total; i++) {
    struct sockaddr_storage src;
    socklen_t len = sizeof src;
    ssize_t n = rrecvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&src, &len);
    if (n < 0 || rsendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&src, len) != n) {
      perror("dgram_spin_prog: echo");
      exit(2);
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  long count = argc > 1 ? atol(argv[1]) : 10000;
  struct sockaddr_in sa, ca;
  int s = bound(&sa), c = bound(&ca);
  pthread_t t;
  total = kWarm + count;
  if (rconnect(c, (struct sockaddr *)&sa, sizeof sa) < 0 || pthread_create(&t, NULL, echo, &s)) {
    perror("dgram_spin_prog: setup");
    return 2;
  }
  for (long i = 0; i < total; i++) {
    char out[kSize], in[kSize];
    memset(out, (int)(i & 0x7f), sizeof out);
    memcpy(out, &i, sizeof i);
    if (i == kWarm) syscall(SYS_getppid);  /* marker: the measured rounds start */
    ssize_t n = rsend(c, out, sizeof out, 0);
    if (n == (ssize_t)sizeof out) {
      if (i % 2 == 0) {
        n = rrecv(c, in, sizeof in, 0);
      } else {
        struct pollfd p = {c, POLLIN, 0};
        n = rpoll(&p, 1, 60000) == 1 ? rrecv(c, in, sizeof in, MSG_DONTWAIT) : -1;
      }
    }
    if (n != (ssize_t)sizeof out || memcmp(in, out, sizeof out) != 0) {
      fprintf(stderr, "dgram_spin_prog: round %ld: echo lost or changed\n", i);
      return 1;
    }
  }
  syscall(SYS_getppid);  /* marker: the measured rounds are over */
  pthread_join(t, NULL);
  rclose(c);
  rclose(s);
  printf("dgram_spin_prog: %ld echoes\n", count);
  return 0;
}
