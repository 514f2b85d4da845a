// The tcp provider's side channel (side_probe.h, side_listener.h): the
// probe and answer formats, a prober that believes only its own answer,
// and a listener beside a program's socket that answers on the program's
// port number and accepts on its own.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include <gtest/gtest.h>

#include "core/prov/selection.h"
#include "core/prov/tcp/side_probe.h"
#include "tests/core/prov_fixture.h"

namespace ss::prov::tcp {
namespace {

TEST(SideWire, ProbeAndAnswerRoundTrip) {
  uint8_t p[kProbeSize];
  encode_probe(p, 0x0123456789abcdefULL);
  uint64_t nonce = 0;
  ASSERT_TRUE(decode_probe(p, sizeof p, &nonce));
  EXPECT_EQ(nonce, 0x0123456789abcdefULL);
  uint8_t a[kAnswerSize];
  encode_answer(a, nonce, 40000);
  uint16_t port = 0;
  ASSERT_TRUE(decode_answer(a, sizeof a, nonce, &port));
  EXPECT_EQ(port, 40000);
}

// Whatever is not exactly an answer to our nonce naming a port is ignored.
TEST(SideWire, AnythingElseIsRefused) {
  uint8_t a[kAnswerSize];
  uint16_t port;
  encode_answer(a, 7, 40000);
  EXPECT_FALSE(decode_answer(a, sizeof a, 8, &port));      // another nonce
  EXPECT_FALSE(decode_answer(a, sizeof a - 1, 7, &port));  // short
  for (size_t i : {0, 4, 5, 6, 18}) {                      // magic, version, kind, zeros
    uint8_t bad[kAnswerSize];
    memcpy(bad, a, sizeof a);
    bad[i] ^= 0x40;
    EXPECT_FALSE(decode_answer(bad, sizeof bad, 7, &port)) << "byte " << i;
  }
  encode_answer(a, 7, 0);
  EXPECT_FALSE(decode_answer(a, sizeof a, 7, &port));  // no port
  uint8_t p[kProbeSize];
  encode_probe(p, 7);
  uint64_t nonce;
  EXPECT_FALSE(decode_answer(p, sizeof p, 7, &port));  // a probe is no answer
  EXPECT_FALSE(decode_probe(a, sizeof a, &nonce));     // nor the reverse
  EXPECT_FALSE(decode_probe(p, sizeof p - 1, &nonce));
}

// A UDP socket on 127.0.0.1 and its address.
struct Udp {
  int fd = -1;
  sockaddr_in addr{};
  Udp() {
    fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0)
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  }
  ~Udp() { close(); }
  void close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  const sockaddr* sa() const { return reinterpret_cast<const sockaddr*>(&addr); }
};

TEST(SideProbe, NobodyOnThePortIsRefusedAtOnce) {
  Udp u;
  ASSERT_GE(u.fd, 0);
  u.close();  // the port is free now: the kernel answers port unreachable
  EXPECT_EQ(probe_side_port(u.sa(), sizeof u.addr, 5000), -ECONNREFUSED);
}

TEST(SideProbe, ASilentSocketTimesOut) {
  Udp u;
  ASSERT_GE(u.fd, 0);
  EXPECT_EQ(probe_side_port(u.sa(), sizeof u.addr, 30), -ETIMEDOUT);
}

// A peer answering with forgeries first: the prober takes only the answer
// to its own nonce with a port.
TEST(SideProbe, OnlyTheAnswerToItsOwnProbeCounts) {
  Udp u;
  ASSERT_GE(u.fd, 0);
  std::thread peer([&] {
    uint8_t in[64];
    sockaddr_storage from{};
    socklen_t fl = sizeof from;
    ssize_t n = ::recvfrom(u.fd, in, sizeof in, 0, reinterpret_cast<sockaddr*>(&from), &fl);
    uint64_t nonce = 0;
    if (n < 0 || !decode_probe(in, static_cast<size_t>(n), &nonce)) return;
    auto send = [&](const void* b, size_t len) {
      ::sendto(u.fd, b, len, 0, reinterpret_cast<sockaddr*>(&from), fl);
    };
    uint8_t a[kAnswerSize];
    encode_answer(a, nonce + 1, 1111);  // someone else's
    send(a, sizeof a);
    encode_answer(a, nonce, 0);  // no port
    send(a, sizeof a);
    send("garbage", 7);
    encode_answer(a, nonce, 2222);
    send(a, sizeof a);
  });
  EXPECT_EQ(probe_side_port(u.sa(), sizeof u.addr, 5000), 2222);
  peer.join();
}

// Settings for one test, restored after it.
class SideEnv {
 public:
  SideEnv(const char* timeout_ms, const char* memory_ms) {
    setenv("SLIPSTREAM_SIDE_PROBE_TIMEOUT", timeout_ms, 1);
    setenv("SLIPSTREAM_SIDE_PROBE_MEMORY", memory_ms, 1);
    config::reload();
  }
  ~SideEnv() {
    unsetenv("SLIPSTREAM_SIDE_PROBE_TIMEOUT");
    unsetenv("SLIPSTREAM_SIDE_PROBE_MEMORY");
    config::reload();
  }
};

// A peer that did not answer is remembered for side_probe_memory: a plain
// server costs its prober one probe, not one per connect.
TEST(SideProbe, APeerThatDidNotAnswerIsRemembered) {
  Udp u;
  ASSERT_GE(u.fd, 0);
  {
    SideEnv env("30", "60000");
    EXPECT_EQ(side_port_of(u.sa(), sizeof u.addr), -ETIMEDOUT);
    char buf[32];
    EXPECT_EQ(::recv(u.fd, buf, sizeof buf, MSG_DONTWAIT), ssize_t(kProbeSize));  // the probe
    EXPECT_EQ(side_port_of(u.sa(), sizeof u.addr), -ECONNREFUSED);
    EXPECT_LT(::recv(u.fd, buf, sizeof buf, MSG_DONTWAIT), 0) << "asked again";
  }
  {
    SideEnv env("0", "60000");  // 0: never asked
    EXPECT_EQ(side_port_of(u.sa(), sizeof u.addr), -ENOTSUP);
  }
}

// A program's TCP socket bound to 127.0.0.1 and an ephemeral port (a_),
// not listening yet, with tcp the one provider.
class SideListenerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.use("tcp");
    prog_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    ASSERT_GE(prog_, 0);
    a_.sin_family = AF_INET;
    a_.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a_;
    ASSERT_EQ(::bind(prog_, reinterpret_cast<sockaddr*>(&a_), sizeof a_), 0);
    ASSERT_EQ(::getsockname(prog_, reinterpret_cast<sockaddr*>(&a_), &len), 0);
  }
  void TearDown() override {
    if (prog_ >= 0) ::close(prog_);
  }
  sstest::ProviderEnv env_;
  int prog_ = -1;
  sockaddr_in a_{};
};

// Beside a program's listening socket (off_stream, as librspreload makes
// it): probes on its port number are answered with a port of our own where
// a TCP listener takes connections; the program's socket is never touched.
TEST_F(SideListenerTest, AnswersOnTheProgramsPortAndListensOnItsOwn) {
  ASSERT_EQ(::listen(prog_, 8), 0);
  std::unique_ptr<Listener> l;
  ASSERT_EQ(create_listener(prog_, &l, 8, true), 0);
  std::atomic<bool> stop{false};
  std::thread server([&] {  // as the listen service: serve while readable
    while (!stop) {
      pollfd p{l->fd(), POLLIN, 0};
      if (::poll(&p, 1, 20) == 1) {
        std::unique_ptr<Endpoint> ep;
        l->get_request(&ep);
      }
    }
  });
  int side = probe_side_port(reinterpret_cast<sockaddr*>(&a_), sizeof a_, 5000);
  stop = true;
  server.join();
  ASSERT_GT(side, 0) << strerror(-side);
  EXPECT_NE(side, ntohs(a_.sin_port));
  int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in to = a_;
  to.sin_port = htons(static_cast<uint16_t>(side));
  EXPECT_EQ(::connect(c, reinterpret_cast<sockaddr*>(&to), sizeof to), 0) << strerror(errno);
  ::close(c);
  // Nothing reached the program's own listener.
  EXPECT_LT(::accept4(prog_, nullptr, nullptr, SOCK_NONBLOCK), 0);
  EXPECT_EQ(errno, EAGAIN);
}

// Nobody looks at the listener (a program busy elsewhere): the
// answering thread answers.
TEST_F(SideListenerTest, ProbesAreAnsweredWithoutTheProgram) {
  ASSERT_EQ(::listen(prog_, 8), 0);
  std::unique_ptr<Listener> l;
  ASSERT_EQ(create_listener(prog_, &l, 8, true), 0);
  int side = probe_side_port(reinterpret_cast<sockaddr*>(&a_), sizeof a_, 5000);
  EXPECT_GT(side, 0) << strerror(-side);
}

// The UDP port is another socket's: no side channel; with tcp the only
// provider there is then no listener at all.
TEST_F(SideListenerTest, ATakenUdpPortMeansNoSideChannel) {
  int taken = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(::bind(taken, reinterpret_cast<sockaddr*>(&a_), sizeof a_), 0);
  ASSERT_EQ(::listen(prog_, 8), 0);
  std::unique_ptr<Listener> l;
  EXPECT_EQ(create_listener(prog_, &l, 8, true), -ENOTSUP);
  ::close(taken);
}

}  // namespace
}  // namespace ss::prov::tcp

namespace ss::prov::tcp {
namespace {

// A fork child takes its copy over (pre-forking servers): with the parent's
// copy gone, the child's answering thread, started at its first look at
// the listener, answers.
TEST_F(SideListenerTest, AForkChildAnswersProbes) {
  env_.use(nullptr);  // auto: a set of shm's listener and the side listener
  ASSERT_EQ(::listen(prog_, 8), 0);
  std::unique_ptr<Listener> l;
  ASSERT_EQ(create_listener(prog_, &l, 8, true), 0);
  int done[2];
  ASSERT_EQ(::pipe(done), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(done[1]);
    if (l->fork_child()) _exit(2);
    std::unique_ptr<Endpoint> ep;
    l->get_request(&ep);  // the first look
    char c;
    _exit(::read(done[0], &c, 1) == 0 ? 0 : 3);  // until the parent is done
  }
  ::close(done[0]);
  l.reset();  // the parent's copy and its thread go
  int side = probe_side_port(reinterpret_cast<sockaddr*>(&a_), sizeof a_, 5000);
  ::close(done[1]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_GT(side, 0) << strerror(-side);
}

}  // namespace
}  // namespace ss::prov::tcp
