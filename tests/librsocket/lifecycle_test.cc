// Lifecycle on every provider and address family: nothing is left behind
// after rclose (threads, descriptors, shared memory), and a peer killed
// without closing is reported as ECONNRESET, never as a hang.
//
// The killed peer is this same binary, re-executed as a helper child: a
// static initialiser below recognises RS_CONFORMANCE_CHILD and runs the
// child's part before GoogleTest starts, so no fork() happens after
// rsockets exist in the child.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "tests/librsocket/conformance.h"

namespace rsconf {
namespace {

// ---------------------------------------------------------------------------
// Helper child: connects to the parent's listener, sends "hello", reports
// 'R' on fd 3, then waits to be killed. Any failure reports 'F'.
// RS_CONFORMANCE_IOMAP: exposes a riomap target (and accepts the parent's).
// RS_CONFORMANCE_FLOOD: sends until killed, so data is in flight at death.
// RS_CONFORMANCE_BURST=N: sends N messages of 1000 bytes before reporting.

void run_peer_killed_child() {
  const char* prov = getenv("RS_CONFORMANCE_PROVIDER");
  const char* fam = getenv("RS_CONFORMANCE_FAMILY");
  const char* port = getenv("RS_CONFORMANCE_PORT");
  if (!prov || !fam || !port) child_fail("environment");
  select_provider(prov);
  int family = atoi(fam);
  Addr a = loopback(family, static_cast<uint16_t>(atoi(port)));
  int c = rsocket(family, SOCK_STREAM, 0);
  if (c < 0) child_fail("rsocket");
  const bool iomap = getenv("RS_CONFORMANCE_IOMAP");
  int one = 1;
  if (iomap && rsetsockopt(c, SOL_RDMA, RDMA_IOMAPSIZE, &one, sizeof one) < 0)
    child_fail("RDMA_IOMAPSIZE");
  if (rconnect(c, a.sa(), a.len) < 0) child_fail("rconnect");
  alignas(4096) static uint8_t target[4096];
  if (iomap && riomap(c, target, sizeof target, PROT_WRITE, 0, 0) != 0) child_fail("riomap");
  if (rsend(c, "hello", 5, 0) != 5) child_fail("rsend");  // also publishes the mapping
  if (getenv("RS_CONFORMANCE_CLOSE_AND_EXIT")) {
    // Closes with a long linger and exits at once: exit must wait for the
    // parent's close, or the kernel would end the connection under it.
    linger l{1, 30};
    if (rsetsockopt(c, SOL_SOCKET, SO_LINGER, &l, sizeof l) < 0) child_fail("SO_LINGER");
    if (rclose(c) < 0) child_fail("rclose");
    if (write(kChildNotifyFd, "R", 1) != 1) _exit(3);
    exit(0);
  }
  if (const char* burst = getenv("RS_CONFORMANCE_BURST")) {
    std::vector<char> msg(1000, 'b');
    for (int i = atoi(burst); i > 0; i--)
      if (rsend(c, msg.data(), msg.size(), 0) != static_cast<ssize_t>(msg.size()))
        child_fail("burst");
  }
  if (write(kChildNotifyFd, "R", 1) != 1) _exit(3);
  if (getenv("RS_CONFORMANCE_FLOOD")) {
    std::vector<char> chunk(1 << 16, 'c');
    while (rsend(c, chunk.data(), chunk.size(), 0) > 0) {
    }
  }
  for (;;) pause();  // killed by the parent; never closes the rsocket
}

struct ChildMode {
  ChildMode() {
    const char* mode = getenv("RS_CONFORMANCE_CHILD");
    if (mode && strcmp(mode, "peer_killed") == 0) run_peer_killed_child();
  }
} g_child_mode;

// Starts the peer_killed child for this provider and family; `extra` adds
// NAME=value settings (the RS_CONFORMANCE_* options above).
pid_t spawn_peer(const char* provider, int family, uint16_t port, KFd* notify,
                 const std::vector<std::string>& extra = {}) {
  std::vector<std::string> env = {std::string("RS_CONFORMANCE_PROVIDER=") + provider,
                                  "RS_CONFORMANCE_FAMILY=" + std::to_string(family),
                                  "RS_CONFORMANCE_PORT=" + std::to_string(port)};
  env.insert(env.end(), extra.begin(), extra.end());
  return spawn_child("peer_killed", env, notify);
}

class LifecycleTest : public ConnTest {};

// Starts the helper child, accepts its connection and reads its "hello".
// `setup` runs on the listener (the accepted socket inherits it).
void accept_child(const char* provider, int family, Listener* l, pid_t* pid, RFd* s,
                  const std::vector<std::string>& extra = {},
                  const std::function<void(int)>& setup = {}) {
  ASSERT_NO_FATAL_FAILURE(make_listener(family, l, setup));
  KFd notify;
  *pid = spawn_peer(provider, family, l->addr.port(), &notify, extra);
  ASSERT_GT(*pid, 0) << strerror(errno);
  std::string report;
  ASSERT_TRUE(child_ready(notify, &report)) << "child: " << report;
  ASSERT_TRUE(wait_events(l->fd, POLLIN, 20000) & POLLIN);
  s->reset(raccept(l->fd, nullptr, nullptr));
  ASSERT_GE(s->get(), 0) << strerror(errno);
  char b[8] = {};
  size_t got = 0;
  int fd = *s;
  bool ok =
      run_with_timeout([&] { got = recv_all(fd, b, 5); }, 20, [&] { rshutdown(fd, SHUT_RDWR); });
  ASSERT_TRUE(ok) << "the child's first bytes (sent right after its rconnect, before our "
                     "raccept) never arrived";
  ASSERT_EQ(5u, got);
  ASSERT_EQ(0, memcmp(b, "hello", 5));
}

// After an abrupt loss: rsend fails too (ECONNRESET, or EPIPE), and rpoll
// reports the socket hung up, its calls no longer blocking (POLLIN,
// POLLOUT: as Linux after a reset).
void expect_dead_connection(int s) {
  ssize_t w = 0;
  for (int i = 0; i < 100 && w >= 0; i++) w = rsend(s, "x", 1, MSG_DONTWAIT);
  EXPECT_EQ(-1, w);
  EXPECT_TRUE(errno == ECONNRESET || errno == EPIPE) << strerror(errno);
  pollfd pf{s, POLLIN | POLLOUT, 0};
  EXPECT_EQ(1, rpoll(&pf, 1, 0));
  EXPECT_TRUE(pf.revents & POLLHUP) << "revents " << pf.revents;
  EXPECT_EQ(POLLIN | POLLOUT, pf.revents & (POLLIN | POLLOUT)) << "revents " << pf.revents;
}

// Kills the child while this thread is blocked in rrecv on `s`; true when
// rrecv returned (its result in *n, errno in *e) before the bounded wait.
bool kill_under_blocked_rrecv(Reaper* child, int s, ssize_t* n, int* e) {
  std::atomic<bool> entered{false};
  std::thread killer([&] {
    while (!entered) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    kill_and_reap(child->pid);
    child->pid = -1;
  });
  char b[8];
  bool in_time = run_with_timeout(
      [&] {
        entered = true;
        *n = rrecv(s, b, sizeof b, 0);
        *e = errno;
      },
      20, [&] { rshutdown(s, SHUT_RDWR); });
  killer.join();
  return in_time;
}

// Killed with nothing of ours unread: Linux's TCP would send a FIN, so
// the reader gets its end of stream; a send then finds the peer gone. On
// verbs a reset (rsocket(7): the fabric does not say how the peer ended).
TEST_P(LifecycleTest, PeerKilledWhileBlockedInRrecvIsEndOfStream) {
  Listener l;
  Reaper child;
  RFd s;
  ASSERT_NO_FATAL_FAILURE(accept_child(provider(), family(), &l, &child.pid, &s));
  ssize_t n = -2;
  int e = 0;
  ASSERT_TRUE(kill_under_blocked_rrecv(&child, s, &n, &e))
      << "rrecv stayed blocked after the peer process was killed";
  if (strcmp(provider(), "verbs") == 0) {
    EXPECT_EQ(-1, n);
    EXPECT_EQ(ECONNRESET, e) << strerror(e);
  } else {
    EXPECT_EQ(0, n) << "errno " << strerror(e);
  }
  expect_dead_connection(s);
}

// Killed after its last sends, having read all we sent: Linux's reader
// gets every byte, then its end of stream. Reading them frees our
// receive buffer, and the credit updates that says so meet the dead
// peer's transport, whose reset must not turn the end into one. On verbs
// a reset.
TEST_P(LifecycleTest, PeerKilledAfterItsLastSendsIsTheirBytesThenEndOfStream) {
  Listener l;
  Reaper child;
  RFd s;
  constexpr int kMessages = 60;
  ASSERT_NO_FATAL_FAILURE(accept_child(provider(), family(), &l, &child.pid, &s,
                                       {"RS_CONFORMANCE_BURST=" + std::to_string(kMessages)}));
  kill_and_reap(child.pid);
  child.pid = -1;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // its transport's end arrived
  size_t got = 0;
  ssize_t n = -2;
  int e = 0;
  const bool in_time = run_with_timeout(
      [&] {
        char b[700];  // message by message in two reads, each freeing buffer
        while ((n = rrecv(s, b, sizeof b, 0)) > 0) got += static_cast<size_t>(n);
        e = errno;
      },
      20, [&] { rshutdown(s, SHUT_RDWR); });
  ASSERT_TRUE(in_time) << "rrecv blocked on a connection whose peer is dead";
  if (strcmp(provider(), "verbs") == 0) {
    EXPECT_EQ(-1, n);
    EXPECT_EQ(ECONNRESET, e) << strerror(e);
  } else {
    EXPECT_EQ(kMessages * 1000u, got);
    EXPECT_EQ(0, n) << "errno " << strerror(e);
  }
}

// The same with this side reading while the peer, flooding, dies: the
// credit updates its reads send meet the dead peer's transport, which
// resets them (Linux's reader, sending nothing, gets the end). Every
// provider said ECONNRESET after about 128 KiB before.
TEST_P(LifecycleTest, PeerKilledWhileItsLastBytesAreReadIsEndOfStream) {
  Listener l;
  Reaper child;
  RFd s;
  ASSERT_NO_FATAL_FAILURE(
      accept_child(provider(), family(), &l, &child.pid, &s, {"RS_CONFORMANCE_FLOOD=1"}));
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    kill_and_reap(child.pid);
    child.pid = -1;
  });
  size_t got = 0;
  ssize_t n = -2;
  int e = 0;
  const bool in_time = run_with_timeout(
      [&] {
        char b[300];  // slowly, each read freeing buffer
        while ((n = rrecv(s, b, sizeof b, 0)) > 0) {
          got += static_cast<size_t>(n);
          std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
        e = errno;
      },
      20, [&] { rshutdown(s, SHUT_RDWR); });
  killer.join();
  ASSERT_TRUE(in_time) << "rrecv blocked on a connection whose peer is dead";
  if (strcmp(provider(), "verbs") == 0) {
    EXPECT_EQ(-1, n);
    EXPECT_EQ(ECONNRESET, e) << strerror(e);
  } else {
    EXPECT_GT(got, 0u);
    EXPECT_EQ(0, n) << "errno " << strerror(e) << " after " << got;
  }
}

TEST_P(LifecycleTest, PeerKilledWithUnreadDataIsEconnreset) {
  Listener l;
  Reaper child;
  RFd s;
  ASSERT_NO_FATAL_FAILURE(accept_child(provider(), family(), &l, &child.pid, &s));
  // The child never reads this: its kernel resets the connection.
  std::vector<uint8_t> junk(3000, 0x42);
  ASSERT_EQ(junk.size(), send_all(s, junk.data(), junk.size()));
  kill_and_reap(child.pid);
  child.pid = -1;
  ssize_t n = -2;
  int e = 0;
  bool in_time = run_with_timeout(
      [&] {
        char b[8];
        n = rrecv(s, b, sizeof b, 0);
        e = errno;
      },
      20, [&] { rshutdown(s, SHUT_RDWR); });
  ASSERT_TRUE(in_time) << "rrecv blocked on a connection whose peer is dead";
  EXPECT_EQ(-1, n);
  EXPECT_EQ(ECONNRESET, e) << strerror(e);
  expect_dead_connection(s);
  int err = -1;
  socklen_t len = sizeof err;
  EXPECT_EQ(0, rgetsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len));
}

TEST_P(LifecycleTest, NothingLeftAfterClose) {
  const Snapshot before = Snapshot::settled();
  {
    Listener l;
    auto iomap1 = [](int fd) {
      int one = 1;
      rsetsockopt(fd, SOL_RDMA, RDMA_IOMAPSIZE, &one, sizeof one);
    };
    ASSERT_NO_FATAL_FAILURE(make_listener(family(), &l, iomap1));
    std::vector<uint8_t> target(4096);  // outlives the sockets below
    std::vector<RFd> clients(4), servers(4);
    for (int i = 0; i < 4; i++)
      ASSERT_NO_FATAL_FAILURE(connect_to(family(), l, &clients[i], &servers[i], iomap1));
    // Traffic both ways on each, with a poller and non-blocking sockets too.
    for (int i = 0; i < 4; i++) {
      std::thread t([&] { send_pattern(servers[i], 300000, i, 65536, true); });
      size_t bad;
      EXPECT_EQ(300000u, recv_pattern(clients[i], 300000, i, 65536, true, &bad));
      t.join();
      ASSERT_EQ(3, rsend(clients[i], "abc", 3, 0));
      EXPECT_TRUE(wait_events(servers[i], POLLIN) & POLLIN);
    }
    ASSERT_EQ(0, rfcntl(clients[1], F_SETFL, O_NONBLOCK));
    // A mapping (when the provider supports it; the iomap tests check that).
    if (riomap(servers[2], target.data(), target.size(), PROT_WRITE, 0, 0) == 0)
      rsend(servers[2], "m", 1, 0);
    // Ways to end: shutdown first, close with data unread, plain close.
    rshutdown(clients[0], SHUT_WR);
    rshutdown(servers[3], SHUT_RDWR);
    // A connection that is never raccepted, and a non-blocking connect
    // that may still be in progress when everything closes.
    RFd queued(rsocket(family(), SOCK_STREAM, 0));
    ASSERT_GE(queued.get(), 0);
    ASSERT_EQ(0, rconnect(queued, l.addr.sa(), l.addr.len)) << strerror(errno);
    RFd pending(rsocket(family(), SOCK_STREAM | SOCK_NONBLOCK, 0));
    ASSERT_GE(pending.get(), 0);
    int rc = rconnect(pending, l.addr.sa(), l.addr.len);
    EXPECT_TRUE(rc == 0 || errno == EINPROGRESS) << strerror(errno);
    // Listener first, then the sockets (the scope ends in reverse order of
    // declaration: pending, queued, servers, clients).
    l.fd.reset();
  }
  expect_nothing_left(before, "after every rclose");
}

// The survivor of a killed peer, once it rcloses, keeps nothing of that
// connection either, however the peer died.
TEST_P(LifecycleTest, NothingLeftAfterPeerKilled) {
  Snapshot before = Snapshot::settled();
  {
    // Killed while we wait in rrecv: we see the loss, then close.
    Listener l;
    Reaper child;
    RFd s;
    ASSERT_NO_FATAL_FAILURE(accept_child(provider(), family(), &l, &child.pid, &s));
    ssize_t n = -2;
    int e = 0;
    ASSERT_TRUE(kill_under_blocked_rrecv(&child, s, &n, &e))
        << "rrecv stayed blocked after the peer process was killed";
    EXPECT_EQ(strcmp(provider(), "verbs") == 0 ? -1 : 0, n) << "errno " << strerror(e);
  }
  expect_nothing_left(before, "after the peer was killed under a blocked rrecv");

  before = Snapshot::settled();
  {
    Listener l;
    Reaper child;
    RFd s;
    ASSERT_NO_FATAL_FAILURE(
        accept_child(provider(), family(), &l, &child.pid, &s, {"RS_CONFORMANCE_FLOOD=1"}));
    // Killed with data in flight both ways: our sends queue (the child
    // never reads), the child's are read in part.
    std::vector<char> chunk(1 << 16, 's');
    for (int i = 0; i < 1000 && rsend(s, chunk.data(), chunk.size(), MSG_DONTWAIT) > 0; i++) {
    }
    ASSERT_EQ(chunk.size(), recv_all(s, chunk.data(), chunk.size()));
    // A linger far beyond the bounded wait: only noticing the death ends it.
    linger lg{1, 30};
    ASSERT_EQ(0, rsetsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof lg)) << strerror(errno);
    kill_and_reap(child.pid);
    child.pid = -1;
    s.reset();  // before any call has seen the loss
  }
  expect_nothing_left(before, "after the peer was killed with data in flight both ways");

  before = Snapshot::settled();
  {
    alignas(4096) static uint8_t target[4096];  // outlives the socket
    auto iomap1 = [](int fd) {
      int one = 1;
      ASSERT_EQ(0, rsetsockopt(fd, SOL_RDMA, RDMA_IOMAPSIZE, &one, sizeof one)) << strerror(errno);
    };
    Listener l;
    Reaper child;
    RFd s;
    ASSERT_NO_FATAL_FAILURE(
        accept_child(provider(), family(), &l, &child.pid, &s, {"RS_CONFORMANCE_IOMAP=1"}, iomap1));
    // Killed with mappings both ways: ours (published by the "m"), and the
    // child's, written into.
    ASSERT_EQ(0, riomap(s, target, sizeof target, PROT_WRITE, 0, 0)) << strerror(errno);
    ASSERT_EQ(1, rsend(s, "m", 1, 0)) << strerror(errno);
    EXPECT_EQ(5u, riowrite(s, "iowr!", 5, 0, 0)) << strerror(errno);
    kill_and_reap(child.pid);
    child.pid = -1;
    EXPECT_TRUE(wait_events(s, POLLIN) & (POLLERR | POLLHUP)) << "the loss is not reported";
  }
  expect_nothing_left(before, "after the peer was killed with mappings set");
}

// Threads of the linger service (librsocket/linger_service.cc names them).
int linger_threads() {
  int n = 0;
  for (const std::string& t : list_dir("/proc/self/task")) {
    KFd f(open(("/proc/self/task/" + t + "/comm").c_str(), O_RDONLY | O_CLOEXEC));
    char comm[32] = {};
    if (f.get() >= 0 && read(f, comm, sizeof comm - 1) > 0 && strncmp(comm, "ss-linger", 9) == 0)
      n++;
  }
  return n;
}

// Waits (bounded) until no linger thread is left (earlier tests' closes).
bool no_linger_within(int seconds) {
  for (int i = 0; i < seconds * 20 && linger_threads() > 0; i++)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return linger_threads() == 0;
}

// rclose while the peer may still be reading: our side says SHUTDOWN and
// waits for the peer's close (upstream's rpoll reports POLLHUP as soon as
// a DISCONNECT arrives, data unread or not, and programs stop there).
TEST_P(LifecycleTest, CloseLingersUntilPeerCloses) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  linger l{1, 30};  // far beyond this test: only the peer's close ends it
  ASSERT_EQ(0, rsetsockopt(p.server, SOL_SOCKET, SO_LINGER, &l, sizeof l)) << strerror(errno);
  ASSERT_TRUE(no_linger_within(10)) << "an earlier test's linger does not end";
  ASSERT_EQ(4, rsend(p.server, "tail", 4, 0));
  p.server.reset();  // rclose
  EXPECT_EQ(1, linger_threads()) << "no linger after rclose";
  char b[8];
  ASSERT_EQ(4u, recv_all(p.client, b, 4));
  EXPECT_EQ(0, memcmp(b, "tail", 4));
  errno = 0;
  EXPECT_EQ(0, rrecv(p.client, b, sizeof b, 0))
      << "no EOF after the peer's close: " << strerror(errno);
  short rev = wait_events(p.client, POLLIN);
  EXPECT_EQ(POLLIN, rev) << "EOF, and no hang-up while the closed side waits for us";
  p.client.reset();
  EXPECT_TRUE(no_linger_within(10))
      << "the linger went on after the peer closed (its limit is 30 s)";
}

// A process that closes and exits: its exit waits for the linger (else
// the kernel would tear the connection down with the process, and an
// upstream peer would see POLLHUP before reading the last bytes).
TEST_P(LifecycleTest, ExitWaitsForLingeringClose) {
  Listener l;
  ASSERT_NO_FATAL_FAILURE(make_listener(family(), &l));
  KFd notify;
  pid_t pid = spawn_peer(GetParam().provider, family(), l.addr.port(), &notify,
                         {"RS_CONFORMANCE_CLOSE_AND_EXIT=1"});
  ASSERT_GT(pid, 0) << strerror(errno);
  std::string report;
  ASSERT_TRUE(child_ready(notify, &report)) << "child: " << report;
  ASSERT_TRUE(wait_events(l.fd, POLLIN, 20000) & POLLIN);
  RFd s(raccept(l.fd, nullptr, nullptr));
  ASSERT_GE(s.get(), 0) << strerror(errno);
  char b[8] = {};
  ASSERT_EQ(5u, recv_all(s, b, 5));
  EXPECT_EQ(0, memcmp(b, "hello", 5));
  EXPECT_EQ(0, rrecv(s, b, sizeof b, 0)) << strerror(errno);
  // The report pipe closes when the child is gone: not while we are open.
  pollfd pf{notify, POLLIN, 0};
  EXPECT_EQ(0, poll(&pf, 1, 1000)) << "the child exited under its lingering connection";
  s.reset();
  pf.revents = 0;
  int gone = poll(&pf, 1, 10000);
  EXPECT_EQ(1, gone) << "the child still lingers after our close";
  if (gone != 1) kill(pid, SIGKILL);
  int st = 0;
  pid_t r = waitpid(pid, &st, 0);  // it is gone or going: the pipe closed
  ASSERT_EQ(pid, r) << strerror(errno);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "child status " << st;
}

// One thread shuts a socket down (and may sleep there, waiting for its
// sends to drain) while another closes it, as a reader woken by that
// shutdown would: the close must not free what the shutdown still uses.
TEST_P(LifecycleTest, RcloseWhileAnotherThreadShutsDown) {
  for (int round = 0; round < 2; round++) {
    // Windows larger than what the kernel buffers on loopback, and a peer
    // that does not read: on tcp the frames queue behind a full kernel
    // socket, and the shutdown waits for them to drain.
    auto big = [](int fd) {
      int v = 8 << 20;
      rsetsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
      rsetsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
    };
    Pair p;
    ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p, big, big));
    ASSERT_EQ(0, rfcntl(p.client, F_SETFL, O_NONBLOCK));
    std::vector<char> chunk(1 << 16, 'z');
    for (int i = 0; i < 1000 && rsend(p.client, chunk.data(), chunk.size(), 0) > 0; i++) {
    }
    const int fd = p.client.release();
    std::atomic<bool> in_shutdown{false};
    std::thread shut([&] {
      in_shutdown = true;
      rshutdown(fd, SHUT_RDWR);
    });
    while (!in_shutdown) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(round * 5));
    EXPECT_EQ(0, rclose(fd)) << strerror(errno);
    shut.join();
  }
}

// SO_LINGER {1, 0}: no waiting, the peer is told DISCONNECT at once (as
// upstream does always).
TEST_P(LifecycleTest, ZeroLingerDisconnectsAtOnce) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  linger l{1, 0};
  ASSERT_EQ(0, rsetsockopt(p.server, SOL_SOCKET, SO_LINGER, &l, sizeof l)) << strerror(errno);
  ASSERT_TRUE(no_linger_within(10)) << "an earlier test's linger does not end";
  ASSERT_EQ(1, rsend(p.server, "x", 1, 0));
  p.server.reset();
  EXPECT_EQ(0, linger_threads()) << "a linger despite SO_LINGER {1, 0}";
  char b;
  ASSERT_EQ(1u, recv_all(p.client, &b, 1));  // the data still comes first
  short rev = wait_events(p.client, POLLHUP, 10000);
  EXPECT_TRUE(rev & POLLHUP) << "revents " << rev;
}

TEST_P(LifecycleTest, RepeatedConnectCloseDoesNotGrow) {
  // Warm up once (lazily created process-wide state), then 50 cycles.
  {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  }
  const Snapshot before = Snapshot::settled();
  for (int i = 0; i < 50; i++) {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
    ASSERT_EQ(1, rsend(p.client, "c", 1, 0));
    char b;
    ASSERT_EQ(1, rrecv(p.server, &b, 1, 0));
  }
  Snapshot after = Snapshot::take();
  for (int i = 0; i < 100 && (after.threads != before.threads || after.fds != before.fds); i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    after = Snapshot::take();
  }
  EXPECT_EQ(before.threads, after.threads);
  EXPECT_EQ(before.fds, after.fds);
  EXPECT_EQ(before.maps.size(), after.maps.size()) << join_lines(after.maps);
}

INSTANTIATE_TEST_SUITE_P(Providers, LifecycleTest, ::testing::ValuesIn(all_params()), param_name);

}  // namespace
}  // namespace rsconf
