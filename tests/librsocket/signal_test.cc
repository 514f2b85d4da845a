// Signals on every provider: a blocking call whose thread runs a handler
// installed without SA_RESTART fails with EINTR, as its socket counterpart
// does (signal(7)); with SA_RESTART the call keeps waiting and completes.
// Bytes moved before the interruption are returned, never lost.
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "tests/librsocket/conformance.h"
#include "tests/librsocket/stopped_listener.h"

namespace rsconf {
namespace {

using std::chrono::milliseconds;

std::atomic<int> g_handled{0};
void on_signal(int) { g_handled++; }

// SIGUSR1's handler for the scope, with or without SA_RESTART.
class ScopedHandler {
 public:
  explicit ScopedHandler(bool restart) {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sa.sa_flags = restart ? SA_RESTART : 0;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, &old_);
  }
  ~ScopedHandler() { sigaction(SIGUSR1, &old_, nullptr); }

 private:
  struct sigaction old_ {};
};

struct Outcome {
  long rc = 0;
  int err = 0;
  bool blocked_through_signals = false;  // still waiting after every signal (restart runs)
  int handled = 0;
};

// Runs call() on a thread and signals that thread (SIGUSR1) every 100 ms.
// Without restart: until the call returns (5 s at most: a call deaf to
// signals is then released by `release` and reported as it returned).
// With restart: three signals, then `release` lets the call complete.
Outcome interrupt(bool restart, const std::function<long()>& call,
                  const std::function<void()>& release) {
  ScopedHandler handler(restart);
  Outcome out;
  std::atomic<bool> done{false};
  const int before = g_handled;
  std::thread t([&] {
    long rc = call();
    out.err = errno;
    out.rc = rc;
    done = true;
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  int sent = 0;
  while (!done && std::chrono::steady_clock::now() < deadline && (!restart || sent < 3)) {
    std::this_thread::sleep_for(milliseconds(100));
    if (!done) {
      pthread_kill(t.native_handle(), SIGUSR1);
      sent++;
    }
  }
  std::this_thread::sleep_for(milliseconds(100));  // the last handler ran, the call went on
  out.blocked_through_signals = !done;
  if (!done) release();
  for (int i = 0; i < 200 && !done; i++) std::this_thread::sleep_for(milliseconds(50));
  if (!done) {
    fprintf(stderr, "\n[ STUCK ] %s: the call stayed blocked after its release\n",
            current_test_name().c_str());
    abort();
  }
  t.join();
  out.handled = g_handled - before;
  return out;
}

class SignalTest : public ConnTest {};

// Fills the client's send path until a nonblocking rsend gives EAGAIN and
// no room comes back for 300 ms: completions still on their way free
// room without the reader (an EAGAIN alone may pass, as the kernel's).
void fill_send_path(int fd) {
  std::vector<char> junk(65536, 'j');
  int fl = rfcntl(fd, F_GETFL);
  ASSERT_EQ(0, rfcntl(fd, F_SETFL, fl | O_NONBLOCK));
  for (int i = 0; i < 100000; i++) {
    if (rsend(fd, junk.data(), junk.size(), 0) >= 0) continue;
    ASSERT_EQ(EAGAIN, errno);
    pollfd w{fd, POLLOUT, 0};
    if (rpoll(&w, 1, 300) == 0) break;
  }
  ASSERT_EQ(0, rfcntl(fd, F_SETFL, fl));
}

// Reads (and throws away) until the peer's stream ends.
void drain(int fd) {
  std::vector<char> b(65536);
  while (rrecv(fd, b.data(), b.size(), 0) > 0) {
  }
}

TEST_P(SignalTest, RacceptFailsWithEintr) {
  Listener l;
  ASSERT_NO_FATAL_FAILURE(make_listener(family(), &l));
  RFd c(rsocket(family(), SOCK_STREAM, 0));
  Outcome o = interrupt(
      false, [&] { return static_cast<long>(raccept(l.fd, nullptr, nullptr)); },
      [&] { rconnect(c, l.addr.sa(), l.addr.len); });
  EXPECT_EQ(-1, o.rc);
  EXPECT_EQ(EINTR, o.err) << strerror(o.err);
  EXPECT_GE(o.handled, 1);
  if (o.rc >= 0) rclose(static_cast<int>(o.rc));
}

TEST_P(SignalTest, RacceptRestartsUnderSaRestart) {
  Listener l;
  ASSERT_NO_FATAL_FAILURE(make_listener(family(), &l));
  RFd c(rsocket(family(), SOCK_STREAM, 0));
  Outcome o = interrupt(
      true, [&] { return static_cast<long>(raccept(l.fd, nullptr, nullptr)); },
      [&] { rconnect(c, l.addr.sa(), l.addr.len); });
  EXPECT_TRUE(o.blocked_through_signals);
  EXPECT_GE(o.rc, 0) << strerror(o.err);
  EXPECT_GE(o.handled, 1);  // its handler ran while it waited (signals may merge)
  if (o.rc >= 0) rclose(static_cast<int>(o.rc));
}

// An interrupted connect goes on in the background: a nonblocking retry
// says EALREADY, and once the peer answers the socket is connected.
// rconnect of `c` to the stopped `peer`, signalled; the release resumes it.
Outcome interrupt_connect(bool restart, int c, StoppedListener& peer) {
  return interrupt(
      restart, [&] { return static_cast<long>(rconnect(c, peer.addr().sa(), peer.addr().len)); },
      [&] { peer.resume(); });
}

TEST_P(SignalTest, RconnectFailsWithEintrAndGoesOn) {
  StoppedListener peer;
  ASSERT_TRUE(peer.start(provider(), family()));
  RFd c(rsocket(family(), SOCK_STREAM, 0));
  Outcome o = interrupt_connect(false, c, peer);
  EXPECT_EQ(-1, o.rc);
  EXPECT_EQ(EINTR, o.err) << strerror(o.err);
  ASSERT_EQ(0, rfcntl(c, F_SETFL, rfcntl(c, F_GETFL) | O_NONBLOCK));
  EXPECT_EQ(-1, rconnect(c, peer.addr().sa(), peer.addr().len));
  EXPECT_EQ(EALREADY, errno) << strerror(errno);
  peer.resume();
  EXPECT_TRUE(wait_events(c, POLLOUT, 20000) & POLLOUT);
  int err = -1;
  socklen_t len = sizeof err;
  ASSERT_EQ(0, rgetsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len));
  EXPECT_EQ(0, err) << strerror(err);
  EXPECT_EQ(1, rsend(c, "x", 1, 0));
}

TEST_P(SignalTest, RconnectRestartsUnderSaRestart) {
  StoppedListener peer;
  ASSERT_TRUE(peer.start(provider(), family()));
  RFd c(rsocket(family(), SOCK_STREAM, 0));
  Outcome o = interrupt_connect(true, c, peer);
  EXPECT_TRUE(o.blocked_through_signals);
  EXPECT_EQ(0, o.rc) << strerror(o.err);
  EXPECT_GE(o.handled, 1);  // its handler ran while it waited (signals may merge)
}

// Every receive call of the API, blocked on an empty stream.
TEST_P(SignalTest, EveryReceiveCallFailsWithEintr) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  char b[16];
  const char filler[sizeof b] = {};
  iovec iov{b, sizeof b};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  const std::vector<std::pair<const char*, std::function<long()>>> calls = {
      {"rrecv", [&] { return rrecv(p.server, b, sizeof b, 0); }},
      {"rrecv MSG_WAITALL", [&] { return rrecv(p.server, b, sizeof b, MSG_WAITALL); }},
      {"rread", [&] { return rread(p.server, b, sizeof b); }},
      {"rreadv", [&] { return rreadv(p.server, &iov, 1); }},
      {"rrecvfrom", [&] { return rrecvfrom(p.server, b, sizeof b, 0, nullptr, nullptr); }},
      {"rrecvmsg", [&] { return rrecvmsg(p.server, &m, 0); }},
  };
  for (const auto& [name, call] : calls) {
    bool released = false;
    Outcome o = interrupt(false, call, [&] {
      released = true;
      rsend(p.client, filler, sizeof filler, 0);  // enough for MSG_WAITALL too
    });
    EXPECT_EQ(-1, o.rc) << name;
    EXPECT_EQ(EINTR, o.err) << name << ": " << strerror(o.err);
    if (released) recv_all(p.server, b, sizeof filler - (o.rc > 0 ? o.rc : 0));
  }
  // Nothing was lost: the stream goes on.
  ASSERT_EQ(2, rsend(p.client, "ok", 2, 0));
  ASSERT_EQ(2u, recv_all(p.server, b, 2));
  EXPECT_EQ(0, memcmp(b, "ok", 2));
}

TEST_P(SignalTest, RrecvRestartsUnderSaRestart) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  char b[4] = {};
  Outcome o = interrupt(
      true, [&] { return rrecv(p.server, b, sizeof b, 0); }, [&] { rsend(p.client, "z", 1, 0); });
  EXPECT_TRUE(o.blocked_through_signals);
  EXPECT_EQ(1, o.rc) << strerror(o.err);
  EXPECT_EQ('z', b[0]);
}

// Every send call of the API (riowrite too), blocked on a full send path.
TEST_P(SignalTest, EverySendCallFailsWithEintr) {
  Pair p;
  auto one_iomap = [](int fd) {
    int one = 1;
    ASSERT_EQ(0, rsetsockopt(fd, SOL_RDMA, RDMA_IOMAPSIZE, &one, sizeof one));
  };
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p, one_iomap, one_iomap));
  // The server publishes a riowrite target (with its first byte).
  alignas(4096) static uint8_t target[4096];
  ASSERT_EQ(0, riomap(p.server, target, sizeof target, PROT_WRITE, 0, 0)) << strerror(errno);
  ASSERT_EQ(1, rsend(p.server, "m", 1, 0));
  char first = 0;
  ASSERT_EQ(1, rrecv(p.client, &first, 1, 0));
  ASSERT_NO_FATAL_FAILURE(fill_send_path(p.client));
  char b[4096] = {};
  iovec iov{b, sizeof b};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  const std::vector<std::pair<const char*, std::function<long()>>> calls = {
      {"rsend", [&] { return rsend(p.client, b, sizeof b, 0); }},
      {"rwrite", [&] { return rwrite(p.client, b, sizeof b); }},
      {"rwritev", [&] { return rwritev(p.client, &iov, 1); }},
      {"rsendto", [&] { return rsendto(p.client, b, sizeof b, 0, nullptr, 0); }},
      {"rsendmsg", [&] { return rsendmsg(p.client, &m, 0); }},
      {"riowrite", [&] { return static_cast<long>(riowrite(p.client, b, sizeof b, 0, 0)); }},
  };
  std::thread drainer;
  for (const auto& [name, call] : calls) {
    Outcome o = interrupt(false, call, [&] {
      if (!drainer.joinable()) drainer = std::thread([&] { drain(p.server); });
    });
    EXPECT_EQ(-1, o.rc) << name;
    EXPECT_EQ(EINTR, o.err) << name << ": " << strerror(o.err);
    if (drainer.joinable()) break;  // released: the path is no longer full
  }
  rshutdown(p.client, SHUT_WR);
  if (!drainer.joinable()) drainer = std::thread([&] { drain(p.server); });
  drainer.join();
}

TEST_P(SignalTest, RsendRestartsUnderSaRestart) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  ASSERT_NO_FATAL_FAILURE(fill_send_path(p.client));
  char b[4096] = {};
  std::thread drainer;
  Outcome o = interrupt(
      true, [&] { return rsend(p.client, b, sizeof b, 0); },
      [&] { drainer = std::thread([&] { drain(p.server); }); });
  EXPECT_TRUE(o.blocked_through_signals);
  EXPECT_GT(o.rc, 0) << strerror(o.err);
  rshutdown(p.client, SHUT_WR);
  if (drainer.joinable()) drainer.join();
}

// A stream moved by blocking calls while both threads are signalled
// without SA_RESTART: calls that moved bytes return their count, the others
// EINTR, and the stream arrives whole and in order.
TEST_P(SignalTest, NoDataLostAroundInterruptions) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  ScopedHandler handler(false);
  constexpr size_t kTotal = 16u << 20;
  constexpr uint64_t kSeed = 13;
  std::atomic<bool> done{false}, sender_done{false}, receiver_done{false};
  std::atomic<size_t> eintr{0};
  size_t sent = 0, got = 0, bad_at = SIZE_MAX;
  int send_err = 0, recv_err = 0;
  std::thread sender([&] {
    std::vector<uint8_t> buf(1 << 20);
    while (sent < kTotal) {
      size_t n = std::min(buf.size(), kTotal - sent);
      fill_pattern(buf.data(), n, kSeed, sent);
      size_t off = 0;
      while (off < n) {
        ssize_t w = rsend(p.client, buf.data() + off, n - off, 0);
        if (w < 0 && errno == EINTR) {
          eintr++;
          continue;
        }
        if (w <= 0) {
          send_err = errno;
          sender_done = true;
          return;
        }
        off += static_cast<size_t>(w);
      }
      sent += n;
    }
    sender_done = true;
  });
  std::thread receiver([&] {
    std::vector<uint8_t> buf(1 << 20);
    while (got < kTotal) {
      ssize_t r = rrecv(p.server, buf.data(), std::min(buf.size(), kTotal - got), MSG_WAITALL);
      if (r < 0 && errno == EINTR) {
        eintr++;
        continue;
      }
      if (r <= 0) {
        recv_err = r < 0 ? errno : -1;
        break;
      }
      size_t bad = check_pattern(buf.data(), static_cast<size_t>(r), kSeed, got);
      if (bad != SIZE_MAX && bad_at == SIZE_MAX) bad_at = got + bad;
      got += static_cast<size_t>(r);
    }
    receiver_done = true;
  });
  std::thread signaller([&] {
    while (!done) {
      pthread_kill(sender.native_handle(), SIGUSR1);
      pthread_kill(receiver.native_handle(), SIGUSR1);
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  });
  // Joined only once the signaller stopped: it names them until then.
  bool ok = run_with_timeout(
      [&] {
        while (!sender_done || !receiver_done) std::this_thread::sleep_for(milliseconds(10));
      },
      60,
      [&] {
        rshutdown(p.client, SHUT_RDWR);
        rshutdown(p.server, SHUT_RDWR);
      });
  done = true;
  signaller.join();
  sender.join();
  receiver.join();
  ASSERT_TRUE(ok) << "the transfer stalled under signals";
  EXPECT_EQ(0, send_err) << strerror(send_err);
  EXPECT_EQ(0, recv_err);
  EXPECT_EQ(kTotal, sent);
  EXPECT_EQ(kTotal, got);
  EXPECT_EQ(SIZE_MAX, bad_at) << "stream corrupted at offset " << bad_at;
  RecordProperty("eintr", static_cast<int>(eintr.load()));
}

INSTANTIATE_TEST_SUITE_P(Providers, SignalTest, ::testing::ValuesIn(all_params()), param_name);

}  // namespace
}  // namespace rsconf
