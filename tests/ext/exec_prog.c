// A connection handed to a new program across exec, as sshd's re-exec
// and inetd do (run by preload_exec.sh):
//   exec_prog serve PORT BYTES HOW   accept one connection, fork; the child
//     makes it its stdin and stdout, closes the number accept gave, and
//     execs this program as "echo BYTES" (HOW exec), or first tries a
//     program that does not exist and then echoes itself (HOW badexec), or
//     echoes itself (HOW noexec); the parent closes its copy and waits for
//     the child. HOW parentkeeps: as exec, but the parent keeps its copy,
//     and once the child is gone echoes on it itself. HOW spawn: the child
//     is started by posix_spawn, the connection dup2'd onto its stdin and
//     stdout. HOW spawninherit (vforkinherit): first a posix_spawn'd
//     (vfork'd) child that inherits the connection at its number only
//     looks at it (exec_prog look FD). With EXEC_PROG_HALF
//     set, the exec'd echo stops after the first half. With EXEC_PROG_HALF_IN_CHILD set, the echo
//     forks a child that echoes the first half and exits; the echo then does the rest (sshd's
//     monitor and its child taking turns). With EXEC_PROG_EXEC_AGAIN set to N, the echo first execs
//     itself N times more (git daemon).
//   exec_prog echo BYTES             (the new program) echo up to BYTES from
//     stdin to stdout; says what its stdin is, how many bytes it echoed, and
//     its pid.
//   exec_prog send PORT BYTES        send BYTES and read them back at once
//     (poll: both ways together), checking each byte.
//   exec_prog hold PORT              connect, stop itself (SIGSTOP); once
//     continued, send a byte and read it back.
// The address is 127.0.0.1, or EXEC_PROG_ADDR (the Soft-RoCE guest's
// tests/rxe/preload.sh: rxe0's). With EXEC_PROG_AFTER the server waits
// after accept until that file exists.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned char pattern(size_t i) { return (unsigned char)(i * 131 + (i >> 11)); }

static int echo_bytes(size_t bytes, size_t* done);

static int echo(size_t bytes) {
  if (getenv("EXEC_PROG_HALF")) bytes /= 2;  // the first half only
  struct stat st;
  struct sockaddr_storage name;
  socklen_t len = sizeof name;
  if (fstat(0, &st) || !S_ISSOCK(st.st_mode)) {
    fprintf(stderr, "stdin: not a socket (%s)\n", strerror(errno));
    return 2;
  }
  if (getsockname(0, (struct sockaddr*)&name, &len)) {
    fprintf(stderr, "getsockname: %s\n", strerror(errno));
    return 2;
  }
  // git daemon's pattern: an exec'd program that execs the next one.
  const char* again = getenv("EXEC_PROG_EXEC_AGAIN");
  if (again && atoi(again) > 0) {
    char left[16], bytes_arg[32];
    snprintf(left, sizeof left, "%d", atoi(again) - 1);
    snprintf(bytes_arg, sizeof bytes_arg, "%zu", bytes);
    setenv("EXEC_PROG_EXEC_AGAIN", left, 1);
    execl("/proc/self/exe", "exec_prog", "echo", bytes_arg, (char*)NULL);
    return perror("exec again"), 2;
  }
  fprintf(stderr, "stdin: a socket of family %d, pid %d\n", name.ss_family, (int)getpid());
  size_t done = 0;
  if (getenv("EXEC_PROG_HALF_IN_CHILD")) {
    // sshd's monitor and its child: a fork child moves the first half and
    // exits, this process the rest.
    pid_t pid = fork();
    if (pid == 0) {
      size_t half = 0;
      exit(echo_bytes(bytes / 2, &half) || half != bytes / 2 ? 5 : 0);  // exit: the hand-over
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status)) {
      fprintf(stderr, "echo: the child failed (%#x)\n", status);
      return 5;
    }
    done = bytes / 2;
  }
  int rc = echo_bytes(bytes, &done);
  if (rc) return rc;
  fprintf(stderr, "echoed %zu\n", done);
  return done == bytes ? 0 : 4;
}

// Echoes from stdin to stdout until *done reaches `bytes` or the end.
static int echo_bytes(size_t bytes, size_t* done_out) {
  char buf[65536];
  size_t done = *done_out;
  while (done < bytes) {
    size_t want = bytes - done < sizeof buf ? bytes - done : sizeof buf;
    ssize_t n = read(0, buf, want);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      fprintf(stderr, "echo: read: %s after %zu\n", strerror(errno), done);
      return 3;
    }
    for (ssize_t off = 0; off < n;) {
      ssize_t w = write(1, buf + off, (size_t)(n - off));
      if (w < 0) {
        fprintf(stderr, "echo: write: %s after %zu\n", strerror(errno), done);
        return 3;
      }
      off += w;
    }
    done += (size_t)n;
  }
  *done_out = done;
  return 0;
}

// HOW spawn: the child is this program's "echo", started by posix_spawn
// with the connection dup2'd onto its stdin and stdout; then as exec.
static pid_t spawn_echo(int c, const char* bytes, const char* self) {
  extern char** environ;
  posix_spawn_file_actions_t fa;
  pid_t pid = -1;
  char* argv[] = {(char*)self, "echo", (char*)bytes, NULL};
  if (posix_spawn_file_actions_init(&fa) || posix_spawn_file_actions_adddup2(&fa, c, 0) ||
      posix_spawn_file_actions_adddup2(&fa, c, 1) ||
      posix_spawn(&pid, self, &fa, NULL, argv, environ))
    pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

// HOW spawninherit: the child, started by posix_spawn with no file
// actions, inherits the connection at its number and only looks at it
// ("look FD"); then as exec: the connection is still this process's.
// HOW vforkinherit: the same child made by vfork() and execl.
static int inherit_look(int c, const char* self, int by_vfork) {
  extern char** environ;
  char fd[16];
  snprintf(fd, sizeof fd, "%d", c);
  char* argv[] = {(char*)self, "look", fd, NULL};
  pid_t pid = -1;
  int status = 0;
  if (by_vfork) {
    pid = vfork();
    if (pid == 0) {
      execv(self, argv);
      _exit(127);
    }
  } else if (posix_spawn(&pid, self, NULL, NULL, argv, environ)) {
    pid = -1;
  }
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return perror("spawn"), -1;
  printf("looker exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  fflush(stdout);
  return 0;
}

// exec_prog look FD: what FD is here.
static int look(int fd) {
  struct stat st;
  struct sockaddr_storage name;
  socklen_t len = sizeof name;
  if (fstat(fd, &st) || !S_ISSOCK(st.st_mode) || getsockname(fd, (struct sockaddr*)&name, &len)) {
    fprintf(stderr, "fd %d: not a socket of the connection (%s)\n", fd, strerror(errno));
    return 1;
  }
  fprintf(stderr, "fd %d: a socket of family %d\n", fd, name.ss_family);
  return 0;
}

static struct sockaddr_in at_port(int port) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  const char* ip = getenv("EXEC_PROG_ADDR");
  inet_pton(AF_INET, ip ? ip : "127.0.0.1", &a.sin_addr);
  return a;
}

static int serve(int port, const char* bytes, const char* how, const char* self) {
  int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  struct sockaddr_in a = at_port(port);
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(l, (struct sockaddr*)&a, sizeof a) || listen(l, 1)) return perror("listen"), 2;
  printf("ready\n");
  fflush(stdout);
  int c = accept(l, NULL, NULL);
  if (c < 0) return perror("accept"), 2;
  // EXEC_PROG_AFTER: a file whose making lets the hand-over begin (the
  // script's sign that the peer has stopped), 20 s at most.
  const char* after = getenv("EXEC_PROG_AFTER");
  for (int i = 0; after && i < 2000 && access(after, F_OK) != 0; i++) usleep(10000);
  if ((strcmp(how, "spawninherit") == 0 || strcmp(how, "vforkinherit") == 0) &&
      inherit_look(c, self, how[0] == 'v'))
    return 2;
  pid_t pid = strcmp(how, "spawn") == 0 ? spawn_echo(c, bytes, self) : fork();
  if (pid < 0) return perror("fork or spawn"), 2;
  if (pid == 0) {
    close(l);
    if (dup2(c, 0) < 0 || dup2(0, 1) < 0) return perror("dup2"), 2;
    close(c);  // as sshd: the connection lives on as stdin and stdout only
    if (strcmp(how, "badexec") == 0) {
      execl("/nonexistent/program", "program", (char*)NULL);
      fprintf(stderr, "exec failed (%s): echoing here\n", strerror(errno));
      return echo(strtoul(bytes, NULL, 10));
    }
    if (strcmp(how, "noexec") == 0) return echo(strtoul(bytes, NULL, 10));
    if (strcmp(how, "cxx") == 0) {  // a C++ image echoes by std::cin and std::cout
      const char* cxx = getenv("EXEC_PROG_CXX");
      execl(cxx ? cxx : "/nonexistent", "cxx-echo", bytes, (char*)NULL);
      return perror("exec"), 2;
    }
    execl(self, self, "echo", bytes, (char*)NULL);
    return perror("exec"), 2;
  }
  if (strcmp(how, "parentkeeps") != 0) close(c);
  int status = 0;
  waitpid(pid, &status, 0);
  printf("child %s %d\n", WIFEXITED(status) ? "exit" : "signal",
         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  fflush(stdout);
  if (strcmp(how, "parentkeeps") == 0) {
    // The parent kept its copy: its echo of the rest, once the child is gone.
    if (dup2(c, 0) < 0 || dup2(c, 1) < 0) return perror("dup2"), 2;
    unsetenv("EXEC_PROG_HALF");
    return echo(strtoul(bytes, NULL, 10));
  }
  return 0;
}

static int send_all(int port, size_t bytes) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = at_port(port);
  if (connect(s, (struct sockaddr*)&a, sizeof a)) return perror("connect"), 2;
  fcntl(s, F_SETFL, O_NONBLOCK);
  size_t sent = 0, got = 0;
  int send_err = 0;
  unsigned char buf[65536];
  while (got < bytes) {
    struct pollfd p = {s, POLLIN | (sent < bytes ? POLLOUT : 0), 0};
    if (poll(&p, 1, 20000) <= 0) {
      printf("stuck: sent %zu got %zu\n", sent, got);
      return 1;
    }
    if (sent < bytes && (p.revents & POLLOUT)) {
      size_t n = bytes - sent < sizeof buf ? bytes - sent : sizeof buf;
      for (size_t i = 0; i < n; i++) buf[i] = pattern(sent + i);
      ssize_t w = send(s, buf, n, MSG_NOSIGNAL);
      if (w > 0) sent += (size_t)w;
      if (w < 0 && errno != EAGAIN) {  // what came before it is still to read
        send_err = errno;
        sent = bytes;
      }
    }
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = recv(s, buf, sizeof buf, 0);
      if (send_err && n <= 0 && (n == 0 || errno != EAGAIN)) {
        printf("got %zu then send error %s\n", got, strerror(send_err));
        return 1;
      }
      if (n == 0) {
        printf("got %zu then the end\n", got);
        return 1;
      }
      if (n < 0 && errno != EAGAIN) {
        printf("got %zu then error %s\n", got, strerror(errno));
        return 1;
      }
      for (ssize_t i = 0; i < n; i++)
        if (buf[i] != pattern(got + (size_t)i)) {
          printf("byte %zu differs\n", got + (size_t)i);
          return 1;
        }
      if (n > 0) got += (size_t)n;
    }
  }
  printf("echoed %zu intact\n", got);
  close(s);
  return 0;
}

// Connect, then stop (SIGSTOP) before anything else: a peer that makes
// no call while the other end execs; once continued, send a byte and say
// what came back.
static int hold(int port) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = at_port(port);
  if (connect(s, (struct sockaddr*)&a, sizeof a)) return perror("connect"), 2;
  printf("connected\n");
  fflush(stdout);
  raise(SIGSTOP);
  char c = 'h';
  ssize_t n = send(s, &c, 1, MSG_NOSIGNAL);
  if (n == 1) n = recv(s, &c, 1, 0);
  printf("after the stop: %s\n",
         n == 0 ? "the end" : n < 0 ? strerror(errno) : c == 'h' ? "echoed" : "other data");
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "hold") == 0) return hold(atoi(argv[2]));
  if (argc == 3 && strcmp(argv[1], "echo") == 0) return echo(strtoul(argv[2], NULL, 10));
  if (argc == 3 && strcmp(argv[1], "look") == 0) return look(atoi(argv[2]));
  if (argc == 5 && strcmp(argv[1], "serve") == 0)
    return serve(atoi(argv[2]), argv[3], argv[4], argv[0]);
  if (argc == 4 && strcmp(argv[1], "send") == 0)
    return send_all(atoi(argv[2]), strtoul(argv[3], NULL, 10));
  fprintf(stderr,
          "usage: exec_prog serve PORT BYTES exec|badexec|noexec|parentkeeps | echo BYTES | "
          "send PORT BYTES | "
          "hold PORT\n");
  return 2;
}
