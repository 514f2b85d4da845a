// The settings table: defaults, env and file overrides, precedence, bounds,
// upstream quirks, warnings for bad values, reload.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/base/config.h"
#include "core/base/config_parse.h"
#include "tests/common/stderr_capture.h"

namespace ss::config {
namespace {

using sstest::StderrCapture;

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// Every test starts with no SLIPSTREAM_* variable set and the conf dir
// pointing at its own empty temporary directory.
class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_env();
    char tmpl[] = "/tmp/ss-config-test-XXXXXX";
    ASSERT_NE(nullptr, mkdtemp(tmpl));
    dir_ = tmpl;
    setenv("SLIPSTREAM_RS_CONF_DIR", dir_.c_str(), 1);
    reload();
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir_ + "'";
    EXPECT_EQ(0, system(cmd.c_str()));
    clear_env();
    reload();
  }
  static void clear_env() {
    int n = 0;
    const Setting* rows = table(&n);
    for (int i = 0; i < n; ++i)
      if (rows[i].env) unsetenv(rows[i].env);
  }
  void write_file(const char* name, const std::string& content) {
    const std::string path = dir_ + "/" + name;
    FILE* f = fopen(path.c_str(), "w");
    ASSERT_NE(nullptr, f);
    fputs(content.c_str(), f);
    fclose(f);
  }
  // Reloads with `content` in file `name` and returns what stderr got.
  std::string reload_with_file(const char* name, const std::string& content) {
    write_file(name, content);
    StderrCapture cap;
    reload();
    return cap.text();
  }
  std::string reload_with_env(const char* var, const char* value) {
    setenv(var, value, 1);
    StderrCapture cap;
    reload();
    return cap.text();
  }
  std::string dir_;
};

TEST_F(ConfigTest, TableRowsAreConsistent) {
  int n = -1;
  const Setting* rows = table(&n);
  ASSERT_EQ(static_cast<int>(Id::kCount), n);
  for (int i = 0; i < n; ++i) {
    const Setting& s = rows[i];
    SCOPED_TRACE(s.name);
    EXPECT_EQ(i, static_cast<int>(s.id));
    EXPECT_EQ(&s, setting(s.id));
    ASSERT_NE(nullptr, s.env);
    EXPECT_EQ(0, strncmp(s.env, "SLIPSTREAM_", 11));
    EXPECT_NE(nullptr, s.help);
    if (s.type == Type::kInt) {
      EXPECT_LE(s.min, s.def);
      EXPECT_LE(s.def, s.max);
    }
    if (s.file) {
      // Each rsocket file has its env override SLIPSTREAM_RS_<UPPERNAME>.
      std::string want = "SLIPSTREAM_RS_";
      for (const char* p = s.file; *p; ++p) want += static_cast<char>(toupper(*p));
      EXPECT_EQ(want, s.env);
      EXPECT_STREQ(s.name, s.file);
    }
  }
  EXPECT_EQ(nullptr, setting(Id::kCount));
  EXPECT_EQ(nullptr, setting(static_cast<Id>(-1)));
}

TEST_F(ConfigTest, Defaults) {
  struct { Id id; int64_t v; } want[] = {
      {Id::kProvider, 0},           {Id::kLogLevel, 2},          {Id::kRsPollingTime, 10},
      {Id::kRsWakeUpInterval, 500}, {Id::kRsInlineDefault, 64},  {Id::kRsSqsizeDefault, 384},
      {Id::kRsRqsizeDefault, 384},  {Id::kRsMemDefault, 131072}, {Id::kRsWmemDefault, 131072},
      {Id::kRsIomapSize, 0},        {Id::kRsCloseLinger, 500},
  };
  for (const auto& w : want) {
    SCOPED_TRACE(setting(w.id)->name);
    EXPECT_EQ(w.v, get_int(w.id));
    EXPECT_EQ(Source::kDefault, source(w.id));
    EXPECT_EQ("default", origin(w.id));
  }
  EXPECT_EQ("auto", get_string(Id::kProvider));
  EXPECT_EQ("384", get_string(Id::kRsSqsizeDefault));
}

TEST_F(ConfigTest, ConfDirDefaultIsTheConfiguredOne) {
  EXPECT_EQ(dir_, get_string(Id::kRsConfDir));
  EXPECT_EQ(Source::kEnv, source(Id::kRsConfDir));
  unsetenv("SLIPSTREAM_RS_CONF_DIR");
  reload();
#ifdef SS_RS_CONF_DIR
  EXPECT_EQ(SS_RS_CONF_DIR, get_string(Id::kRsConfDir));
#else
  EXPECT_EQ("/etc/rdma/rsocket", get_string(Id::kRsConfDir));
#endif
  EXPECT_EQ(Source::kDefault, source(Id::kRsConfDir));
}

TEST_F(ConfigTest, FileOverridesDefault) {
  EXPECT_EQ("", reload_with_file("polling_time", "  20 \n\n"));
  EXPECT_EQ(20, get_int(Id::kRsPollingTime));
  EXPECT_EQ(Source::kFile, source(Id::kRsPollingTime));
  EXPECT_EQ(dir_ + "/polling_time", origin(Id::kRsPollingTime));
  // Neighbours keep their defaults.
  EXPECT_EQ(500, get_int(Id::kRsWakeUpInterval));
}

TEST_F(ConfigTest, EveryFileIsRead) {
  int n = 0;
  const Setting* rows = table(&n);
  for (int i = 0; i < n; ++i)
    if (rows[i].file) write_file(rows[i].file, "3000");  // within every row's bounds
  reload();
  for (int i = 0; i < n; ++i) {
    if (!rows[i].file) continue;
    SCOPED_TRACE(rows[i].name);
    EXPECT_EQ(Source::kFile, source(rows[i].id));
    EXPECT_EQ(3000, get_int(rows[i].id));
  }
}

TEST_F(ConfigTest, EnvOverridesDefault) {
  EXPECT_EQ("", reload_with_env("SLIPSTREAM_RS_POLLING_TIME", "30"));
  EXPECT_EQ(30, get_int(Id::kRsPollingTime));
  EXPECT_EQ(Source::kEnv, source(Id::kRsPollingTime));
  EXPECT_EQ("env SLIPSTREAM_RS_POLLING_TIME", origin(Id::kRsPollingTime));
}

TEST_F(ConfigTest, EnvBeatsFileBeatsDefault) {
  write_file("rqsize_default", "100");
  setenv("SLIPSTREAM_RS_RQSIZE_DEFAULT", "200", 1);
  reload();
  EXPECT_EQ(200, get_int(Id::kRsRqsizeDefault));
  EXPECT_EQ(Source::kEnv, source(Id::kRsRqsizeDefault));
  unsetenv("SLIPSTREAM_RS_RQSIZE_DEFAULT");
  reload();
  EXPECT_EQ(100, get_int(Id::kRsRqsizeDefault));
  EXPECT_EQ(Source::kFile, source(Id::kRsRqsizeDefault));
  unlink((dir_ + "/rqsize_default").c_str());
  reload();
  EXPECT_EQ(384, get_int(Id::kRsRqsizeDefault));
  EXPECT_EQ(Source::kDefault, source(Id::kRsRqsizeDefault));
}

TEST_F(ConfigTest, BadFileValueWarnsOnceAndUsesDefault) {
  const std::string err = reload_with_file("sqsize_default", "lots\n");
  EXPECT_EQ(384, get_int(Id::kRsSqsizeDefault));
  EXPECT_EQ(Source::kDefault, source(Id::kRsSqsizeDefault));
  EXPECT_EQ(1, count_lines(err)) << err;
  EXPECT_NE(std::string::npos, err.find("WARN")) << err;
  EXPECT_NE(std::string::npos, err.find("sqsize_default:")) << err;
  EXPECT_NE(std::string::npos, err.find("\"lots\"")) << err;
  EXPECT_NE(std::string::npos, err.find(dir_ + "/sqsize_default")) << err;
  EXPECT_NE(std::string::npos, err.find("default 384")) << err;
  // Read once: the next lookups do not warn again.
  StderrCapture cap;
  EXPECT_EQ(384, get_int(Id::kRsSqsizeDefault));
  EXPECT_EQ("", cap.text());
}

TEST_F(ConfigTest, BadEnvValueWarnsAndUsesDefault) {
  write_file("mem_default", "4096");  // a bad env value falls to the default, not the file
  const std::string err = reload_with_env("SLIPSTREAM_RS_MEM_DEFAULT", "-5");
  EXPECT_EQ(131072, get_int(Id::kRsMemDefault));
  EXPECT_EQ(Source::kDefault, source(Id::kRsMemDefault));
  EXPECT_EQ(1, count_lines(err)) << err;
  EXPECT_NE(std::string::npos, err.find("mem_default:")) << err;
  EXPECT_NE(std::string::npos, err.find("\"-5\"")) << err;
  EXPECT_NE(std::string::npos, err.find("env SLIPSTREAM_RS_MEM_DEFAULT")) << err;
  EXPECT_NE(std::string::npos, err.find("default 131072")) << err;
}

TEST_F(ConfigTest, Bounds) {
  struct { const char* file; const char* text; bool ok; int64_t want; } cases[] = {
      {"sqsize_default", "0", false, 384},      {"sqsize_default", "1", true, 1},
      {"sqsize_default", "65534", true, 65534}, {"sqsize_default", "65535", false, 384},
      {"rqsize_default", "0", false, 384},      {"rqsize_default", "65534", true, 65534},
      {"inline_default", "0", true, 0},         {"inline_default", "65535", false, 64},
      {"iomap_size", "32512", true, 32512},     {"iomap_size", "32513", false, 0},
      {"mem_default", "0", false, 131072},      {"mem_default", "1", true, 1},
      {"mem_default", "4294967295", true, 4294967295ll},
      {"mem_default", "4294967296", false, 131072},
      {"polling_time", "-1", false, 10},        {"polling_time", "0", true, 0},
      {"wake_up_interval", "99999999999999999999", false, 500},
      {"inline_default", "0x40", true, 64},     {"inline_default", "10 20", false, 64},
      {"inline_default", "", false, 64},        {"inline_default", "12abc", false, 64},
  };
  int n = 0;
  const Setting* rows = table(&n);
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.file) + "=\"" + c.text + "\"");
    const std::string err = reload_with_file(c.file, c.text);
    Id id = Id::kCount;
    for (int i = 0; i < n; ++i)
      if (rows[i].file && !strcmp(rows[i].file, c.file)) id = rows[i].id;
    ASSERT_NE(Id::kCount, id);
    EXPECT_EQ(c.want, get_int(id));
    EXPECT_EQ(c.ok ? Source::kFile : Source::kDefault, source(id));
    EXPECT_EQ(c.ok ? 0 : 1, count_lines(err)) << err;
    if (!c.ok) {
      EXPECT_NE(std::string::npos, err.find(std::string(c.file) + ":")) << err;
    }
    unlink((dir_ + "/" + c.file).c_str());  // one bad file per case
  }
}

TEST_F(ConfigTest, WmemBelowLowWaterBecomes4096) {
  reload_with_file("wmem_default", "2047");
  EXPECT_EQ(4096, get_int(Id::kRsWmemDefault));
  reload_with_file("wmem_default", "0");
  EXPECT_EQ(4096, get_int(Id::kRsWmemDefault));
  reload_with_file("wmem_default", "2048");
  EXPECT_EQ(2048, get_int(Id::kRsWmemDefault));
  EXPECT_EQ("", reload_with_env("SLIPSTREAM_RS_WMEM_DEFAULT", "100"));
  EXPECT_EQ(4096, get_int(Id::kRsWmemDefault));
  EXPECT_EQ(Source::kEnv, source(Id::kRsWmemDefault));
  // Only wmem has the quirk.
  reload_with_file("mem_default", "100");
  EXPECT_EQ(100, get_int(Id::kRsMemDefault));
}

TEST_F(ConfigTest, ProviderEnum) {
  const struct { const char* text; int64_t index; const char* name; } ok[] = {
      {"auto", 0, "auto"}, {"shm", 1, "shm"}, {"tcp", 2, "tcp"}, {"VERBS", 3, "verbs"},
      {" shm ", 1, "shm"},
  };
  for (const auto& c : ok) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ("", reload_with_env("SLIPSTREAM_PROVIDER", c.text));
    EXPECT_EQ(c.index, get_int(Id::kProvider));
    EXPECT_EQ(c.name, get_string(Id::kProvider));
    EXPECT_EQ(Source::kEnv, source(Id::kProvider));
  }
  for (const char* bad : {"rdma", "", "2", "tcpx"}) {
    SCOPED_TRACE(bad);
    const std::string err = reload_with_env("SLIPSTREAM_PROVIDER", bad);
    EXPECT_EQ(0, get_int(Id::kProvider));
    EXPECT_EQ("auto", get_string(Id::kProvider));
    EXPECT_EQ(1, count_lines(err)) << err;
    EXPECT_NE(std::string::npos, err.find("provider:")) << err;
    EXPECT_NE(std::string::npos, err.find("auto|shm|tcp|verbs")) << err;
  }
}

TEST_F(ConfigTest, LogLevelNumbersAndNames) {
  const struct { const char* text; int64_t want; } ok[] = {
      {"0", 0}, {"6", 6}, {"panic", 0}, {"error", 1}, {"warn", 2}, {"info", 3},
      {"details", 4}, {"DEBUG", 5}, {"fine", 6},
  };
  for (const auto& c : ok) {
    SCOPED_TRACE(c.text);
    setenv("SLIPSTREAM_LOG_LEVEL", c.text, 1);
    reload();
    EXPECT_EQ(c.want, get_int(Id::kLogLevel));
    EXPECT_EQ(c.want, env_int(Id::kLogLevel));
  }
  for (const char* bad : {"7", "-1", "loud"}) {
    SCOPED_TRACE(bad);
    const std::string err = reload_with_env("SLIPSTREAM_LOG_LEVEL", bad);
    EXPECT_EQ(2, get_int(Id::kLogLevel));
    EXPECT_EQ(2, env_int(Id::kLogLevel));
    EXPECT_EQ(1, count_lines(err)) << err;
    EXPECT_NE(std::string::npos, err.find("log_level:")) << err;
  }
}

TEST_F(ConfigTest, WarningsFollowTheLogThreshold) {
  setenv("SLIPSTREAM_LOG_LEVEL", "error", 1);
  EXPECT_EQ("", reload_with_file("polling_time", "soon"));
  EXPECT_EQ(10, get_int(Id::kRsPollingTime));
}

TEST_F(ConfigTest, ReloadRereadsButLookupsAreCached) {
  reload_with_file("polling_time", "20");
  EXPECT_EQ(20, get_int(Id::kRsPollingTime));
  write_file("polling_time", "25");
  setenv("SLIPSTREAM_PROVIDER", "tcp", 1);
  EXPECT_EQ(20, get_int(Id::kRsPollingTime));  // read once
  EXPECT_EQ("auto", get_string(Id::kProvider));
  reload();
  EXPECT_EQ(25, get_int(Id::kRsPollingTime));
  EXPECT_EQ("tcp", get_string(Id::kProvider));
}

TEST_F(ConfigTest, MissingFilesAndDirAreSilent) {
  StderrCapture cap;
  reload();
  setenv("SLIPSTREAM_RS_CONF_DIR", (dir_ + "/nowhere").c_str(), 1);
  reload();
  EXPECT_EQ("", cap.text());
  EXPECT_EQ(384, get_int(Id::kRsSqsizeDefault));
  EXPECT_EQ(Source::kDefault, source(Id::kRsSqsizeDefault));
}

TEST_F(ConfigTest, UnreadableFileWarns) {
  ASSERT_EQ(0, mkdir((dir_ + "/polling_time").c_str(), 0700));  // read() gives EISDIR
  StderrCapture cap;
  reload();
  const std::string err = cap.text();
  EXPECT_EQ(10, get_int(Id::kRsPollingTime));
  EXPECT_EQ(1, count_lines(err)) << err;
  EXPECT_NE(std::string::npos, err.find("polling_time: cannot read")) << err;
  EXPECT_NE(std::string::npos, err.find("default 10")) << err;
}

TEST_F(ConfigTest, OversizedFileWarnsWithItsStartOnly) {
  const std::string err = reload_with_file("iomap_size", std::string(5000, '7'));
  EXPECT_EQ(0, get_int(Id::kRsIomapSize));
  EXPECT_EQ(1, count_lines(err)) << err;
  EXPECT_NE(std::string::npos, err.find("too long")) << err;
  EXPECT_NE(std::string::npos, err.find("...")) << err;
  EXPECT_LT(err.size(), 400u) << err;
}

TEST_F(ConfigTest, ControlCharactersDoNotSplitTheWarning) {
  const std::string err = reload_with_file("inline_default", "1\n2\n3\n");
  EXPECT_EQ(1, count_lines(err)) << err;
  EXPECT_NE(std::string::npos, err.find("\"1?2?3\"")) << err;
}

TEST_F(ConfigTest, BadConfDirFallsBackToDefault) {
  const std::string err = reload_with_env("SLIPSTREAM_RS_CONF_DIR", "   ");
  EXPECT_EQ(1, count_lines(err)) << err;
  EXPECT_NE(std::string::npos, err.find("rs_conf_dir:")) << err;
  EXPECT_EQ(Source::kDefault, source(Id::kRsConfDir));
  EXPECT_EQ(setting(Id::kRsConfDir)->str_def, get_string(Id::kRsConfDir));
}

TEST_F(ConfigTest, ErrnoPreserved) {
  write_file("polling_time", "nonsense");
  errno = EXDEV;
  {
    StderrCapture cap;
    reload();
    EXPECT_EQ(EXDEV, errno);
    EXPECT_EQ(10, get_int(Id::kRsPollingTime));
    EXPECT_EQ(EXDEV, errno);
  }
}

TEST_F(ConfigTest, InvalidIdsAreHarmless) {
  EXPECT_EQ(0, get_int(Id::kCount));
  EXPECT_EQ("", get_string(Id::kCount));
  EXPECT_EQ("", origin(Id::kCount));
  EXPECT_EQ(Source::kDefault, source(Id::kCount));
  EXPECT_EQ(0, env_int(Id::kCount));
}

TEST_F(ConfigTest, ConcurrentFirstUse) {
  reload_with_file("sqsize_default", "77");
  std::vector<std::thread> threads;
  std::vector<int64_t> got(8);
  for (size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&got, t] {
      int64_t sum = 0;
      for (int i = 0; i < 1000; ++i) sum += get_int(Id::kRsSqsizeDefault);
      got[t] = sum;
    });
  for (auto& t : threads) t.join();
  for (int64_t g : got) EXPECT_EQ(77000, g);
}

TEST(ConfigParse, Integers) {
  int64_t v = 0;
  EXPECT_EQ(Check::kOk, parse_int(" 42\t\n", 5, &v));
  EXPECT_EQ(42, v);
  EXPECT_EQ(Check::kOk, parse_int("-0x10", 5, &v));
  EXPECT_EQ(-16, v);
  EXPECT_EQ(Check::kOk, parse_int("+7", 2, &v));
  EXPECT_EQ(7, v);
  EXPECT_EQ(Check::kOk, parse_int("-9223372036854775808", 20, &v));
  EXPECT_EQ(INT64_MIN, v);
  EXPECT_EQ(Check::kOutOfRange, parse_int("9223372036854775808", 19, &v));
  EXPECT_EQ(Check::kOutOfRange, parse_int("184467440737095516160", 21, &v));
  EXPECT_EQ(Check::kEmpty, parse_int("  ", 2, &v));
  EXPECT_EQ(Check::kNotNumber, parse_int("-", 1, &v));
  EXPECT_EQ(Check::kNotNumber, parse_int("0x", 2, &v));
  EXPECT_EQ(Check::kNotNumber, parse_int("1 2", 3, &v));
  // Length-bounded: an embedded NUL is not an end of text.
  EXPECT_EQ(Check::kNotNumber, parse_int("12\0" "3", 4, &v));
}

TEST(ConfigParse, Choices) {
  EXPECT_EQ(0, parse_choice("a", 1, "a|bb|c"));
  EXPECT_EQ(1, parse_choice(" BB ", 4, "a|bb|c"));
  EXPECT_EQ(2, parse_choice("c", 1, "a|bb|c"));
  EXPECT_EQ(-1, parse_choice("b", 1, "a|bb|c"));
  EXPECT_EQ(-1, parse_choice("", 0, "a|bb|c"));
  char out[8];
  EXPECT_TRUE(choice_at("a|bb|c", 1, out, sizeof out));
  EXPECT_STREQ("bb", out);
  EXPECT_FALSE(choice_at("a|bb|c", 3, out, sizeof out));
  EXPECT_FALSE(choice_at("a|bb|c", -1, out, sizeof out));
}

}  // namespace
}  // namespace ss::config
