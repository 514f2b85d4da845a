// Connect timeout on every provider: a listener whose process is stopped
// (the kernel completes the transport's connect, nobody answers the
// rsocket hello) makes rconnect fail with ETIMEDOUT after connect_timeout,
// blocking or not, never a hang; the socket leaves nothing behind.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "tests/librsocket/conformance.h"
#include "tests/librsocket/stopped_listener.h"

namespace rsconf {
namespace {

class ConnectTimeoutTest : public ConnTest {
 protected:
  // A non-blocking rconnect of *c to a stopped listener, in progress.
  void start_nonblocking_connect(StoppedListener* peer, RFd* c) {
    ASSERT_TRUE(peer->start(provider(), family()));
    c->reset(rsocket(family(), SOCK_STREAM, 0));
    ASSERT_EQ(0, rfcntl(*c, F_SETFL, O_NONBLOCK));
    ASSERT_EQ(-1, rconnect(*c, peer->addr().sa(), peer->addr().len));
    ASSERT_EQ(EINPROGRESS, errno) << strerror(errno);
  }
};

TEST_P(ConnectTimeoutTest, BlockingRconnectFailsWithEtimedout) {
  ScopedEnv timeout("SLIPSTREAM_RS_CONNECT_TIMEOUT", "500");
  StoppedListener peer;
  ASSERT_TRUE(peer.start(provider(), family()));
  const int fds_before = count_fds();
  int c = rsocket(family(), SOCK_STREAM, 0);
  ASSERT_GE(c, 0) << strerror(errno);
  int rc = 0, err = 0;
  bool returned = run_with_timeout(
      [&] {
        rc = rconnect(c, peer.addr().sa(), peer.addr().len);
        err = errno;
      },
      10, [&] { peer.resume(); });
  EXPECT_TRUE(returned) << "rconnect to a stopped listener did not return within 10 s";
  EXPECT_EQ(-1, rc);
  EXPECT_EQ(ETIMEDOUT, err) << strerror(err);
  // Nor does its close wait for the peer (iWARP's kernel would, for the
  // connect's reply: the id goes on a service thread).
  rc = -1;
  returned = run_with_timeout([&] { rc = rclose(c); }, 5, [&] { peer.resume(); });
  EXPECT_TRUE(returned) << "rclose of the timed-out socket did not return within 5 s";
  EXPECT_EQ(0, rc);
  peer.resume();
  // At most as many (earlier tests' lingering closes may end meanwhile),
  // once the peer's answer let a connecting iWARP id go (10 s at most).
  for (int i = 0; i < 100 && count_fds() > fds_before; i++) usleep(100000);
  EXPECT_LE(count_fds(), fds_before) << "descriptors left behind by the timed-out socket";
}

TEST_P(ConnectTimeoutTest, NonblockingRconnectReportsEtimedout) {
  ScopedEnv timeout("SLIPSTREAM_RS_CONNECT_TIMEOUT", "500");
  StoppedListener peer;
  RFd c;
  ASSERT_NO_FATAL_FAILURE(start_nonblocking_connect(&peer, &c));
  short rev = wait_events(c, POLLOUT, 10000);
  EXPECT_TRUE(rev & POLLOUT) << "revents " << rev;
  EXPECT_TRUE(rev & POLLERR) << "revents " << rev;
  int err = 0;
  socklen_t len = sizeof err;
  ASSERT_EQ(0, rgetsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len));
  EXPECT_EQ(ETIMEDOUT, err) << strerror(err);
  ASSERT_EQ(0, rgetsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len));
  EXPECT_EQ(0, err) << "SO_ERROR is cleared once read";
  peer.resume();
}

// With no periodic wake-up (wake_up_interval 0), an rpoll without timeout
// still wakes for the deadline: nothing else would tell it.
TEST_P(ConnectTimeoutTest, UnboundedRpollSeesTheTimeout) {
  ScopedEnv timeout("SLIPSTREAM_RS_CONNECT_TIMEOUT", "500");
  ScopedEnv wake("SLIPSTREAM_RS_WAKE_UP_INTERVAL", "0");
  StoppedListener peer;
  RFd c;
  ASSERT_NO_FATAL_FAILURE(start_nonblocking_connect(&peer, &c));
  pollfd p{c, POLLOUT, 0};
  int n = -1;
  bool returned = run_with_timeout([&] { n = rpoll(&p, 1, -1); }, 10, [&] { peer.resume(); });
  EXPECT_TRUE(returned) << "rpoll slept through the connect deadline";
  EXPECT_EQ(1, n);
  EXPECT_TRUE(p.revents & POLLERR) << "revents " << p.revents;
  peer.resume();
}

INSTANTIATE_TEST_SUITE_P(Providers, ConnectTimeoutTest, ::testing::ValuesIn(all_params()),
                         param_name);

}  // namespace
}  // namespace rsconf
