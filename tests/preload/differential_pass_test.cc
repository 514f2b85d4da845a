// A connection passed to another process in a message (SCM_RIGHTS), as
// Node.js's cluster primary passes each connection it accepted to a
// worker: the receiver reads and writes on it, and gets exactly the
// descriptors sent, truncated as the kernel truncates them when its
// control bytes have no room. Under librspreload the connection is an
// rsocket, built back in the receiver (differential.sh counts it there).
#include <fcntl.h>
#include <sys/wait.h>

#include "tests/preload/pair.h"

namespace differential {
namespace {

// A one-byte message with control bytes for up to 4 descriptors.
struct Message {
  char byte = 'x';
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))]{};
  msghdr m{};
  explicit Message(size_t control_len) {
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = control_len;
  }
};

// fds[0..n) sent on unix socket u, by sendmsg or (batch) by sendmmsg
// after a message without descriptors.
void send_fds(int u, const int* fds, int n, bool batch) {
  Message msg(CMSG_SPACE(n * sizeof(int)));
  cmsghdr* c = CMSG_FIRSTHDR(&msg.m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(n * sizeof(int));
  memcpy(CMSG_DATA(c), fds, n * sizeof(int));
  if (!batch) {
    ASSERT_EQ(sendmsg(u, &msg.m, 0), 1) << strerror(errno);
    return;
  }
  Message plain(0);
  plain.m.msg_control = nullptr;
  mmsghdr v[2]{};
  v[0].msg_hdr = plain.m;
  v[1].msg_hdr = msg.m;
  ASSERT_EQ(sendmmsg(u, v, 2, 0), 2) << strerror(errno);
  EXPECT_EQ(v[0].msg_len + v[1].msg_len, 2u);
}

// In the child: one message from u with room for `room` (1 to 4)
// descriptors. Exit status: 0 when the n descriptors expected arrived
// (n <= room, else room of them and MSG_CTRUNC), the one at `conn` (if
// below n) echoing "ping" as "pong"; 10 + a step number otherwise.
// With `batch`, the message without descriptors before it and this one
// come in one recvmmsg (a timeout bounds it, looked at after each).
int receive_and_echo(int u, int room, int expected, int conn, bool batch) {
  Message msg(CMSG_LEN(room * sizeof(int)));  // CMSG_SPACE's padding would fit one more
  msghdr& m = msg.m;
  if (batch) {
    Message first(CMSG_LEN(room * sizeof(int)));
    mmsghdr v[2]{};
    v[0].msg_hdr = first.m;
    v[1].msg_hdr = m;
    timespec tmo{10, 0};
    if (recvmmsg(u, v, 2, 0, &tmo) != 2) return 17;
    if (v[0].msg_len != 1 || v[0].msg_hdr.msg_controllen != 0 || v[1].msg_len != 1) return 18;
    m = v[1].msg_hdr;
  } else if (recvmsg(u, &m, 0) != 1) {
    return 10;
  }
  const int got = expected < room ? expected : room;
  if (!(m.msg_flags & MSG_CTRUNC) != (expected <= room)) return 11;
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  if (!c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(got * sizeof(int))) return 13;
  if (CMSG_NXTHDR(&m, c)) return 14;
  int fds[4];
  memcpy(fds, CMSG_DATA(c), got * sizeof(int));
  if (conn >= got) return 0;
  const int s = fds[conn];
  timeval tv{10, 0};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char b[4];
  if (read_full(s, b, 4) != 4 || memcmp(b, "ping", 4)) return 15;
  if (send(s, "pong", 4, 0) != 4) return 16;
  close(s);
  return 0;
}

// An accepted connection (with, before or after it, a pipe) passed to a
// forked child whose control bytes have room for `room` descriptors; the
// child's status. The client then reads "pong" for its "ping" when the
// connection arrived (`arrives`), else, once the child is gone, an end of
// stream (its last holder dropped it, nothing unread).
void pass_accepted(int room, bool pipe_first, bool arrives, int* status, bool batch = false) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(&p));
  int u[2], pipefd[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, u), 0);
  ASSERT_EQ(pipe(pipefd), 0);
  const int conn = pipe_first ? 1 : 0;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(20);
    close(u[0]);
    _exit(receive_and_echo(u[1], room, 2, conn, batch));
  }
  close(u[1]);
  const int fds[2] = {pipe_first ? pipefd[0] : p.s, pipe_first ? p.s : pipefd[0]};
  send_fds(u[0], fds, 2, batch);
  // The sender's copy closes, as the cluster primary closes its handle.
  close(p.s);
  p.s = -1;
  timeval tv{10, 0};
  setsockopt(p.c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char b[4];
  if (arrives) {
    ASSERT_EQ(send(p.c, "ping", 4, 0), 4);
    ASSERT_EQ(read_full(p.c, b, 4), 4) << strerror(errno);
    EXPECT_EQ(memcmp(b, "pong", 4), 0);
  }
  ASSERT_EQ(waitpid(pid, status, 0), pid);
  if (!arrives) {
    EXPECT_EQ(recv(p.c, b, 4, 0), 0) << strerror(errno);
  }
  for (int fd : {u[0], pipefd[0], pipefd[1]}) close(fd);
}

TEST(DifferentialPass, AConnectionPassedToAnotherProcessCarriesOn) {
  int status = -1;
  ASSERT_NO_FATAL_FAILURE(pass_accepted(4, false, true, &status));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// By the batch calls: sendmmsg in the parent, recvmmsg in the child.
TEST(DifferentialPass, TheBatchCallsPassAConnectionToo) {
  int status = -1;
  ASSERT_NO_FATAL_FAILURE(pass_accepted(4, false, true, &status, /*batch=*/true));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST(DifferentialPass, TheDescriptorsThatFitArriveTheRestAreDropped) {
  int status = -1;
  // Room for one: the connection first arrives, the pipe is dropped.
  ASSERT_NO_FATAL_FAILURE(pass_accepted(1, false, true, &status));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  // The pipe first: the connection is dropped, and with its last holder
  // gone the client reads an end of stream.
  ASSERT_NO_FATAL_FAILURE(pass_accepted(1, true, false, &status));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// A listening socket passed to another process, the sender's copy then
// closed (a server handing its listener over, as HAProxy's reload does):
// it arrives as blocking as the program left it, and the receiver's
// blocking accept waits for a client of the kernel's (a socket
// duplicated before it connects stays on kernel TCP) and serves it.
TEST(DifferentialPass, AListenerPassedKeepsItsBlockingAccept) {
  int u[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, u), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(20);
    close(u[0]);
    Message msg(CMSG_LEN(sizeof(int)));
    if (recvmsg(u[1], &msg.m, 0) != 1) _exit(10);
    cmsghdr* c = CMSG_FIRSTHDR(&msg.m);
    if (!c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int))) _exit(11);
    int l;
    memcpy(&l, CMSG_DATA(c), sizeof l);
    if (fcntl(l, F_GETFL) & O_NONBLOCK) _exit(12);
    const int s = accept(l, nullptr, nullptr);
    if (s < 0) _exit(13);
    timeval tv{10, 0};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char b[4];
    if (read_full(s, b, 4) != 4 || memcmp(b, "ping", 4)) _exit(14);
    if (send(s, "pong", 4, 0) != 4) _exit(15);
    close(s);
    _exit(0);
  }
  close(u[1]);
  uint16_t port = 0;
  const int l = make_listener(0, &port);
  ASSERT_GE(l, 0) << strerror(errno);
  ASSERT_NO_FATAL_FAILURE(send_fds(u[0], &l, 1, false));
  close(l);
  usleep(100 * 1000);  // the child asleep in accept, mostly
  const int c = socket(AF_INET, SOCK_STREAM, 0);
  const int d = dup(c);
  sockaddr_in a = loopback(port);
  ASSERT_EQ(connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
  timeval tv{10, 0};
  setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ASSERT_EQ(send(c, "ping", 4, 0), 4);
  char b[4];
  ASSERT_EQ(read_full(c, b, 4), 4) << strerror(errno);
  EXPECT_EQ(memcmp(b, "pong", 4), 0);
  int status = -1;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  for (int fd : {c, d, u[0]}) close(fd);
}

}  // namespace
}  // namespace differential
