// rsocket's settings table, registered by librsocket beside core's: its
// rows, defaults and bounds, and the configuration files (upstream
// /etc/rdma/rsocket/*), here in a temporary directory named by
// SLIPSTREAM_RS_CONF_DIR: a bad value warns and keeps the default, a good
// one (units included) changes the defaults of sockets created afterwards,
// as rgetsockopt shows.
#include "core/base/config.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cctype>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "tests/librsocket/conformance.h"
#include "tests/common/stderr_capture.h"

namespace rsconf {
namespace {

using ss::config::Component;
using ss::config::Setting;
using ss::config::Source;
using sstest::StderrCapture;

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// librsocket's table, reached through core's registry (its own symbols are
// hidden).
Component& rs() {
  Component* c = ss::config::find_component("rsocket");
  if (!c) abort();  // librsocket did not register: nothing below means anything
  return *c;
}

int row_of(const char* name) {
  const int i = rs().find(name);
  EXPECT_GE(i, 0) << name;
  return i;
}

class RsConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The files are overridden by SLIPSTREAM_RS_* variables: set them aside.
    Component& c = rs();
    for (int i = 0; i < c.count(); i++) {
      const Setting& r = *c.row(i);
      if (!r.file) continue;
      for (const char* e : r.env) {
        if (!e) break;
        const char* v = getenv(e);
        saved_[e] = v ? std::optional<std::string>(v) : std::nullopt;
        unsetenv(e);
      }
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
      if (v)
        setenv(k.c_str(), v->c_str(), 1);
      else
        unsetenv(k.c_str());
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

  // Reloads with `content` in file `name` and returns what stderr got.
  std::string reload_with_file(const char* name, const std::string& content) {
    write_file(name, content);
    StderrCapture cap;
    ss::config::reload();
    return cap.text();
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

TEST_F(RsConfigTest, CoreAndRsocketTablesAreBothListed) {
  Component* list[16];
  const int n = ss::config::components(list, 16);
  ASSERT_GE(n, 2);
  EXPECT_STREQ("core", list[0]->name());
  bool found = false;
  for (int i = 1; i < n && i < 16; ++i) found |= !strcmp(list[i]->name(), "rsocket");
  EXPECT_TRUE(found) << "librsocket registers its table when it loads";
  // Each row lives in one table: the rsocket rows left core.
  Component* core = ss::config::find_component("core");
  ASSERT_NE(nullptr, core);
  EXPECT_GE(core->find("provider"), 0);
  for (const char* name : {"rs_conf_dir", "polling_time", "close_linger"}) {
    EXPECT_EQ(-1, core->find(name)) << name;
    EXPECT_GE(rs().find(name), 0) << name;
  }
}

TEST_F(RsConfigTest, RowsAreConsistent) {
  Component& c = rs();
  ASSERT_GE(c.dir_row(), 0);
  EXPECT_STREQ("rs_conf_dir", c.row(c.dir_row())->name);
  for (int i = 0; i < c.count(); ++i) {
    const Setting& s = *c.row(i);
    SCOPED_TRACE(s.name);
    EXPECT_EQ(i, s.id);
    ASSERT_NE(nullptr, s.env[0]);
    EXPECT_EQ(0, strncmp(s.env[0], "SLIPSTREAM_RS_", 14));
    EXPECT_NE(nullptr, s.help);
    if (s.type == ss::config::Type::kInt) {
      EXPECT_LE(s.min, s.def);
      EXPECT_LE(s.def, s.max);
    }
    if (s.file) {
      // Each rsocket file has its env override SLIPSTREAM_RS_<UPPERNAME>.
      std::string want = "SLIPSTREAM_RS_";
      for (const char* p = s.file; *p; ++p) want += static_cast<char>(toupper(*p));
      EXPECT_EQ(want, s.env[0]);
      EXPECT_STREQ(s.name, s.file);
    }
  }
}

TEST_F(RsConfigTest, Defaults) {
  ss::config::reload();
  const struct {
    const char* name;
    int64_t v;
  } want[] = {
      {"polling_time", 10},     {"wake_up_interval", 500}, {"inline_default", 64},
      {"sqsize_default", 384},  {"rqsize_default", 384},   {"mem_default", 131072},
      {"wmem_default", 131072}, {"iomap_size", 0},         {"close_linger", 500},
  };
  for (const auto& w : want) {
    SCOPED_TRACE(w.name);
    EXPECT_EQ(w.v, rs().get_int(row_of(w.name)));
    EXPECT_EQ(Source::kDefault, rs().source(row_of(w.name)));
  }
  EXPECT_EQ(dir_, rs().get_string(rs().dir_row()));
  unsetenv("SLIPSTREAM_RS_CONF_DIR");
  ss::config::reload();
#ifdef SS_RS_CONF_DIR
  EXPECT_EQ(SS_RS_CONF_DIR, rs().get_string(rs().dir_row()));
#else
  EXPECT_EQ("/etc/rdma/rsocket", rs().get_string(rs().dir_row()));
#endif
}

TEST_F(RsConfigTest, EveryFileIsReadAndEnvWins) {
  Component& c = rs();
  for (int i = 0; i < c.count(); ++i)
    if (c.row(i)->file) {
      ASSERT_NO_FATAL_FAILURE(write_file(c.row(i)->file, "3000"));
    }
  setenv("SLIPSTREAM_RS_SQSIZE_DEFAULT", "200", 1);
  ss::config::reload();
  for (int i = 0; i < c.count(); ++i) {
    const Setting& s = *c.row(i);
    if (!s.file) continue;
    SCOPED_TRACE(s.name);
    const bool env = !strcmp(s.name, "sqsize_default");
    EXPECT_EQ(env ? Source::kEnv : Source::kFile, c.source(i));
    EXPECT_EQ(env ? 200 : 3000, c.get_int(i));
    EXPECT_EQ(env ? "env SLIPSTREAM_RS_SQSIZE_DEFAULT" : dir_ + "/" + s.file, c.origin(i));
  }
}

TEST_F(RsConfigTest, Bounds) {
  const struct {
    const char* file;
    const char* text;
    bool ok;
    int64_t want;
  } cases[] = {
      {"sqsize_default", "0", false, 384},
      {"sqsize_default", "1", true, 1},
      {"sqsize_default", "65534", true, 65534},
      {"sqsize_default", "65535", false, 384},
      {"rqsize_default", "0", false, 384},
      {"rqsize_default", "65534", true, 65534},
      {"inline_default", "0", true, 0},
      {"inline_default", "65535", false, 64},
      {"iomap_size", "32512", true, 32512},
      {"iomap_size", "32513", false, 0},
      {"mem_default", "0", false, 131072},
      {"mem_default", "1", true, 1},
      {"mem_default", "4294967295", true, 4294967295ll},
      {"mem_default", "4294967296", false, 131072},
      {"mem_default", "4g", false, 131072},
      {"mem_default", "3g", true, 3221225472ll},
      {"polling_time", "-1", false, 10},
      {"polling_time", "0", true, 0},
      {"polling_time", "2ms", true, 2000},
      {"wake_up_interval", "3s", true, 3000},
      {"wake_up_interval", "99999999999999999999", false, 500},
      {"inline_default", "0x40", true, 64},
      {"inline_default", "10 20", false, 64},
      {"inline_default", "", false, 64},
      {"inline_default", "12abc", false, 64},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.file) + "=\"" + c.text + "\"");
    const std::string err = reload_with_file(c.file, c.text);
    const int i = row_of(c.file);
    EXPECT_EQ(c.want, rs().get_int(i));
    EXPECT_EQ(c.ok ? Source::kFile : Source::kDefault, rs().source(i));
    EXPECT_EQ(c.ok ? 0 : 1, count_lines(err)) << err;
    if (!c.ok) {
      EXPECT_NE(std::string::npos, err.find(std::string(c.file) + ": bad value")) << err;
    }
    unlink((dir_ + "/" + c.file).c_str());  // one bad file per case
  }
}

TEST_F(RsConfigTest, CloseLingerTakesATimeUnit) {
  setenv("SLIPSTREAM_RS_CLOSE_LINGER", "2s", 1);
  ss::config::reload();
  EXPECT_EQ(2000, rs().get_int(row_of("close_linger")));
  std::string err;
  {
    StderrCapture cap;
    setenv("SLIPSTREAM_RS_CLOSE_LINGER", "2kb", 1);
    ss::config::reload();
    err = cap.text();
  }
  unsetenv("SLIPSTREAM_RS_CLOSE_LINGER");
  EXPECT_EQ(500, rs().get_int(row_of("close_linger")));
  EXPECT_EQ(1, count_lines(err)) << err;
  EXPECT_NE(std::string::npos,
            err.find("close_linger: bad value \"2kb\" from env SLIPSTREAM_RS_CLOSE_LINGER "
                     "(unknown unit"))
      << err;
  EXPECT_NE(std::string::npos, err.find("using default 500ms")) << err;
}

TEST_F(RsConfigTest, WmemBelowLowWaterBecomes4096) {
  const int wmem = row_of("wmem_default");
  reload_with_file("wmem_default", "2047");
  EXPECT_EQ(4096, rs().get_int(wmem));
  reload_with_file("wmem_default", "0");
  EXPECT_EQ(4096, rs().get_int(wmem));
  reload_with_file("wmem_default", "2k");
  EXPECT_EQ(2048, rs().get_int(wmem));
  setenv("SLIPSTREAM_RS_WMEM_DEFAULT", "100", 1);
  ss::config::reload();
  EXPECT_EQ(4096, rs().get_int(wmem));
  EXPECT_EQ(Source::kEnv, rs().source(wmem));
  // Only wmem has the quirk.
  reload_with_file("mem_default", "100");
  EXPECT_EQ(100, rs().get_int(row_of("mem_default")));
}

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
  ASSERT_NO_FATAL_FAILURE(write_file("mem_default", "64k"));
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
// sleeps: with 5 s from the file (given with its unit), a blocked rrecv
// still spins a second in; with the default (10 us) it sleeps
// (PollTest.IdleBlockedRrecvSleeps).
TEST_F(RsConfigTest, PollingTimeFileMakesABlockedCallSpin) {
  ASSERT_NO_FATAL_FAILURE(write_file("polling_time", "5s"));
  ss::config::reload();
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(AF_INET, &p));
  char b[4];
  ssize_t n = -2;
  Usage u = measure_blocked([&] { n = rrecv(p.server, b, sizeof b, 0); },
                            [&] { rsend(p.client, "w", 1, 0); });
  EXPECT_EQ(1, n);
  ASSERT_TRUE(u.blocked_throughout) << "rrecv returned before it was measured";
  // A spinning thread never goes to sleep; how much CPU it gets depends on
  // what else the machine runs (it got 7% once beside a parallel build),
  // so the count of sleeps decides, not its share. With the default
  // polling_time (10 us) the same rrecv sleeps at once (at least once in
  // the window: the wake-up interval is 500 ms).
  ASSERT_GE(u.sleeps, 0) << "voluntary_ctxt_switches not readable";
  EXPECT_EQ(0, u.sleeps) << "a blocked rrecv went to sleep " << u.sleeps << " times in " << u.wall_s
                         << " s (" << u.cpu_s
                         << " s of CPU) although polling_time said to spin 5 s";
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
