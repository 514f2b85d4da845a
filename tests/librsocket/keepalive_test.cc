// Keepalive behaviour (librsocket/keepalive_service.cc). SO_KEEPALIVE with
// TCP_KEEPIDLE seconds, as upstream rsockets: one service thread, alive
// only while some rsocket has SO_KEEPALIVE, posts a keepalive to each such
// connected socket every TCP_KEEPIDLE seconds of its registration. As
// upstream's tcp_svc_send_keepalive (rs_post_write with RS_OP_CTRL /
// RS_CTRL_KEEPALIVE as the work request id only), the keepalive is a
// zero-length plain RDMA write: no immediate, nothing for the peer's
// engine to see. On the tcp provider it is a kWrite frame of length 0
// (core/prov/util/frame.h); on shm a zero-length write moves nothing.
//
// - KeepaliveTcpWireTest: a raw kernel TCP client speaking the tcp
//   provider's frames plays the peer of a library server and counts the
//   keepalive frames it receives.
// - KeepaliveTest (every provider): keepalives leave the data stream and
//   rpoll alone; the service thread ends with the last keepalive socket.
// - KeepaliveServiceTest: the service's thread under concurrent
//   registration and removal.
//
// No timing assertions: waits are bounded waits for an event; "probes
// stop" is phrased against another socket's probes (a clock made of the
// same service).
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/prov/util/frame.h"
#include "librsocket/wire.h"
#include "tests/librsocket/conformance.h"
#include "tests/librsocket/raw_peer.h"

namespace rsconf {
namespace {

using ss::prov::util::FrameHeader;
using ss::prov::util::FrameType;
using ss::prov::util::kFrameHeaderSize;
using ss::rs::kConnDataSize;
using clock_type = std::chrono::steady_clock;

int set_int(int fd, int level, int name, int v) {
  return rsetsockopt(fd, level, name, &v, sizeof v);
}

// SO_KEEPALIVE on `fd` with probes every `idle_s` seconds (TCP_KEEPIDLE
// first: SO_KEEPALIVE then registers with that interval).
void keepalive_on(int fd, int idle_s) {
  ASSERT_EQ(0, set_int(fd, IPPROTO_TCP, TCP_KEEPIDLE, idle_s)) << strerror(errno);
  ASSERT_EQ(0, set_int(fd, SOL_SOCKET, SO_KEEPALIVE, 1)) << strerror(errno);
}

// The service's thread (named by the service).
constexpr const char* kSvcName = "ss-keepalive";

int threads_named(const char* name) {
  int n = 0;
  for (const std::string& t : list_dir("/proc/self/task")) {
    std::ifstream in("/proc/self/task/" + t + "/comm");
    std::string comm;
    if (std::getline(in, comm) && comm == name) n++;
  }
  return n;
}

// Bounded wait (polled) until `n` threads are named kSvcName.
bool svc_threads_become(int n, int seconds = 10) {
  auto deadline = clock_type::now() + std::chrono::seconds(seconds);
  while (threads_named(kSvcName) != n && clock_type::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return threads_named(kSvcName) == n;
}

// ---------------------------------------------------------------------------
// A raw tcp-provider peer (raw_peer.h) that counts the keepalives it reads.

bool is_keepalive(const FrameHeader& h) { return h.type == FrameType::kWrite && h.length == 0; }

std::string describe(const FrameHeader& h) {
  return "frame type " + std::to_string(static_cast<int>(h.type)) + " length " +
         std::to_string(h.length) + " rkey " + std::to_string(h.rkey) + " imm 0x" + [&] {
           char b[16];
           snprintf(b, sizeof b, "%x", h.imm);
           return std::string(b);
         }();
}

class RawPeer {
 public:
  // Connects to `l` (a tcp listener on IPv4 loopback), says hello with
  // made-up buffers (credits 16), reads the accept reply and raccepts the
  // connection into *server.
  void connect(const Listener& l, RFd* server) {
    fd_ = raw_connect(l);
    ASSERT_GE(fd_.get(), 0) << strerror(errno);
    send_hello(fd_, fake_conn_data());
    FrameHeader h;
    std::vector<uint8_t> pd;
    ASSERT_TRUE(next_frame(&h, &pd, 10000)) << "no reply to a well-formed hello";
    ASSERT_EQ(FrameType::kHelloReply, h.type);
    ASSERT_EQ(0, h.flags) << "well-formed hello rejected";
    ASSERT_EQ(kConnDataSize, pd.size());
    ASSERT_TRUE(wait_events(l.fd, POLLIN, 20000) & POLLIN);
    server->reset(raccept(l.fd, nullptr, nullptr));
    ASSERT_GE(server->get(), 0) << strerror(errno);
  }

  // The next frame and its payload; false when none comes within `ms`
  // (or the connection ended).
  bool next_frame(FrameHeader* h, std::vector<uint8_t>* payload, int ms) {
    uint8_t hdr[kFrameHeaderSize];
    if (!raw_recv_exact(fd_, hdr, sizeof hdr, ms)) return false;
    ss::prov::util::decode_frame(hdr, h);
    if (h->length > (1u << 20)) return false;  // not the provider's stream
    payload->resize(h->length);
    return h->length == 0 || raw_recv_exact(fd_, payload->data(), h->length, 10000);
  }

  // Reads frames until `pred` accepts one or `seconds` pass. Every
  // keepalive frame read is counted in keepalives_ and checked.
  template <typename Pred>
  bool read_until(Pred pred, int seconds) {
    auto deadline = clock_type::now() + std::chrono::seconds(seconds);
    for (;;) {
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
      if (left.count() <= 0) return false;
      FrameHeader h;
      std::vector<uint8_t> payload;
      if (!next_frame(&h, &payload, static_cast<int>(left.count()))) return false;
      if (is_keepalive(h)) {
        keepalives_++;
        // As upstream: a plain write, no immediate for the peer's engine.
        EXPECT_EQ(0u, h.imm) << "keepalive " << describe(h);
      }
      if (pred(h, payload)) return true;
    }
  }

  // Waits (at most `seconds`) until `n` more keepalives arrived.
  bool await_keepalives(int n, int seconds) {
    const int want = keepalives_ + n;
    return read_until(
        [&](const FrameHeader&, const std::vector<uint8_t>&) { return keepalives_ >= want; },
        seconds);
  }

  // Reads whatever has arrived already, without waiting.
  void drain() {
    FrameHeader h;
    std::vector<uint8_t> payload;
    for (;;) {
      pollfd pf{fd_, POLLIN, 0};
      if (poll(&pf, 1, 0) <= 0 || !(pf.revents & POLLIN)) return;
      if (!next_frame(&h, &payload, 1000)) return;
      if (is_keepalive(h)) keepalives_++;
    }
  }

  int keepalives() const { return keepalives_; }

 private:
  KFd fd_;
  int keepalives_ = 0;
};

class KeepaliveTcpWireTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    ASSERT_TRUE(probe("tcp", AF_INET, &why));
    if (!why.empty()) GTEST_SKIP() << why;
    ASSERT_NO_FATAL_FAILURE(make_listener(AF_INET, &l_));
  }
  Listener l_;
};

// An idle connection with SO_KEEPALIVE is probed, every TCP_KEEPIDLE
// seconds. SO_KEEPALIVE goes on first (with the default interval, hours
// from /proc/sys/net/ipv4/tcp_keepalive_time): TCP_KEEPIDLE must re-arm it.
// Fails when no keepalive is sent (or is sent with an immediate).
TEST_F(KeepaliveTcpWireTest, IdleConnectionIsProbed) {
  RawPeer c;
  RFd s;
  ASSERT_NO_FATAL_FAILURE(c.connect(l_, &s));
  ASSERT_EQ(0, set_int(s, SOL_SOCKET, SO_KEEPALIVE, 1)) << strerror(errno);
  ASSERT_EQ(0, set_int(s, IPPROTO_TCP, TCP_KEEPIDLE, 1)) << strerror(errno);
  EXPECT_TRUE(c.await_keepalives(1, 10)) << "no keepalive within 10 s on an idle connection with "
                                            "SO_KEEPALIVE and TCP_KEEPIDLE 1";
  EXPECT_TRUE(c.await_keepalives(1, 10)) << "the keepalive was not repeated within 10 s";
  // The server's engine still works after them.
  ASSERT_EQ(1, rsend(s, "d", 1, 0)) << strerror(errno);
  EXPECT_TRUE(c.read_until(
      [](const FrameHeader& h, const std::vector<uint8_t>& p) {
        return h.type == FrameType::kWriteImm && p.size() == 1 && p[0] == 'd';
      },
      10))
      << "the data sent after the keepalives did not come";
}

// Probes that stop, without a time limit: `stop` ends them on one
// connection, whose stream then carries a mark (`is_mark` finds it); another
// connection is probed by the same service three times, and the first
// gets no keepalive behind its mark.
void expect_probes_stop(
    const Listener& l, const std::function<void(int)>& stop,
    const std::function<bool(const FrameHeader&, const std::vector<uint8_t>&)>& is_mark,
    const char* what) {
  RawPeer c1, c2;
  RFd s1, s2;
  ASSERT_NO_FATAL_FAILURE(c1.connect(l, &s1));
  ASSERT_NO_FATAL_FAILURE(c2.connect(l, &s2));
  ASSERT_NO_FATAL_FAILURE(keepalive_on(s1, 1));
  ASSERT_TRUE(c1.await_keepalives(1, 10)) << "no keepalive to begin with";
  ASSERT_NO_FATAL_FAILURE(stop(s1));
  ASSERT_TRUE(c1.read_until(is_mark, 10)) << "the mark never came";
  const int before = c1.keepalives();
  ASSERT_NO_FATAL_FAILURE(keepalive_on(s2, 1));  // the clock
  ASSERT_TRUE(c2.await_keepalives(3, 20)) << "the other connection was not probed";
  c1.drain();
  EXPECT_EQ(before, c1.keepalives())
      << "keepalives after " << what << " (while another socket got 3)";
}

// Turned off again, SO_KEEPALIVE stops the probes. Only s1 had it: its
// removal ended the service thread, so no probe of s1 can still be on its
// way behind the data message that marks the stream.
TEST_F(KeepaliveTcpWireTest, ProbesStopWhenTurnedOff) {
  expect_probes_stop(
      l_,
      [](int s) {
        ASSERT_EQ(0, set_int(s, SOL_SOCKET, SO_KEEPALIVE, 0)) << strerror(errno);
        ASSERT_EQ(1, rsend(s, "M", 1, 0)) << strerror(errno);
      },
      [](const FrameHeader& h, const std::vector<uint8_t>& p) {
        return h.type == FrameType::kWriteImm && p.size() == 1 && p[0] == 'M';
      },
      "SO_KEEPALIVE was turned off");
}

// rshutdown stops the probes too (upstream removes the socket from its
// keepalive service at any rshutdown). SHUT_WR keeps the socket connected
// (still readable), so a probe would still be sent if it were not removed;
// the shutdown's own CTRL SHUTDOWN message is the mark in the stream.
TEST_F(KeepaliveTcpWireTest, ProbesStopAfterShutdown) {
  expect_probes_stop(
      l_, [](int s) { ASSERT_EQ(0, rshutdown(s, SHUT_WR)) << strerror(errno); },
      [](const FrameHeader& h, const std::vector<uint8_t>&) {
        return h.type == FrameType::kWriteImm &&
               h.imm == ss::rs::make_imm(ss::rs::kOpCtrl, ss::rs::kCtrlShutdown);
      },
      "rshutdown(SHUT_WR)");
}

// A socket accepted from a listener with SO_KEEPALIVE inherits it, as on
// Linux, and is probed. (Upstream rsockets does not inherit the option;
// reporting it on without probing, as we did, was neither.)
TEST_F(KeepaliveTcpWireTest, AcceptedSocketReportingSoKeepaliveIsProbed) {
  ASSERT_NO_FATAL_FAILURE(keepalive_on(l_.fd, 1));
  RawPeer c;
  RFd s;
  ASSERT_NO_FATAL_FAILURE(c.connect(l_, &s));
  int v = -1;
  socklen_t len = sizeof v;
  ASSERT_EQ(0, rgetsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &v, &len)) << strerror(errno);
  EXPECT_NE(0, v) << "SO_KEEPALIVE not inherited from the listener";
  EXPECT_TRUE(c.await_keepalives(1, 10))
      << "the accepted socket reports SO_KEEPALIVE on (inherited from the listener) but was "
         "not probed within 10 s";
}

// ---------------------------------------------------------------------------
// Every provider.

class KeepaliveTest : public ConnTest {};

// Keepalives every second on both ends of an idle connection: rpoll does
// not report POLLIN for them, a reader blocked in rrecv is not released by
// them (no 0, no error), and what is sent afterwards arrives exactly. The
// periodic wake-up is made long, so a wake-up the keepalive thread swallows
// (it polls the connection's completions) shows as a stall.
TEST_P(KeepaliveTest, ProbesDoNotDisturbTheStream) {
  ScopedEnv wake("SLIPSTREAM_RS_WAKE_UP_INTERVAL", kLongWakeUpMs);
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  ASSERT_NO_FATAL_FAILURE(keepalive_on(p.client, 1));
  ASSERT_NO_FATAL_FAILURE(keepalive_on(p.server, 1));

  // A reader blocked on the server through the idle time.
  std::atomic<bool> returned{false};
  ssize_t n = -2;
  int err = 0;
  char got[16] = {};
  std::thread reader([&] {
    n = rrecv(p.server, got, sizeof got, 0);
    err = errno;
    returned = true;
  });
  // Idle: three keepalive intervals and a half, both ways.
  pollfd pf{p.client, POLLIN, 0};
  int r = rpoll(&pf, 1, 3500);
  EXPECT_EQ(0, r) << "rpoll reported revents " << pf.revents
                  << " on an idle connection whose peer sends keepalives";
  EXPECT_FALSE(returned) << "a keepalive released the blocked rrecv: " << n
                         << (n < 0 ? std::string(" (") + strerror(err) + ")" : "");
  char b;
  errno = 0;
  EXPECT_EQ(-1, rrecv(p.client, &b, 1, MSG_DONTWAIT)) << "a keepalive read as data or EOF";
  EXPECT_EQ(EAGAIN, errno) << strerror(errno);

  // Now the data: the blocked reader gets exactly it.
  EXPECT_EQ(5, rsend(p.client, "hello", 5, 0)) << strerror(errno);
  bool in_time =
      run_with_timeout([&] { reader.join(); }, kLostWakeUpSeconds,
                       [&] { rshutdown(p.server, SHUT_RDWR); }, kLongWakeUpReleaseSeconds);
  EXPECT_TRUE(in_time) << "the blocked rrecv was not woken by the data (lost wake-up)";
  ASSERT_EQ(5, n) << strerror(err);
  EXPECT_EQ(0, memcmp(got, "hello", 5));
  pf = {p.server, POLLIN, 0};
  EXPECT_EQ(0, rpoll(&pf, 1, 0)) << "more than the data sent is readable";

  // Both ways at once, longer than a keepalive interval.
  constexpr size_t kLen = 4u << 20;
  std::atomic<size_t> progress{0};
  size_t got1 = 0, got2 = 0, bad1 = 0, bad2 = 0;
  bool moving = run_watching_progress(
      {[&] { send_pattern(p.client, kLen, 11, 4096, true, nullptr, &progress); },
       [&] { send_pattern(p.server, kLen, 12, 4096, true, nullptr, &progress); },
       [&] { got1 = recv_pattern(p.server, kLen, 11, 4096, true, &bad1, nullptr, &progress); },
       [&] { got2 = recv_pattern(p.client, kLen, 12, 4096, true, &bad2, nullptr, &progress); }},
      progress, kLostWakeUpSeconds,
      [&] {
        rshutdown(p.client, SHUT_RDWR);
        rshutdown(p.server, SHUT_RDWR);
      },
      kLongWakeUpReleaseSeconds);
  EXPECT_TRUE(moving) << "the transfer stalled with keepalives running";
  EXPECT_EQ(kLen, got1);
  EXPECT_EQ(kLen, got2);
  EXPECT_EQ(SIZE_MAX, bad1) << "client->server data corrupted";
  EXPECT_EQ(SIZE_MAX, bad2) << "server->client data corrupted";

  // Idle again after the transfer: nothing more to read on either end.
  pollfd both[2] = {{p.client, POLLIN, 0}, {p.server, POLLIN, 0}};
  EXPECT_EQ(0, rpoll(both, 2, 2500)) << "revents " << both[0].revents << ", " << both[1].revents;
}

// The service thread lives while some socket has SO_KEEPALIVE and goes
// with the last one: here by rclose. The last one is a socket that never
// connected (its rclose does not go through rshutdown).
TEST_P(KeepaliveTest, ThreadEndsWithLastKeepaliveSocketClosed) {
  ASSERT_TRUE(svc_threads_become(0)) << "a keepalive thread of an earlier test is still there";
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  RFd lone(rsocket(family(), SOCK_STREAM, 0));
  ASSERT_GE(lone.get(), 0) << strerror(errno);
  ASSERT_NO_FATAL_FAILURE(keepalive_on(p.client, 1));
  ASSERT_EQ(1, threads_named(kSvcName))
      << "SO_KEEPALIVE started no service thread (or one was running already)";
  ASSERT_NO_FATAL_FAILURE(keepalive_on(p.server, 1));
  ASSERT_NO_FATAL_FAILURE(keepalive_on(lone, 1));
  p.client.reset();
  p.server.reset();
  EXPECT_EQ(1, threads_named(kSvcName)) << "the thread ended while a keepalive socket is left";
  lone.reset();
  EXPECT_TRUE(svc_threads_become(0)) << "the keepalive thread outlived the last keepalive socket";
}

// ... by SO_KEEPALIVE turned off (and back on: a new thread).
TEST_P(KeepaliveTest, ThreadEndsWhenLastSocketTurnsItOff) {
  ASSERT_TRUE(svc_threads_become(0)) << "a keepalive thread of an earlier test is still there";
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  for (int round = 0; round < 2; round++) {
    SCOPED_TRACE("round " + std::to_string(round));
    ASSERT_NO_FATAL_FAILURE(keepalive_on(p.client, 1));
    ASSERT_EQ(1, threads_named(kSvcName))
        << "SO_KEEPALIVE started no service thread (or one was running already)";
    ASSERT_EQ(0, set_int(p.client, SOL_SOCKET, SO_KEEPALIVE, 0)) << strerror(errno);
    EXPECT_TRUE(svc_threads_become(0)) << "the keepalive thread outlived SO_KEEPALIVE off";
  }
  // The connection still works.
  ASSERT_EQ(1, rsend(p.client, "k", 1, 0));
  char b;
  EXPECT_EQ(1u, recv_all(p.server, &b, 1));
}

// ... by rshutdown.
TEST_P(KeepaliveTest, ThreadEndsWhenLastSocketShutsDown) {
  ASSERT_TRUE(svc_threads_become(0)) << "a keepalive thread of an earlier test is still there";
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  ASSERT_NO_FATAL_FAILURE(keepalive_on(p.server, 1));
  ASSERT_EQ(1, threads_named(kSvcName))
      << "SO_KEEPALIVE started no service thread (or one was running already)";
  ASSERT_EQ(0, rshutdown(p.server, SHUT_RDWR)) << strerror(errno);
  EXPECT_TRUE(svc_threads_become(0)) << "the keepalive thread outlived rshutdown";
}

INSTANTIATE_TEST_SUITE_P(Providers, KeepaliveTest, ::testing::ValuesIn(all_params()), param_name);

// ---------------------------------------------------------------------------
// The service alone (unconnected sockets are registered too).

// One socket turns SO_KEEPALIVE off, the last to have it, while another
// turns it on. The call that turns it off joins the service thread; it must
// return while the other socket keeps SO_KEEPALIVE on (the new socket's
// registration must not revive the thread being joined).
TEST(KeepaliveServiceTest, LastOffWhileAnotherTurnsOn) {
  ASSERT_TRUE(svc_threads_become(0)) << "a keepalive thread of an earlier test is still there";
  RFd a(rsocket(AF_INET, SOCK_STREAM, 0)), b(rsocket(AF_INET, SOCK_STREAM, 0));
  ASSERT_GE(a.get(), 0);
  ASSERT_GE(b.get(), 0);
  constexpr int kRounds = 300;
  int stuck_round = -1;
  for (int round = 0; round < kRounds && stuck_round < 0; round++) {
    ASSERT_EQ(0, set_int(a, SOL_SOCKET, SO_KEEPALIVE, 1));
    std::atomic<int> go{0};
    std::atomic<bool> off_returned{false};
    std::thread off([&] {
      go++;
      while (go < 2) {
      }
      set_int(a, SOL_SOCKET, SO_KEEPALIVE, 0);
      off_returned = true;
    });
    go++;
    while (go < 2) {
    }
    EXPECT_EQ(0, set_int(b, SOL_SOCKET, SO_KEEPALIVE, 1)) << strerror(errno);
    // b keeps SO_KEEPALIVE: a's removal must finish anyway.
    auto deadline = clock_type::now() + std::chrono::seconds(10);
    while (!off_returned && clock_type::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (!off_returned) stuck_round = round;
    // b's removal ends every service thread: a stuck removal returns too.
    EXPECT_EQ(0, set_int(b, SOL_SOCKET, SO_KEEPALIVE, 0)) << strerror(errno);
    bool released = run_with_timeout([&] { off.join(); }, 20);
    ASSERT_TRUE(released) << "SO_KEEPALIVE off did not return even after the last socket left";
  }
  EXPECT_EQ(-1, stuck_round)
      << "round " << stuck_round
      << ": turning SO_KEEPALIVE off on the last keepalive socket blocked (10 s) while another "
         "socket turned it on, until that one turned it off again";
}

}  // namespace
}  // namespace rsconf
