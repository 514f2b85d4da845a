// Fork: rsockets inherited through fork() behave as kernel sockets do.
// A listener shared by pre-forked children accepts in whichever child
// calls raccept (nginx, apache prefork), with the parent keeping its copy
// or closing it; a connection inherited by a child goes on working in one
// process after the other closed its copy (PostgreSQL's fork after
// accept, and the reverse). Nothing is left behind once the children exit.
//
// This test process is the forking server, as those servers are; the
// children use only the rsocket API and leave with _exit. A child that
// hangs is ended by alarm() (a failure: its exit status says so); the
// parent's calls are bounded by run_with_timeout.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/librsocket/conformance.h"
#include "tests/librsocket/fork_util.h"

namespace rsconf {
namespace {

constexpr size_t kBytes = 16384;         // each way, per connection
constexpr uint32_t kConnections = 20;    // served by the pre-forked children
constexpr uint32_t kQuit = 0xFFFFFFFFu;  // tells a worker to leave
constexpr int kCallSeconds = 20;         // the parent's bound on its part

// The server's side of one exchange: the client's index, its pattern
// (checked), a reply pattern. 0, or which step failed. A connection whose
// index is `not_ours` is another process's (14).
int serve_one(int c, uint32_t* index, uint32_t not_ours = kQuit) {
  if (recv_all(c, index, sizeof *index) != sizeof *index) return 10;
  if (*index == not_ours && not_ours != kQuit) return 14;
  if (*index == kQuit) return 0;
  std::vector<uint8_t> b(kBytes);
  if (recv_all(c, b.data(), kBytes) != kBytes) return 11;
  if (check_pattern(b.data(), kBytes, *index) != SIZE_MAX) return 12;
  fill_pattern(b.data(), kBytes, *index + 1000);
  if (send_all(c, b.data(), kBytes) != kBytes) return 13;
  return 0;
}

// A pre-forked worker: accepts and serves until told to quit. With
// `use_rpoll`, the listener is non-blocking and rpoll says when to accept
// (as event-driven servers do).
int worker(int listener, bool use_rpoll, uint32_t not_ours = kQuit) {
  if (use_rpoll && rfcntl(listener, F_SETFL, O_NONBLOCK) < 0) return 20;
  for (;;) {
    if (use_rpoll) {
      pollfd p{listener, POLLIN, 0};
      if (rpoll(&p, 1, -1) < 0) return 21;
    }
    int c = raccept(listener, nullptr, nullptr);
    if (c < 0 && use_rpoll && errno == EAGAIN) continue;  // another worker took it
    if (c < 0) return 22;
    uint32_t index = 0;
    int rc = serve_one(c, &index, not_ours);
    rclose(c);
    if (rc || index == kQuit) {
      rclose(listener);
      return rc;
    }
  }
}

// The client's side of one exchange on `c`; then the server's close must
// arrive as an orderly end (EOF). "" or what failed.
// `index_sent`: the index went already.
std::string client_one(int c, uint32_t index, bool index_sent = false, bool then_end = true) {
  if (!index_sent && send_all(c, &index, sizeof index) != sizeof index)
    return "rsend index: " + std::string(strerror(errno));
  if (index == kQuit) return "";
  std::vector<uint8_t> b(kBytes);
  fill_pattern(b.data(), kBytes, index);
  int err = 0;
  if (send_all(c, b.data(), kBytes, &err) != kBytes) return "rsend: " + std::string(strerror(err));
  if (recv_all(c, b.data(), kBytes, &err) != kBytes)
    return "reply cut short: " + std::string(err ? strerror(err) : "EOF");
  if (check_pattern(b.data(), kBytes, index + 1000) != SIZE_MAX) return "reply corrupted";
  if (!then_end) return "";
  char x;
  ssize_t n = rrecv(c, &x, 1, 0);
  if (n != 0)
    return "no orderly end after the reply: " + std::string(n < 0 ? strerror(errno) : "data");
  return "";
}

// Connects to `a` and runs one exchange; *current names the socket so that
// a stuck call can be shut down from outside.
std::string exchange(int family, const Addr& a, uint32_t index, std::atomic<int>* current) {
  RFd c(rsocket(family, SOCK_STREAM, 0));
  if (c < 0) return "rsocket: " + std::string(strerror(errno));
  current->store(c);
  std::string failed;
  if (rconnect(c, a.sa(), a.len) < 0)
    failed = "rconnect: " + std::string(strerror(errno));
  else
    failed = client_one(c, index);
  current->store(-1);
  return failed.empty() ? "" : "connection " + std::to_string(index) + ": " + failed;
}

// One exchange over a connected pair this process holds, the server's
// side on a thread; its close is the last, so the client sees an orderly
// end. `after`: what came before, for the messages.
void expect_exchange(int client, RFd* server, uint32_t index, const char* after) {
  const int sfd = *server;
  std::string failed;
  int served = -1;
  bool in_time = run_with_timeout(
      [&] {
        std::thread t([&] {
          uint32_t got = 0;
          served = serve_one(sfd, &got);
          server->reset();
        });
        failed = client_one(client, index);
        t.join();
      },
      kCallSeconds,
      [&] {
        rshutdown(client, SHUT_RDWR);
        rshutdown(sfd, SHUT_RDWR);
      });
  EXPECT_TRUE(in_time) << "the exchange " << after << " hung";
  EXPECT_EQ(0, served) << "the server's side failed " << after;
  EXPECT_EQ("", failed) << after;
}

class ForkTest : public ConnTest {
 protected:
  bool on_verbs() const { return strcmp(provider(), "verbs") == 0; }
  // rsocket(7), Fork: on verbs, the rdma_cm ids and queue pairs live in
  // the files of the process that made them; a child cannot use them
  // (the *Verbs* tests below show the error it gets instead).
  static std::string stays(const char* what) {
    return std::string("verbs: ") + what +
           " stay with the process that made them (rsocket(7), Fork)";
  }

  // kConnections exchanges with whichever worker serves `l`, then `quits`
  // quit messages; "" or what failed (a hang: after kCallSeconds).
  std::string run_clients(const Listener& l, int quits) {
    std::atomic<int> current{-1};
    std::string failed;
    bool in_time = run_with_timeout(
        [&] {
          for (uint32_t i = 0; i < kConnections && failed.empty(); i++)
            failed = exchange(family(), l.addr, i, &current);
          for (int k = 0; k < quits && failed.empty(); k++)
            failed = exchange(family(), l.addr, kQuit, &current);
        },
        kCallSeconds,
        [&] {
          int c = current.load();
          if (c >= 0) rshutdown(c, SHUT_RDWR);
        });
    return in_time ? failed : "a connection to the pre-forked workers hung";
  }

  // Two workers forked after rlisten serve kConnections connections on
  // the inherited listener, then one quit message each.
  void prefork(bool parent_keeps_listener, bool use_rpoll) {
    const Snapshot before = Snapshot::settled();
    {
      Listener l;
      ASSERT_NO_FATAL_FAILURE(make_listener(family(), &l));
      const int lfd = l.fd;
      Reaper w0{fork_child([&] { return worker(lfd, use_rpoll); })};
      Reaper w1{fork_child([&] { return worker(lfd, use_rpoll); })};
      ASSERT_GT(w0.pid, 0);
      ASSERT_GT(w1.pid, 0);
      if (!parent_keeps_listener) l.fd.reset();
      ASSERT_EQ("", run_clients(l, 2));
      EXPECT_EQ("", wait_child(&w0, 30)) << "worker 1";
      EXPECT_EQ("", wait_child(&w1, 30)) << "worker 2";
    }
    expect_nothing_left(before, "after the workers exited and the listener was closed");
  }
  // One worker forked after rlisten serves, then quits; the parent, which
  // keeps the listener, forks a second one later, which must serve too.
  // With `parent_queued`, the parent's rpoll on the listener (served
  // inline since the first fork) has answered a connection before the
  // second fork and queued it for its raccept: that connection is the
  // parent's, and the second worker must not get it (its copy of the
  // parent's queue, epoll set and half-read hellos is dropped at every
  // fork, not only at the first: ListenService keeps shared listeners).
  void later_fork(bool parent_queued) {
    constexpr uint32_t kQueued = 500;  // the parent's connection's index
    const Snapshot before = Snapshot::settled();
    {
      Listener l;
      ASSERT_NO_FATAL_FAILURE(make_listener(family(), &l));
      const int lfd = l.fd;
      {
        Reaper w1{fork_child([&] { return worker(lfd, false); })};
        ASSERT_GT(w1.pid, 0);
        ASSERT_EQ("", run_clients(l, 1)) << "worker 1";
        ASSERT_EQ("", wait_child(&w1, 30)) << "worker 1";
      }
      RFd queued;
      if (parent_queued) {
        queued.reset(rsocket(family(), SOCK_STREAM, 0));
        ASSERT_GE(queued.get(), 0) << strerror(errno);
        const int qfd = queued;
        int rc = -2;
        std::thread connector([&] { rc = rconnect(qfd, l.addr.sa(), l.addr.len); });
        short ready = wait_events(lfd, POLLIN, kCallSeconds * 1000);  // answers it inline
        bool in_time = run_with_timeout([&] { connector.join(); }, kCallSeconds,
                                        [&] { rshutdown(qfd, SHUT_RDWR); });
        ASSERT_TRUE(in_time) << "the parent's rpoll did not answer the connection";
        ASSERT_EQ(0, rc) << strerror(errno);
        ASSERT_TRUE(ready & POLLIN) << "rpoll on the listener: " << ready;
        ASSERT_EQ(sizeof kQueued, send_all(qfd, &kQueued, sizeof kQueued));
      }
      Reaper w2{fork_child([&] { return worker(lfd, false, kQueued); })};
      ASSERT_GT(w2.pid, 0);
      EXPECT_EQ("", run_clients(l, 1)) << "worker 2";
      EXPECT_EQ("", wait_child(&w2, 30)) << "worker 2 (14: it took the parent's connection)";
      if (parent_queued) {
        RFd srv;
        bool in_time = run_with_timeout([&] { srv.reset(raccept(lfd, nullptr, nullptr)); },
                                        kCallSeconds, [&] { rshutdown(lfd, SHUT_RDWR); });
        ASSERT_TRUE(in_time) << "the parent's queued connection was gone";
        ASSERT_GE(srv.get(), 0) << strerror(errno);
        const int sfd = srv, qfd = queued;
        int served = -1;
        uint32_t got = 0;
        std::string failed;
        in_time = run_with_timeout(
            [&] {
              std::thread t([&] {
                served = serve_one(sfd, &got);
                srv.reset();
              });
              failed = client_one(qfd, kQueued, /*index_sent=*/true);
              t.join();
            },
            kCallSeconds,
            [&] {
              rshutdown(qfd, SHUT_RDWR);
              rshutdown(sfd, SHUT_RDWR);
            });
        EXPECT_TRUE(in_time) << "the exchange on the parent's queued connection hung";
        EXPECT_EQ(0, served);
        EXPECT_EQ(kQueued, got);
        EXPECT_EQ("", failed) << "on the parent's queued connection";
      }
    }
    expect_nothing_left(before, "after the workers exited and the listener was closed");
  }
};

TEST_P(ForkTest, LaterForkChildAcceptsAfterAnEarlierChildExited) {
  if (on_verbs()) GTEST_SKIP() << stays("listeners");
  later_fork(/*parent_queued=*/false);
}

TEST_P(ForkTest, LaterForkChildLeavesTheParentsQueuedConnection) {
  if (on_verbs()) GTEST_SKIP() << stays("listeners");
  later_fork(/*parent_queued=*/true);
}

TEST_P(ForkTest, PreforkedChildrenAcceptWhileParentKeepsListener) {
  if (on_verbs()) GTEST_SKIP() << stays("listeners");
  prefork(/*parent_keeps_listener=*/true, /*use_rpoll=*/false);
}

TEST_P(ForkTest, PreforkedChildrenAcceptAfterParentClosedListener) {
  if (on_verbs()) GTEST_SKIP() << stays("listeners");
  prefork(/*parent_keeps_listener=*/false, /*use_rpoll=*/false);
}

TEST_P(ForkTest, PreforkedChildrenAcceptNonBlockingAfterRpoll) {
  if (on_verbs()) GTEST_SKIP() << stays("listeners");
  prefork(/*parent_keeps_listener=*/true, /*use_rpoll=*/true);
}

// A raccept asleep in the parent when it forks: the listener is served
// by whoever calls raccept from then on, so that call must look again at
// once (not only at its next periodic wake-up, made 15 s here).
TEST_P(ForkTest, RacceptBlockedAcrossForkServesAfterIt) {
  ScopedEnv wake("SLIPSTREAM_RS_WAKE_UP_INTERVAL", kLongWakeUpMs);
  Listener l;
  ASSERT_NO_FATAL_FAILURE(make_listener(family(), &l));
  const int lfd = l.fd;
  std::atomic<int> accepted{-2};
  std::thread acceptor([&] { accepted = raccept(lfd, nullptr, nullptr); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // asleep in raccept
  Reaper child{fork_child([] { return 0; })};
  ASSERT_GT(child.pid, 0);
  ASSERT_EQ("", wait_child(&child, 30));
  RFd c(rsocket(family(), SOCK_STREAM, 0));
  const int cfd = c;
  int rc = -2;
  bool in_time = run_with_timeout([&] { rc = rconnect(cfd, l.addr.sa(), l.addr.len); },
                                  kLostWakeUpSeconds, [&] { rshutdown(cfd, SHUT_RDWR); });
  EXPECT_TRUE(in_time) << "the raccept asleep across the fork did not serve the connection";
  EXPECT_EQ(0, rc) << strerror(errno);
  // The acceptor may still be finishing the handshake it answered (verbs
  // takes longer): let it return before concluding it needs a connection.
  for (int i = 0; i < 200 && rc == 0 && accepted == -2; i++)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (accepted == -2) {  // release it: a connection it can take
    RFd extra(rsocket(family(), SOCK_STREAM, 0));
    const int efd = extra;
    run_with_timeout([&] { rconnect(efd, l.addr.sa(), l.addr.len); }, kLongWakeUpReleaseSeconds,
                     [&] { rshutdown(efd, SHUT_RDWR); });
    acceptor.join();
  } else {
    acceptor.join();
  }
  EXPECT_GE(accepted.load(), 0) << strerror(errno);
  if (accepted >= 0) rclose(accepted);
}

// PostgreSQL, rstream -T f: the child serves the connection, the parent
// closes its copy at once (before any data moved).
TEST_P(ForkTest, ForkAfterAcceptParentClosesItsCopy) {
  if (on_verbs()) GTEST_SKIP() << stays("connections");
  const Snapshot before = Snapshot::settled();
  {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
    const int server = p.server;
    Reaper child{fork_child([&] {
      uint32_t index = 0;
      int rc = serve_one(server, &index);
      return rclose(server) == 0 ? rc : 30;
    })};
    ASSERT_GT(child.pid, 0);
    p.server.reset();
    const int c = p.client;
    std::string failed;
    bool in_time = run_with_timeout([&] { failed = client_one(c, 7); }, kCallSeconds,
                                    [&] { rshutdown(c, SHUT_RDWR); });
    EXPECT_TRUE(in_time) << "the exchange with the child hung";
    EXPECT_EQ("", failed) << "the parent's rclose of its copy reached the child's connection";
    EXPECT_EQ("", wait_child(&child, 30));
  }
  expect_nothing_left(before, "after the child exited");
}

// Processes taking turns, as OpenSSH's monitor and its children: a child
// moves the connection (one exchange) and closes its copy; a second child,
// forked from the parent whose copy is out of date by then, carries it on
// from the state the first one left; the parent's close, last, takes the
// second one's up and ends the stream in order.
TEST_P(ForkTest, ChildrenTakingTurnsCarryTheConnectionOn) {
  if (on_verbs()) GTEST_SKIP() << stays("connections");
  const Snapshot before = Snapshot::settled();
  {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
    const int server = p.server, client = p.client;
    for (uint32_t round = 1; round <= 2; round++) {
      Reaper child{fork_child([&] {
        uint32_t index = 0;
        int rc = serve_one(server, &index);
        if (rc == 0 && index != round) rc = 15;
        return rclose(server) == 0 ? rc : 30;
      })};
      ASSERT_GT(child.pid, 0);
      std::string failed;
      bool in_time = run_with_timeout([&] { failed = client_one(client, round, false, false); },
                                      kCallSeconds, [&] { rshutdown(client, SHUT_RDWR); });
      EXPECT_TRUE(in_time) << "round " << round << " hung";
      EXPECT_EQ("", failed) << "round " << round;
      EXPECT_EQ("", wait_child(&child, 30)) << "round " << round;
    }
    p.server.reset();
    char x;
    EXPECT_EQ(0, rrecv(client, &x, 1, 0)) << "no orderly end: " << strerror(errno);
  }
  expect_nothing_left(before, "after the children exited");
}

// The reverse: a child closes its copy and exits; the parent goes on.
TEST_P(ForkTest, ForkAfterAcceptChildClosesItsCopy) {
  const Snapshot before = Snapshot::settled();
  {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
    const int server = p.server;
    Reaper child{fork_child([&] { return rclose(server) == 0 ? 0 : 30; })};
    ASSERT_GT(child.pid, 0);
    ASSERT_EQ("", wait_child(&child, 30));
    expect_exchange(p.client, &p.server, 9, "after the child's rclose of its copy");
  }
  expect_nothing_left(before, "after the child exited");
}

// verbs: a child takes an inherited listener's tcp part over (the tcp
// provider listens beside any named one); its verbs part stays the
// parent's (its rdma_cm id lives in the parent's files). So a child
// serves tcp peers (rpoll reports the listener readable, no POLLERR),
// and a verbs peer is served by the parent's raccept, as on any listener
// shared by fork. On iWARP the device holds the port in TCP's port
// space: the listener is verbs alone, and a child's raccept fails with
// EOPNOTSUPP at once (rpoll: POLLERR), never waiting for requests that
// go to the parent's rdma_cm id.
TEST_P(ForkTest, VerbsChildAcceptsTcpPeersOnInheritedListener) {
  if (!on_verbs()) GTEST_SKIP() << "tcp and shm children accept (the Preforked* cases)";
  const bool verbs_alone = verbs_is_iwarp(family());
  const Snapshot before = Snapshot::settled();
  {
    Listener l;
    ASSERT_NO_FATAL_FAILURE(make_listener(family(), &l));
    const int lfd = l.fd;
    if (verbs_alone) {
      Reaper child{fork_child([&] {
        pollfd p{lfd, POLLIN, 0};
        if (rpoll(&p, 1, -1) != 1 || !(p.revents & POLLERR)) return 40;
        if (raccept(lfd, nullptr, nullptr) >= 0 || errno != EOPNOTSUPP) return 41;
        if (rfcntl(lfd, F_SETFL, O_NONBLOCK) < 0) return 42;
        if (raccept(lfd, nullptr, nullptr) >= 0 || errno != EOPNOTSUPP) return 43;
        return rclose(lfd) == 0 ? 0 : 44;
      })};
      ASSERT_GT(child.pid, 0);
      ASSERT_EQ("", wait_child(&child, 30));
    } else {
      Reaper child{fork_child([&] { return worker(lfd, /*use_rpoll=*/true); })};
      ASSERT_GT(child.pid, 0);
      select_provider("tcp");  // this process's clients: the child's part
      const std::string failed = run_clients(l, 1);
      select_provider(provider());
      EXPECT_EQ("", failed) << "tcp peers of the child's listener";
      EXPECT_EQ("", wait_child(&child, 30));
    }
    RFd c, srv;
    ASSERT_NO_FATAL_FAILURE(connect_to(family(), l, &c, &srv));
    expect_exchange(c, &srv, 3, "over verbs on the parent's listener after the child's");
  }
  expect_nothing_left(before, "after the child exited");
}

// verbs: a child's calls on an inherited connection (either end) fail with
// EOPNOTSUPP and touch nothing of the parent's queue pair: the parent and
// the peer go on exchanging data, and the child's rclose ends nothing.
TEST_P(ForkTest, VerbsChildUseOfInheritedConnectionFails) {
  if (!on_verbs()) GTEST_SKIP() << "tcp and shm connections work in a child (ForkAfterAccept*)";
  const Snapshot before = Snapshot::settled();
  {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
    const int server = p.server, client = p.client;
    Reaper child{fork_child([&] {
      char b[16] = "x";
      if (rsend(server, b, 1, 0) != -1 || errno != EOPNOTSUPP) return 50;
      if (rrecv(server, b, sizeof b, MSG_DONTWAIT) != -1 || errno != EOPNOTSUPP) return 51;
      if (rrecv(server, b, sizeof b, 0) != -1 || errno != EOPNOTSUPP) return 52;
      pollfd pf{server, POLLIN | POLLOUT, 0};
      if (rpoll(&pf, 1, -1) != 1 || !(pf.revents & POLLERR)) return 53;
      if (rsend(client, b, 1, 0) != -1 || errno != EOPNOTSUPP) return 54;
      int e = 0;
      socklen_t el = sizeof e;
      if (rgetsockopt(server, SOL_SOCKET, SO_ERROR, &e, &el) || e != EOPNOTSUPP) return 55;
      return rclose(server) == 0 && rclose(client) == 0 ? 0 : 56;
    })};
    ASSERT_GT(child.pid, 0);
    ASSERT_EQ("", wait_child(&child, 30));
    expect_exchange(client, &p.server, 11, "after the child's calls on its copies");
  }
  expect_nothing_left(before, "after the child exited");
}

// verbs: a child of a process that used verbs cannot make verbs
// connections of its own either: librdmacm keeps the parent's device
// contexts, which the kernel refuses to the child (EACCES at the first
// post, seen in the guest). rconnect and rlisten say so at once.
TEST_P(ForkTest, VerbsChildCannotOpenVerbsOfItsOwn) {
  if (!on_verbs()) GTEST_SKIP() << "tcp and shm: the ForkAfterAccept* and Preforked* cases";
  const Snapshot before = Snapshot::settled();
  {
    Listener l;
    ASSERT_NO_FATAL_FAILURE(make_listener(family(), &l));
    const Addr addr = l.addr;
    const Addr any = loopback(family());
    const int fam = family();
    Reaper child{fork_child([&] {
      int c = rsocket(fam, SOCK_STREAM, 0);
      if (c < 0) return 60;
      if (rconnect(c, addr.sa(), addr.len) == 0 || errno != EOPNOTSUPP) return 61;
      if (rclose(c)) return 62;
      int s = rsocket(fam, SOCK_STREAM, 0);
      if (s < 0) return 63;
      if (rbind(s, any.sa(), any.len)) return 64;
      if (rlisten(s, 4) == 0 || errno != EOPNOTSUPP) return 65;
      return rclose(s) == 0 ? 0 : 66;
    })};
    ASSERT_GT(child.pid, 0);
    ASSERT_EQ("", wait_child(&child, 30));
  }
  expect_nothing_left(before, "after the child exited");
}

// A fork while another thread is inside a call on a connection: busy
// polling (it holds the socket's lock throughout) or asleep (its turn as
// the receiver taken). The child has no such thread, so nothing of that
// call may hold the child's calls: they answer at once (tcp, shm: as any
// inherited connection; verbs: EOPNOTSUPP) and rclose returns. The
// parent's receiver then gets its byte.
void fork_during_parent_recv(int family, const char* polling_us, bool verbs) {
  ScopedEnv polling("SLIPSTREAM_RS_POLLING_TIME", polling_us);
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family, &p));
  const int server = p.server, client = p.client;
  std::atomic<ssize_t> got{-2};
  std::thread receiver([&] {
    char b;
    got = rrecv(server, &b, 1, 0);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // inside rrecv
  Reaper child{fork_child([&] {
    alarm(10);  // a call held by the parent's receiver: killed, a failure
    char b[4];
    const int want = verbs ? EOPNOTSUPP : EAGAIN;
    if (rrecv(server, b, sizeof b, MSG_DONTWAIT) != -1 || errno != want) return 70;
    pollfd pf{server, POLLOUT, 0};
    if (rpoll(&pf, 1, 0) != 1) return 71;
    return rclose(server) == 0 && rclose(client) == 0 ? 0 : 72;
  })};
  ASSERT_GT(child.pid, 0);
  EXPECT_EQ("", wait_child(&child, 30));
  EXPECT_EQ(1, rsend(client, "x", 1, 0)) << strerror(errno);
  bool in_time = run_with_timeout([&] { receiver.join(); }, kCallSeconds,
                                  [&] { rshutdown(server, SHUT_RDWR); });
  EXPECT_TRUE(in_time) << "the parent's receiver never got its byte";
  EXPECT_EQ(1, got.load());
}

TEST_P(ForkTest, ChildCallsNotHeldByParentThreadBusyPolling) {
  fork_during_parent_recv(family(), "60000000", on_verbs());  // polls 60 s: locked at the fork
}

TEST_P(ForkTest, ChildCallsNotHeldByParentThreadAsleep) {
  fork_during_parent_recv(family(), "0", on_verbs());
}

// A multi-threaded child: its threads rclose inherited connections while
// another makes the child's first call on one more (the call that cuts
// inherited verbs connections loose, fork::resume_services): each close
// must see its socket whole (cut loose first on verbs, never freed under
// that clean-up), and none reaches the parent's copies, which go on.
TEST_P(ForkTest, ChildThreadsCloseWhileFirstCallCleansUp) {
  constexpr int kPairs = 4, kRounds = 8;
  const Snapshot before = Snapshot::settled();
  {
    Pair p[kPairs];
    for (auto& pair : p) ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &pair));
    const bool verbs = on_verbs();
    for (int round = 0; round < kRounds; round++) {
      Reaper child{fork_child([&] {
        alarm(10);
        // verbs: the warning that counts the connections cut loose goes
        // here (every one, closed or not, is cut loose before its close).
        const int log = verbs ? memfd_create("child-stderr", 0) : -1;
        if (verbs && (log < 0 || dup2(log, 2) != 2)) return 81;
        std::atomic<bool> go{false};
        std::atomic<int> bad{0};
        std::vector<std::thread> closers;
        for (int i = 1; i < kPairs; i++)
          closers.emplace_back([&, i] {
            while (!go.load()) {
            }
            if (rclose(p[i].server) != 0 || rclose(p[i].client) != 0) bad++;
          });
        go = true;
        // A call that changes nothing the parent's copy shares (its
        // connection is in use there).
        int err = -1;
        socklen_t len = sizeof err;
        if (rgetsockopt(p[0].server, SOL_SOCKET, SO_ERROR, &err, &len) != 0 ||
            err != (verbs ? EOPNOTSUPP : 0))
          bad++;
        for (auto& t : closers) t.join();
        if (rclose(p[0].server) != 0 || rclose(p[0].client) != 0) bad++;
        if (bad.load()) return 80;
        if (verbs) {
          char text[4096] = {};
          if (pread(log, text, sizeof text - 1, 0) < 0) return 82;
          const std::string want =
              ": " + std::to_string(2 * kPairs) + " inherited verbs connection";
          if (!strstr(text, want.c_str())) return 83;  // a close reached an endpoint first
        }
        return 0;
      })};
      ASSERT_GT(child.pid, 0);
      ASSERT_EQ("", wait_child(&child, 30)) << "round " << round;
    }
    for (int i = 0; i < kPairs; i++)
      expect_exchange(p[i].client, &p[i].server, 20 + i, "after the children's rclose");
  }
  expect_nothing_left(before, "after the children exited");
}

// The processor time thread `tid` of this process took, in clock ticks
// (utime + stime of its stat), or -1.
long thread_cpu_ticks(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t comm_end = stat.rfind(')');
  if (comm_end == std::string::npos) return -1;
  std::istringstream fields(stat.substr(comm_end + 2));  // from field 3, the state
  std::string field;
  long utime = -1, stime = -1;
  for (int i = 3; i <= 15 && fields >> field; i++) {
    if (i == 14) utime = std::stol(field);
    if (i == 15) stime = std::stol(field);
  }
  return utime < 0 || stime < 0 ? -1 : utime + stime;
}

// Thread `tid` of this process (once known) sleeps in poll(2): inside
// its blocking call (rsockets sleep there). Looked at for up to 20 s,
// or until `returned` says the call is over.
// When it never slept there, `seen` says where it was found instead (a
// system call's number, "running", or "gone") and the processor time it
// took meanwhile: a thread that spins takes most of it.
bool asleep_in_call(const std::atomic<pid_t>& tid, const std::function<bool()>& returned,
                    std::string* seen) {
  std::map<std::string, int> found;
  long ticks_before = -1, ticks = -1;
  for (int i = 0; i < 2000; i++) {
    if (returned()) {
      *seen = "the call returned without sleeping";
      return false;
    }
    if (pid_t t = tid.load()) {
      std::ifstream f("/proc/self/task/" + std::to_string(t) + "/syscall");
      std::string first = "gone";
      f >> first;
      const long nr = isdigit(static_cast<unsigned char>(first[0])) ? std::stol(first) : -1;
      if (nr == SYS_ppoll
#ifdef SYS_poll
          || nr == SYS_poll
#endif
      )
        return true;
      found[first]++;
      ticks = thread_cpu_ticks(t);
      if (ticks_before < 0) ticks_before = ticks;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (const auto& [where, times] : found) *seen += where + " x" + std::to_string(times) + ", ";
  *seen += std::to_string(ticks - ticks_before) + " of " +
           std::to_string(20 * sysconf(_SC_CLK_TCK)) + " clock ticks on a processor";
  return false;
}

// rclose while another thread is asleep in rrecv (or in rsend, the send
// buffer full) on the connection: the close waits for that call, the
// number held meanwhile (as Linux's recv and send hold their socket).
// Then a fork. In program order the close came first,
// and the child has no such thread to finish it: there the connection is
// closed at once (its number free, its descriptors gone) and nothing of
// that reaches the parent or the peer. The parent's call goes on; when
// it returns, its close ends the connection: the peer reads the end
// (after all the data, when it was a send).
// `accepted_end`: the end closed is raccept's, else rconnect's (on shm
// the connecting end holds a descriptor besides its number). On verbs
// the child keeps the descriptors of the parent's verbs objects, never
// used nor closed there: its count is not looked at.
void close_deferred_across_fork(int family, bool accepted_end, bool verbs, bool sending = false) {
  ScopedEnv polling("SLIPSTREAM_RS_POLLING_TIME", "0");  // asleep at once
  const Snapshot before = Snapshot::settled();
  {
    Pair p;
    ASSERT_NO_FATAL_FAILURE(connect_pair(family, &p));
    // The rclose below is its close.
    const int closing = accepted_end ? p.server.release() : p.client.release();
    const int peer = accepted_end ? p.client : p.server;
    std::atomic<pid_t> tid{0};
    std::atomic<ssize_t> got{-2};
    char byte = 0;
    std::vector<uint8_t> data(65536, 'd');
    size_t queued = 0;  // sent before the blocked call, which sends data.size()
    // Until the window stays shut: a credit the peer sent may still be on
    // its way when a send first says EAGAIN.
    while (sending) {
      ssize_t n = rsend(closing, data.data(), data.size(), MSG_DONTWAIT);
      if (n > 0) {
        queued += static_cast<size_t>(n);
        continue;
      }
      pollfd out{closing, POLLOUT, 0};
      if (n < 0 && errno == EAGAIN && rpoll(&out, 1, 200) == 1 && (out.revents & POLLOUT)) continue;
      break;
    }
    std::thread blocked([&] {
      tid = static_cast<pid_t>(syscall(SYS_gettid));
      got = sending ? rsend(closing, data.data(), data.size(), 0) : rrecv(closing, &byte, 1, 0);
    });
    const char* call = sending ? "rsend" : "rrecv";
    std::string seen;
    const bool asleep = asleep_in_call(
        tid, [&] { return got.load() != -2; }, &seen);
    EXPECT_TRUE(asleep) << "the thread never slept in " << call << ": found as " << seen;
    EXPECT_EQ(0, rclose(closing)) << strerror(errno);
    const bool held = fcntl(closing, F_GETFD) != -1;
    EXPECT_TRUE(held) << "rclose did not wait for the " << call << " under way";
    Reaper child;
    if (asleep && held) {
      const int fds_before = before.fds;
      child.pid = fork_child([&] {
        if (fcntl(closing, F_GETFD) != -1 || errno != EBADF) return 90;  // the number is held
        char b;
        if (rrecv(closing, &b, 1, MSG_DONTWAIT) != -1 || errno != EBADF) return 91;
        pollfd pf{closing, POLLIN, 0};
        if (rpoll(&pf, 1, 0) != 1 || pf.revents != POLLNVAL) return 92;
        if (rclose(peer) != 0) return 93;
        // Both ends gone: none of the connection's descriptors is left.
        if (!verbs && count_fds() > fds_before) return 94;
        return 0;
      });
      ASSERT_GT(child.pid, 0);
      EXPECT_EQ("", wait_child(&child, 30));
    }
    // The parent's call goes on (its byte comes, or the peer reads and
    // its send completes), then closes: the peer reads the end.
    if (!sending) {
      EXPECT_EQ(1, rsend(peer, "x", 1, 0)) << strerror(errno);
    }
    size_t read = 0;
    ssize_t n = -2;
    bool in_time = run_with_timeout(
        [&] {
          std::vector<uint8_t> b(65536);
          while ((n = rrecv(peer, b.data(), b.size(), 0)) > 0) read += n;
          blocked.join();
        },
        kCallSeconds, [&] { rshutdown(peer, SHUT_RDWR); });
    EXPECT_TRUE(in_time) << "the parent's " << call << " or its close never ended";
    EXPECT_EQ(sending ? static_cast<ssize_t>(data.size()) : 1, got.load())
        << "the parent's " << call << " did not go on after the child's close";
    EXPECT_EQ(0, n) << "the peer did not read the end of the stream: " << strerror(errno);
    EXPECT_EQ(sending ? queued + data.size() : 0, read) << "the peer's data";
  }
  expect_nothing_left(before, "after the child exited and the deferred close was done");
}

TEST_P(ForkTest, CloseDeferredByABlockedRecvIsDoneInTheChildAccepted) {
  close_deferred_across_fork(family(), /*accepted_end=*/true, on_verbs());
}

TEST_P(ForkTest, CloseDeferredByABlockedRecvIsDoneInTheChildConnecting) {
  close_deferred_across_fork(family(), /*accepted_end=*/false, on_verbs());
}

TEST_P(ForkTest, CloseDeferredByABlockedSendIsDoneInTheChild) {
  close_deferred_across_fork(family(), /*accepted_end=*/false, on_verbs(), /*sending=*/true);
}

INSTANTIATE_TEST_SUITE_P(Providers, ForkTest, ::testing::ValuesIn(all_params()), param_name);

}  // namespace
}  // namespace rsconf
