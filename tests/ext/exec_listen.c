// A listener handed to a new program across exec, as systemd's socket
// activation and nginx's binary upgrade do (run by preload_exec_listen.sh):
//   exec_listen serve PORT N BYTES   listen on 127.0.0.1:PORT, say "ready",
//     wait for the first client (poll), then exec this program as
//     "accept FD N BYTES" with the listener left open: that client's
//     connection waits for accept across the exec.
//   exec_listen accept FD N BYTES    (the new program) accept N connections
//     one after another on listener FD and echo BYTES on each; says how
//     many it served and its pid.
//   exec_listen send PORT N BYTES    N connections one after another, each
//     sending BYTES 4 KiB at a time and checking each 4 KiB echoed back.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { kChunk = 4096 };

static unsigned char pattern(size_t i, int conn) { return (unsigned char)(i * 131 + conn * 7); }

static int full(int fd, unsigned char* p, size_t n, int writing) {
  for (size_t done = 0; done < n;) {
    ssize_t r = writing ? write(fd, p + done, n - done) : read(fd, p + done, n - done);
    if (r <= 0) return -1;
    done += (size_t)r;
  }
  return 0;
}

static struct sockaddr_in local(int port) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

static int serve(int port, const char* n, const char* bytes, char* self) {
  int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  struct sockaddr_in a = local(port);
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (l < 0 || bind(l, (struct sockaddr*)&a, sizeof a) || listen(l, 16)) return perror("listen"), 1;
  printf("ready\n");
  fflush(stdout);
  struct pollfd p = {l, POLLIN, 0};
  if (poll(&p, 1, 20000) != 1) return fprintf(stderr, "no client came\n"), 1;
  char fd[16];
  snprintf(fd, sizeof fd, "%d", l);
  execl(self, self, "accept", fd, n, bytes, (char*)NULL);
  return perror("exec"), 1;
}

static int accept_all(int l, int n, size_t bytes) {
  unsigned char buf[kChunk];
  int served = 0;
  for (int i = 0; i < n; i++) {
    int c = accept(l, NULL, NULL);
    if (c < 0) return perror("accept"), 1;
    for (size_t done = 0; done < bytes; done += kChunk)
      if (full(c, buf, kChunk, 0) || full(c, buf, kChunk, 1)) break;
    close(c);
    served++;
  }
  printf("served %d, pid %d\n", served, (int)getpid());
  return 0;
}

static int send_all(int port, int n, size_t bytes) {
  unsigned char out[kChunk], in[kChunk];
  for (int conn = 0; conn < n; conn++) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = local(port);
    if (s < 0 || connect(s, (struct sockaddr*)&a, sizeof a)) return perror("connect"), 1;
    for (size_t done = 0; done < bytes; done += kChunk) {
      for (size_t i = 0; i < kChunk; i++) out[i] = pattern(done + i, conn);
      if (full(s, out, kChunk, 1) || full(s, in, kChunk, 0) || memcmp(in, out, kChunk))
        return fprintf(stderr, "connection %d: echo broken at %zu\n", conn, done), 1;
    }
    close(s);
  }
  printf("echoed %d x %zu intact\n", n, bytes);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 5 && !strcmp(argv[1], "serve"))
    return serve(atoi(argv[2]), argv[3], argv[4], argv[0]);
  if (argc == 5 && !strcmp(argv[1], "accept"))
    return accept_all(atoi(argv[2]), atoi(argv[3]), strtoul(argv[4], NULL, 0));
  if (argc == 5 && !strcmp(argv[1], "send"))
    return send_all(atoi(argv[2]), atoi(argv[3]), strtoul(argv[4], NULL, 0));
  fprintf(stderr, "usage: see the top of exec_listen.c\n");
  return 2;
}
