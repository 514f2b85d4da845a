// Many connections under the common descriptor limit: 300 connected
// rsockets with RLIMIT_NOFILE at 1024, one process per side (the server
// side is this binary re-executed, RS_CONFORMANCE_CHILD=scale_server).
// Every connection carries data both ways, verified. Each side counts
// /proc/self/fd before and after and the descriptors per connected end
// are printed; at most 3 are allowed (the kernel uses 1, upstream
// rsockets 2). Verbs is skipped: its connections hold device resources
// (a CQ channel, a CM channel) that this budget does not cover.
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/librsocket/conformance.h"

namespace rsconf {
namespace {

constexpr int kConnections = 300;
constexpr rlim_t kFdLimit = 1024;
constexpr size_t kPayload = 1024;
constexpr int kMaxPerConnection = 3;

bool lower_fd_limit(rlimit* old) {
  if (getrlimit(RLIMIT_NOFILE, old) != 0) return false;
  rlimit l = *old;
  l.rlim_cur = std::min(kFdLimit, old->rlim_max);
  return setrlimit(RLIMIT_NOFILE, &l) == 0;
}

// Each message: the connection's index, then kPayload pattern bytes
// seeded by it (the server answers with the seed index + kConnections).
bool send_message(int fd, uint32_t index, uint64_t seed) {
  uint8_t buf[4 + kPayload];
  memcpy(buf, &index, 4);
  fill_pattern(buf + 4, kPayload, seed);
  return send_all(fd, buf, sizeof buf) == sizeof buf;
}

// 1: the message arrived intact (*index set), 0: it did not.
bool recv_message(int fd, uint32_t* index, int64_t seed_offset, int64_t expected_index) {
  uint8_t buf[4 + kPayload];
  if (recv_all(fd, buf, sizeof buf) != sizeof buf) return false;
  memcpy(index, buf, 4);
  if (expected_index >= 0 && *index != expected_index) return false;
  return *index < kConnections &&
         check_pattern(buf + 4, kPayload, *index + seed_offset) == SIZE_MAX;
}

// ---------------------------------------------------------------------------
// The server side: accepts every connection, checks its message, answers.
// Reports "R<port>" once listening, then "D<before> <after> <bad>".

void report(const std::string& s) {
  if (write(kChildNotifyFd, s.data(), s.size()) != static_cast<ssize_t>(s.size())) _exit(3);
}

[[noreturn]] void run_server() {
  const char* prov = getenv("RS_SCALE_PROVIDER");
  rlimit old;
  if (!prov || !lower_fd_limit(&old)) child_fail("set-up");
  select_provider(prov);
  Listener l;
  make_listener(AF_INET, &l, {}, kConnections);
  if (l.fd < 0) child_fail("listen");
  const int before = count_fds();
  report("R" + std::to_string(l.addr.port()));
  std::vector<RFd> conns;
  int bad = 0;
  for (int i = 0; i < kConnections; i++) {
    RFd s(raccept(l.fd, nullptr, nullptr));
    if (s < 0) child_fail("raccept");
    uint32_t index = 0;
    if (!recv_message(s, &index, 0, -1) || !send_message(s, index, index + kConnections)) bad++;
    conns.push_back(std::move(s));
  }
  const int after = count_fds();
  report("D" + std::to_string(before) + " " + std::to_string(after) + " " + std::to_string(bad));
  for (;;) pause();  // the connections stay up until the test kills us
}

struct ChildMode {
  ChildMode() {
    const char* mode = getenv("RS_CONFORMANCE_CHILD");
    if (mode && strcmp(mode, "scale_server") == 0) run_server();
  }
} g_child_mode;

// ---------------------------------------------------------------------------
// The client side: this process.

class ScaleTest : public ConnTest {
 protected:
  void SetUp() override {
    if (strcmp(provider(), "verbs") == 0) GTEST_SKIP() << "verbs: device resources per connection";
    ConnTest::SetUp();
  }
};

TEST_P(ScaleTest, ThreeHundredConnectionsUnderA1024DescriptorLimit) {
  KFd notify;
  Reaper server;
  server.pid = spawn_child("scale_server", {std::string("RS_SCALE_PROVIDER=") + provider()},
                           &notify);
  ASSERT_GT(server.pid, 0) << strerror(errno);
  std::string rep;
  ASSERT_TRUE(child_ready(notify, &rep)) << "server: " << rep;
  const Addr dst = loopback(AF_INET, static_cast<uint16_t>(atoi(rep.c_str() + 1)));

  rlimit old;
  ASSERT_TRUE(lower_fd_limit(&old)) << strerror(errno);
  struct Restore {
    rlimit lim;
    ~Restore() { setrlimit(RLIMIT_NOFILE, &lim); }
  } restore{old};

  const int before = count_fds();
  std::vector<RFd> conns;
  for (int i = 0; i < kConnections; i++) {
    RFd c(rsocket(AF_INET, SOCK_STREAM, 0));
    ASSERT_GE(c, 0) << "connection " << i << ": rsocket: " << strerror(errno);
    ASSERT_EQ(0, rconnect(c, dst.sa(), dst.len))
        << "connection " << i << " (" << count_fds() - before << " descriptors for " << i
        << "): " << strerror(errno);
    ASSERT_TRUE(send_message(c, i, i)) << "connection " << i << ": " << strerror(errno);
    conns.push_back(std::move(c));
  }
  for (int i = 0; i < kConnections; i++) {
    uint32_t index = 0;
    ASSERT_TRUE(recv_message(conns[i], &index, kConnections, i))
        << "connection " << i << ": the answer is wrong or missing";
  }
  const int after = count_fds();

  child_ready(notify, &rep);  // its second report starts with 'D', not 'R'
  int s_before = 0, s_after = 0, s_bad = -1;
  ASSERT_EQ(3, sscanf(rep.c_str(), "D%d %d %d", &s_before, &s_after, &s_bad)) << rep;
  EXPECT_EQ(0, s_bad) << "connections whose message the server found wrong";

  const double client_per = double(after - before) / kConnections;
  const double server_per = double(s_after - s_before) / kConnections;
  printf("[ %s ] descriptors per connection: connecting end %.2f, accepting end %.2f\n",
         provider(), client_per, server_per);
  EXPECT_LE(after - before, kMaxPerConnection * kConnections);
  EXPECT_LE(s_after - s_before, kMaxPerConnection * kConnections);

  // Every descriptor comes back once the connections are gone (a closed
  // connection may linger a moment: the server is gone, so not for long).
  kill_and_reap(server.pid);
  server.pid = -1;
  conns.clear();
  int left = count_fds() - before;
  for (int i = 0; i < 1000 && left > 0; i++, left = count_fds() - before) usleep(10000);
  EXPECT_LE(left, 0) << "descriptors still open after every rclose";
}

INSTANTIATE_TEST_SUITE_P(Providers, ScaleTest,
                         ::testing::Values(ConnParam{"tcp", AF_INET}, ConnParam{"shm", AF_INET},
                                           ConnParam{"verbs", AF_INET}),
                         param_name);

}  // namespace
}  // namespace rsconf
