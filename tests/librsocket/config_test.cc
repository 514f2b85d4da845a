// The rsocket configuration files (upstream /etc/rdma/rsocket/*), here in a
// temporary directory named by SLIPSTREAM_RS_CONF_DIR: a bad value warns and
// keeps the default, a good one changes the defaults of sockets created
// afterwards, as rgetsockopt shows.
#include "core/base/config.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "tests/librsocket/conformance.h"
#include "tests/common/stderr_capture.h"

namespace rsconf {
namespace {

using sstest::StderrCapture;

class RsConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The files are overridden by SLIPSTREAM_RS_* variables: set them aside.
    int n = 0;
    const ss::config::Setting* rows = ss::config::table(&n);
    for (int i = 0; i < n; i++) {
      if (!rows[i].file || !rows[i].env) continue;
      const char* v = getenv(rows[i].env);
      saved_[rows[i].env] = v ? std::optional<std::string>(v) : std::nullopt;
      unsetenv(rows[i].env);
    }
    const char* d = getenv("SLIPSTREAM_RS_CONF_DIR");
    saved_dir_ = d ? std::optional<std::string>(d) : std::nullopt;
    char tmpl[] = "/tmp/rs-conformance-conf-XXXXXX";
    ASSERT_NE(nullptr, mkdtemp(tmpl)) << strerror(errno);
    dir_ = tmpl;
    setenv("SLIPSTREAM_RS_CONF_DIR", dir_.c_str(), 1);
    select_provider("tcp");
  }

  void TearDown() override {
    if (!dir_.empty()) {
      std::string cmd = "rm -rf '" + dir_ + "'";
      EXPECT_EQ(0, system(cmd.c_str()));
    }
    for (auto& [k, v] : saved_) {
      if (v) setenv(k.c_str(), v->c_str(), 1);
    }
    if (saved_dir_)
      setenv("SLIPSTREAM_RS_CONF_DIR", saved_dir_->c_str(), 1);
    else
      unsetenv("SLIPSTREAM_RS_CONF_DIR");
    ss::config::reload();
  }

  void write_file(const char* name, const std::string& content) {
    std::string path = dir_ + "/" + name;
    FILE* f = fopen(path.c_str(), "w");
    ASSERT_NE(nullptr, f) << path << ": " << strerror(errno);
    fputs(content.c_str(), f);
    fclose(f);
  }

  // What a new socket reads for an int option.
  static int option_of_new_socket(int level, int name) {
    RFd s(rsocket(AF_INET, SOCK_STREAM, 0));
    EXPECT_GE(s.get(), 0) << strerror(errno);
    int v = -1;
    socklen_t len = sizeof v;
    EXPECT_EQ(0, rgetsockopt(s, level, name, &v, &len)) << strerror(errno);
    return v;
  }

  std::string dir_;
  std::map<std::string, std::optional<std::string>> saved_;
  std::optional<std::string> saved_dir_;
};

TEST_F(RsConfigTest, DefaultsWithoutFiles) {
  ss::config::reload();
  EXPECT_EQ(384, option_of_new_socket(SOL_RDMA, RDMA_SQSIZE));
  EXPECT_EQ(384, option_of_new_socket(SOL_RDMA, RDMA_RQSIZE));
  EXPECT_EQ(64, option_of_new_socket(SOL_RDMA, RDMA_INLINE));
  EXPECT_EQ(0, option_of_new_socket(SOL_RDMA, RDMA_IOMAPSIZE));
  EXPECT_EQ(131072, option_of_new_socket(SOL_SOCKET, SO_RCVBUF));
  EXPECT_EQ(131072, option_of_new_socket(SOL_SOCKET, SO_SNDBUF));
}

TEST_F(RsConfigTest, BadFileWarnsAndKeepsDefault) {
  ASSERT_NO_FATAL_FAILURE(write_file("sqsize_default", "abc\n"));
  std::string err;
  {
    StderrCapture cap;
    ss::config::reload();
    RFd s(rsocket(AF_INET, SOCK_STREAM, 0));  // a lazily read file warns here
    err = cap.text();
  }
  EXPECT_NE(std::string::npos, err.find("sqsize_default"))
      << "no warning naming the setting: " << err;
  EXPECT_NE(std::string::npos, err.find("abc")) << "the warning shows the bad value: " << err;
  EXPECT_EQ(384, option_of_new_socket(SOL_RDMA, RDMA_SQSIZE));
}

TEST_F(RsConfigTest, GoodFileChangesDefaultOfNewSocketsOnly) {
  ss::config::reload();
  RFd before(rsocket(AF_INET, SOCK_STREAM, 0));
  ASSERT_GE(before.get(), 0);
  ASSERT_NO_FATAL_FAILURE(write_file("sqsize_default", "128\n"));
  std::string err;
  {
    StderrCapture cap;
    ss::config::reload();
    err = cap.text();
  }
  EXPECT_EQ("", err) << "a good file must not warn";
  EXPECT_EQ(128, option_of_new_socket(SOL_RDMA, RDMA_SQSIZE));
  int v = -1;
  socklen_t len = sizeof v;
  ASSERT_EQ(0, rgetsockopt(before, SOL_RDMA, RDMA_SQSIZE, &v, &len));
  EXPECT_EQ(384, v) << "a socket made before the change changed too";
}

TEST_F(RsConfigTest, EachFileSetsItsDefault) {
  ASSERT_NO_FATAL_FAILURE(write_file("mem_default", "65536"));
  ASSERT_NO_FATAL_FAILURE(write_file("wmem_default", "32768"));
  ASSERT_NO_FATAL_FAILURE(write_file("iomap_size", "4"));
  ASSERT_NO_FATAL_FAILURE(write_file("rqsize_default", "100"));
  ASSERT_NO_FATAL_FAILURE(write_file("inline_default", "16"));
  ss::config::reload();
  EXPECT_EQ(65536, option_of_new_socket(SOL_SOCKET, SO_RCVBUF));
  EXPECT_EQ(32768, option_of_new_socket(SOL_SOCKET, SO_SNDBUF));
  EXPECT_EQ(4, option_of_new_socket(SOL_RDMA, RDMA_IOMAPSIZE));
  EXPECT_EQ(100, option_of_new_socket(SOL_RDMA, RDMA_RQSIZE));
  EXPECT_EQ(16, option_of_new_socket(SOL_RDMA, RDMA_INLINE));
  // An explicit option still wins over the file.
  RFd s(rsocket(AF_INET, SOCK_STREAM, 0));
  int v = 2;
  ASSERT_EQ(0, rsetsockopt(s, SOL_RDMA, RDMA_IOMAPSIZE, &v, sizeof v));
  socklen_t len = sizeof v;
  ASSERT_EQ(0, rgetsockopt(s, SOL_RDMA, RDMA_IOMAPSIZE, &v, &len));
  EXPECT_EQ(2, v);
}

// polling_time (microseconds) is how long a blocking call spins before it
// sleeps: with 5 s from the file, a blocked rrecv still spins a second in;
// with the default (10 us) it sleeps (PollTest.IdleBlockedRrecvSleeps).
TEST_F(RsConfigTest, PollingTimeFileMakesABlockedCallSpin) {
  ASSERT_NO_FATAL_FAILURE(write_file("polling_time", "5000000"));
  ss::config::reload();
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(AF_INET, &p));
  char b[4];
  ssize_t n = -2;
  Usage u = measure_blocked([&] { n = rrecv(p.server, b, sizeof b, 0); },
                            [&] { rsend(p.client, "w", 1, 0); });
  EXPECT_EQ(1, n);
  ASSERT_TRUE(u.blocked_throughout) << "rrecv returned before it was measured";
  // A spinning thread gets most of a core even beside the other tests.
  EXPECT_GT(u.share(), 0.20) << "a blocked rrecv used " << u.cpu_s << " s of CPU in " << u.wall_s
                             << " s: it slept although polling_time said to spin 5 s";
}

class RsConfigProviders : public RsConfigTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(RsConfigProviders, ConnectionWithSmallConfiguredBuffersKeepsData) {
  ASSERT_NO_FATAL_FAILURE(write_file("mem_default", "8192"));
  ASSERT_NO_FATAL_FAILURE(write_file("wmem_default", "8192"));
  ASSERT_NO_FATAL_FAILURE(write_file("rqsize_default", "16"));
  ss::config::reload();
  std::string why;
  ASSERT_TRUE(probe(GetParam(), AF_INET, &why));
  if (!why.empty()) GTEST_SKIP() << why;
  select_provider(GetParam());
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(AF_INET, &p));
  int v = -1;
  socklen_t len = sizeof v;
  ASSERT_EQ(0, rgetsockopt(p.server, SOL_SOCKET, SO_RCVBUF, &v, &len));
  EXPECT_EQ(8192, v);
  constexpr size_t kLen = 1u << 20;
  size_t bad = 0, got = 0;
  std::thread t([&] { got = recv_pattern(p.server, kLen, 123, 5000, true, &bad); });
  EXPECT_EQ(kLen, send_pattern(p.client, kLen, 123, 7000, true));
  t.join();
  EXPECT_EQ(kLen, got);
  EXPECT_EQ(SIZE_MAX, bad);
}

INSTANTIATE_TEST_SUITE_P(Software, RsConfigProviders, ::testing::Values("tcp", "shm"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

}  // namespace
}  // namespace rsconf
