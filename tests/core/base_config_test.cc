// The settings layer: a test component's table beside core's own (two
// components registered and listed), defaults, several environment names
// and their precedence, the directory of one-value files and env over file,
// a rules source with its origin, units for sizes and times, bounds,
// warnings naming the setting, value and default, reload. rsocket's own
// rows are tested in tests/librsocket/config_test.cc.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/base/config.h"
#include "core/base/config_core.h"
#include "core/base/config_parse.h"
#include "tests/common/stderr_capture.h"

namespace ss::config {
namespace {

using sstest::StderrCapture;

// A component as a face declares one: a directory row, a row with two
// environment names, sizes and times, a quirk, an enum.
enum class TId : int { kDir, kDepth, kSize, kSpin, kWait, kLowWater, kMode, kCount };

constexpr int64_t halve_below_100(int64_t v) { return v < 100 ? v / 2 : v; }

constexpr Setting kRows[] = {
    {.id = int(TId::kDir),
     .name = "test_dir",
     .env = {"SSTEST_DIR"},
     .type = Type::kString,
     .str_def = "/nonexistent/ss-config-test",
     .help = "directory of the test files"},
    {.id = int(TId::kDepth),
     .name = "depth",
     .env = {"SSTEST_DEPTH", "SSTEST_ALIAS_DEPTH"},
     .file = "depth",
     .def = 384,
     .min = 1,
     .max = 65534,
     .help = "entries"},
    {.id = int(TId::kSize),
     .name = "size",
     .env = {"SSTEST_SIZE"},
     .file = "size",
     .unit = Unit::kBytes,
     .def = 131072,
     .min = 1,
     .max = 0xFFFFFFFFll,
     .help = "bytes"},
    {.id = int(TId::kSpin),
     .name = "spin",
     .env = {"SSTEST_SPIN"},
     .file = "spin",
     .unit = Unit::kUs,
     .def = 10,
     .max = 0xFFFFFFFFll,
     .help = "microseconds"},
    {.id = int(TId::kWait),
     .name = "wait",
     .env = {"SSTEST_WAIT"},
     .file = "wait",
     .unit = Unit::kMs,
     .def = 500,
     .max = 60000,
     .help = "milliseconds"},
    {.id = int(TId::kLowWater),
     .name = "low_water",
     .env = {"SSTEST_LOW_WATER"},
     .file = "low_water",
     .def = 200,
     .max = 1000,
     .help = "a quirk",
     .adjust = halve_below_100},
    {.id = int(TId::kMode),
     .name = "mode",
     .env = {"SSTEST_MODE"},
     .type = Type::kEnum,
     .def = 0,
     .max = 2,
     .str_def = "auto|fast|slow",
     .help = "a choice"},
};
static_assert(in_id_order(kRows));

constinit Table<TId> g_test{"test", kRows, TId::kDir};
const Enlisted g_enlisted{g_test};

// A rules file as libvma.conf would be: "name value" lines, found with
// their line number as origin.
class FakeRules final : public ValueSource {
 public:
  Source kind() const override { return Source::kRules; }
  long lookup(const Component& c, const Setting& s, char* text, size_t cap, char* origin,
              size_t ocap) const override {
    asked.insert(s.name);
    auto it = lines.find(s.name);
    if (it == lines.end()) return -ENOENT;
    snprintf(origin, ocap, "libvma.conf:%d", it->second.first);
    snprintf(text, cap, "%s", it->second.second.c_str());
    return static_cast<long>(strlen(text));
  }
  std::map<std::string, std::pair<int, std::string>> lines;  // name -> line, value
  mutable std::set<std::string> asked;                       // rows looked up
};

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Every test starts with no variable of either table set and the test
// directory pointing at its own empty temporary directory.
class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clear_env();
    char tmpl[] = "/tmp/ss-config-test-XXXXXX";
    ASSERT_NE(nullptr, mkdtemp(tmpl));
    dir_ = tmpl;
    setenv("SSTEST_DIR", dir_.c_str(), 1);
    reload();
  }
  void TearDown() override {
    g_test.remove_source(&rules_);
    std::string cmd = "rm -rf '" + dir_ + "'";
    EXPECT_EQ(0, system(cmd.c_str()));
    clear_env();
    reload();
  }
  static void clear_env() {
    for (Component* c : {static_cast<Component*>(&g_test), static_cast<Component*>(&core::table)})
      for (int i = 0; i < c->count(); ++i)
        for (const char* e : c->row(i)->env)
          if (e) unsetenv(e);
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
  FakeRules rules_;
};

TEST_F(ConfigTest, CoreRowsAreConsistent) {
  Component& c = core::table;
  EXPECT_STREQ("core", c.name());
  ASSERT_EQ(static_cast<int>(core::Id::kCount), c.count());
  for (int i = 0; i < c.count(); ++i) {
    const Setting& s = *c.row(i);
    SCOPED_TRACE(s.name);
    EXPECT_EQ(i, s.id);
    EXPECT_EQ(i, c.find(s.name));
    ASSERT_NE(nullptr, s.env[0]);
    EXPECT_EQ(0, strncmp(s.env[0], "SLIPSTREAM_", 11));
    EXPECT_NE(nullptr, s.help);
    EXPECT_EQ(nullptr, s.file);
    if (s.type == Type::kInt) {
      EXPECT_LE(s.min, s.def);
      EXPECT_LE(s.def, s.max);
    }
  }
  EXPECT_EQ(nullptr, c.row(c.count()));
  EXPECT_EQ(nullptr, c.row(-1));
  EXPECT_EQ(-1, c.find("polling_time"));  // rsocket's, not core's
}

TEST_F(ConfigTest, TwoComponentsAreListed) {
  Component* list[16];
  const int n = components(list, 16);
  ASSERT_GE(n, 2);
  ASSERT_LE(n, 16);
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back(list[i]->name());
  EXPECT_EQ("core", names[0]) << "core registers first, when libslipstream loads";
  EXPECT_NE(names.end(), std::find(names.begin(), names.end(), "test"));
  EXPECT_EQ(&core::table, find_component("core"));
  EXPECT_EQ(&g_test, find_component("test"));
  EXPECT_EQ(nullptr, find_component("nonesuch"));
  // Enlisting twice lists once; delisting removes.
  g_test.enlist();
  EXPECT_EQ(n, components(list, 16));
  g_test.delist();
  EXPECT_EQ(nullptr, find_component("test"));
  EXPECT_EQ(n - 1, components(list, 16));
  g_test.enlist();
  EXPECT_EQ(&g_test, find_component("test"));
}

TEST_F(ConfigTest, Defaults) {
  EXPECT_EQ(0, core::table.get_int(core::Id::kProvider));
  EXPECT_EQ("auto", core::table.get_string(core::Id::kProvider));
  EXPECT_EQ(2, core::table.get_int(core::Id::kLogLevel));
  struct {
    TId id;
    int64_t v;
  } want[] = {
      {TId::kDepth, 384}, {TId::kSize, 131072},  {TId::kSpin, 10},
      {TId::kWait, 500},  {TId::kLowWater, 200}, {TId::kMode, 0},
  };
  for (const auto& w : want) {
    SCOPED_TRACE(g_test.row(int(w.id))->name);
    EXPECT_EQ(w.v, g_test.get_int(w.id));
    EXPECT_EQ(Source::kDefault, g_test.source(w.id));
    EXPECT_EQ("default", g_test.origin(w.id));
  }
  EXPECT_EQ("384", g_test.get_string(TId::kDepth));
  EXPECT_EQ("auto", g_test.get_string(TId::kMode));
}

TEST_F(ConfigTest, DirRowComesFromEnvElseDefault) {
  EXPECT_EQ(dir_, g_test.get_string(TId::kDir));
  EXPECT_EQ(Source::kEnv, g_test.source(TId::kDir));
  unsetenv("SSTEST_DIR");
  reload();
  EXPECT_EQ("/nonexistent/ss-config-test", g_test.get_string(TId::kDir));
  EXPECT_EQ(Source::kDefault, g_test.source(TId::kDir));
}

TEST_F(ConfigTest, FileOverridesDefault) {
  EXPECT_EQ("", reload_with_file("depth", "  20 \n\n"));
  EXPECT_EQ(20, g_test.get_int(TId::kDepth));
  EXPECT_EQ(Source::kFile, g_test.source(TId::kDepth));
  EXPECT_EQ(dir_ + "/depth", g_test.origin(TId::kDepth));
  EXPECT_EQ(131072, g_test.get_int(TId::kSize));  // neighbours keep their defaults
}

TEST_F(ConfigTest, EnvBeatsFileBeatsDefault) {
  write_file("depth", "100");
  setenv("SSTEST_DEPTH", "200", 1);
  reload();
  EXPECT_EQ(200, g_test.get_int(TId::kDepth));
  EXPECT_EQ(Source::kEnv, g_test.source(TId::kDepth));
  unsetenv("SSTEST_DEPTH");
  reload();
  EXPECT_EQ(100, g_test.get_int(TId::kDepth));
  EXPECT_EQ(Source::kFile, g_test.source(TId::kDepth));
  unlink((dir_ + "/depth").c_str());
  reload();
  EXPECT_EQ(384, g_test.get_int(TId::kDepth));
  EXPECT_EQ(Source::kDefault, g_test.source(TId::kDepth));
}

TEST_F(ConfigTest, SeveralEnvNamesFirstSetWins) {
  EXPECT_EQ("", reload_with_env("SSTEST_ALIAS_DEPTH", "7"));
  EXPECT_EQ(7, g_test.get_int(TId::kDepth));
  EXPECT_EQ("env SSTEST_ALIAS_DEPTH", g_test.origin(TId::kDepth));
  // The first name in the row's order wins over a later one.
  EXPECT_EQ("", reload_with_env("SSTEST_DEPTH", "9"));
  EXPECT_EQ(9, g_test.get_int(TId::kDepth));
  EXPECT_EQ("env SSTEST_DEPTH", g_test.origin(TId::kDepth));
  EXPECT_EQ(9, g_test.env_int(TId::kDepth));
  // Set but bad: a warning and the default; the later name is not consulted.
  const std::string err = reload_with_env("SSTEST_DEPTH", "many");
  EXPECT_EQ(384, g_test.get_int(TId::kDepth));
  EXPECT_EQ(384, g_test.env_int(TId::kDepth));
  EXPECT_EQ(1, count_lines(err)) << err;
  EXPECT_TRUE(has(err, "depth: bad value \"many\" from env SSTEST_DEPTH")) << err;
  EXPECT_TRUE(has(err, "default 384")) << err;
}

TEST_F(ConfigTest, RulesSourceWithItsOrigin) {
  rules_.lines["depth"] = {12, "1000"};
  rules_.lines["size"] = {14, "1m"};
  rules_.lines["spin"] = {15, "soon"};
  write_file("depth", "100");      // the rules file beats the directory
  setenv("SSTEST_SIZE", "2k", 1);  // the environment beats the rules file
  std::string err;
  {
    StderrCapture cap;
    ASSERT_EQ(0, g_test.add_source(&rules_));
    err = cap.text();
  }
  EXPECT_EQ(1000, g_test.get_int(TId::kDepth));
  EXPECT_EQ(Source::kRules, g_test.source(TId::kDepth));
  EXPECT_EQ("libvma.conf:12", g_test.origin(TId::kDepth));
  EXPECT_EQ(2048, g_test.get_int(TId::kSize));
  EXPECT_EQ(Source::kEnv, g_test.source(TId::kSize));
  // A bad value there names its line.
  EXPECT_EQ(10, g_test.get_int(TId::kSpin));
  EXPECT_EQ(1, count_lines(err)) << err;
  EXPECT_TRUE(has(err, "spin: bad value \"soon\" from libvma.conf:15")) << err;
  EXPECT_TRUE(has(err, "default 10us")) << err;
  // Taken away, the directory's value shows again.
  g_test.remove_source(&rules_);
  EXPECT_EQ(100, g_test.get_int(TId::kDepth));
  EXPECT_EQ(Source::kFile, g_test.source(TId::kDepth));
  // Only its own component's rows are looked up there, and not the
  // directory row (which names where the files are).
  rules_.asked.clear();
  ASSERT_EQ(0, g_test.add_source(&rules_));
  reload();
  EXPECT_EQ(1u, rules_.asked.count("depth"));
  EXPECT_EQ(0u, rules_.asked.count("test_dir"));
  EXPECT_EQ(0u, rules_.asked.count("provider"));
  EXPECT_EQ(0u, rules_.asked.count("log_level"));
}

TEST_F(ConfigTest, SizeUnitsArePowersOf1024) {
  const struct {
    const char* text;
    int64_t want;
  } ok[] = {
      {"64k", 65536},       {"64K", 65536}, {"1m", 1048576}, {"1M", 1048576},
      {"2g", 2147483648ll}, {"3", 3},       {"10 k", 10240}, {"0x10k", 16384},
  };
  for (const auto& c : ok) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ("", reload_with_file("size", c.text));
    EXPECT_EQ(c.want, g_test.get_int(TId::kSize));
    EXPECT_EQ(Source::kFile, g_test.source(TId::kSize));
  }
}

TEST_F(ConfigTest, TimeUnitsConvertToTheRowsUnit) {
  const struct {
    const char* file;
    const char* text;
    TId id;
    int64_t want;
  } ok[] = {
      {"spin", "10ms", TId::kSpin, 10000}, {"spin", "100us", TId::kSpin, 100},
      {"spin", "5s", TId::kSpin, 5000000}, {"spin", "3000ns", TId::kSpin, 3},
      {"spin", "7", TId::kSpin, 7},        {"wait", "5s", TId::kWait, 5000},
      {"wait", "10ms", TId::kWait, 10},    {"wait", "2000us", TId::kWait, 2},
      {"wait", "42", TId::kWait, 42},
  };
  for (const auto& c : ok) {
    SCOPED_TRACE(std::string(c.file) + "=" + c.text);
    EXPECT_EQ("", reload_with_file(c.file, c.text));
    EXPECT_EQ(c.want, g_test.get_int(c.id));
    unlink((dir_ + "/" + c.file).c_str());
  }
}

TEST_F(ConfigTest, BadUnitsWarnNamingSettingValueAndDefault) {
  const struct {
    const char* file;
    const char* text;
    const char* why;
    const char* def;
  } bad[] = {
      {"size", "64x", "unknown unit", "default 131072"},
      {"size", "10ms", "unknown unit", "default 131072"},  // a time for a size
      {"size", "1.5k", "unknown unit", "default 131072"},
      {"size", "5g", "out of range", "default 131072"},  // beyond the row's max
      {"spin", "10k", "unknown unit", "default 10us"},   // a size for a time
      {"spin", "10m", "unknown unit", "default 10us"},   // minutes? milli? neither
      {"spin", "1500ns", "not a whole number", "default 10us"},
      {"wait", "1500us", "not a whole number", "default 500ms"},
      {"wait", "61s", "out of range", "default 500ms"},
      {"wait", "9999999999999s", "out of range", "default 500ms"},  // overflows in ns
      {"depth", "4k", "not an integer", "default 384"},             // no unit on a unitless row
  };
  for (const auto& c : bad) {
    SCOPED_TRACE(std::string(c.file) + "=" + c.text);
    const std::string err = reload_with_file(c.file, c.text);
    EXPECT_EQ(1, count_lines(err)) << err;
    EXPECT_TRUE(has(err, "WARN")) << err;
    EXPECT_TRUE(has(err, std::string(c.file) + ": bad value \"" + c.text + "\"")) << err;
    EXPECT_TRUE(has(err, dir_ + "/" + c.file)) << err;
    EXPECT_TRUE(has(err, c.why)) << err;
    EXPECT_TRUE(has(err, std::string("; using ") + c.def)) << err;
    const int i = g_test.find(c.file);
    EXPECT_EQ(g_test.row(i)->def, g_test.get_int(i));
    EXPECT_EQ(Source::kDefault, g_test.source(i));
    unlink((dir_ + "/" + c.file).c_str());
  }
}

TEST_F(ConfigTest, BadFileValueWarnsOnceAndUsesDefault) {
  const std::string err = reload_with_file("depth", "lots\n");
  EXPECT_EQ(384, g_test.get_int(TId::kDepth));
  EXPECT_EQ(Source::kDefault, g_test.source(TId::kDepth));
  EXPECT_EQ(1, count_lines(err)) << err;
  EXPECT_TRUE(has(err, "WARN")) << err;
  EXPECT_TRUE(has(err, "depth:")) << err;
  EXPECT_TRUE(has(err, "\"lots\"")) << err;
  EXPECT_TRUE(has(err, dir_ + "/depth")) << err;
  EXPECT_TRUE(has(err, "default 384")) << err;
  // Read once: the next lookups do not warn again.
  StderrCapture cap;
  EXPECT_EQ(384, g_test.get_int(TId::kDepth));
  EXPECT_EQ("", cap.text());
}

TEST_F(ConfigTest, BadEnvValueWarnsAndUsesDefaultNotTheFile) {
  write_file("size", "4096");
  const std::string err = reload_with_env("SSTEST_SIZE", "-5");
  EXPECT_EQ(131072, g_test.get_int(TId::kSize));
  EXPECT_EQ(Source::kDefault, g_test.source(TId::kSize));
  EXPECT_EQ(1, count_lines(err)) << err;
  EXPECT_TRUE(has(err, "size:")) << err;
  EXPECT_TRUE(has(err, "\"-5\"")) << err;
  EXPECT_TRUE(has(err, "env SSTEST_SIZE")) << err;
  EXPECT_TRUE(has(err, "default 131072")) << err;
}

TEST_F(ConfigTest, Bounds) {
  const struct {
    const char* file;
    const char* text;
    bool ok;
    int64_t want;
  } cases[] = {
      {"depth", "0", false, 384},
      {"depth", "1", true, 1},
      {"depth", "65534", true, 65534},
      {"depth", "65535", false, 384},
      {"size", "4294967295", true, 4294967295ll},
      {"size", "4294967296", false, 131072},
      {"size", "0", false, 131072},
      {"spin", "-1", false, 10},
      {"spin", "0", true, 0},
      {"wait", "99999999999999999999", false, 500},
      {"depth", "0x40", true, 64},
      {"depth", "10 20", false, 384},
      {"depth", "", false, 384},
      {"depth", "12abc", false, 384},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.file) + "=\"" + c.text + "\"");
    const std::string err = reload_with_file(c.file, c.text);
    const int i = g_test.find(c.file);
    ASSERT_GE(i, 0);
    EXPECT_EQ(c.want, g_test.get_int(i));
    EXPECT_EQ(c.ok ? Source::kFile : Source::kDefault, g_test.source(i));
    EXPECT_EQ(c.ok ? 0 : 1, count_lines(err)) << err;
    if (!c.ok) {
      EXPECT_TRUE(has(err, std::string(c.file) + ":")) << err;
    }
    unlink((dir_ + "/" + c.file).c_str());  // one bad file per case
  }
}

TEST_F(ConfigTest, RowQuirkAppliesToAcceptedValues) {
  reload_with_file("low_water", "50");
  EXPECT_EQ(25, g_test.get_int(TId::kLowWater));
  EXPECT_EQ("", reload_with_env("SSTEST_LOW_WATER", "80"));
  EXPECT_EQ(40, g_test.get_int(TId::kLowWater));
  reload_with_env("SSTEST_LOW_WATER", "100");
  EXPECT_EQ(100, g_test.get_int(TId::kLowWater));
  reload_with_file("depth", "50");  // only its own row
  EXPECT_EQ(50, g_test.get_int(TId::kDepth));
}

TEST_F(ConfigTest, ProviderEnum) {
  const struct {
    const char* text;
    int64_t index;
    const char* name;
  } ok[] = {
      {"auto", 0, "auto"},   {"shm", 1, "shm"},   {"tcp", 2, "tcp"},
      {"VERBS", 3, "verbs"}, {" shm ", 1, "shm"},
  };
  for (const auto& c : ok) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ("", reload_with_env("SLIPSTREAM_PROVIDER", c.text));
    EXPECT_EQ(c.index, core::table.get_int(core::Id::kProvider));
    EXPECT_EQ(c.name, core::table.get_string(core::Id::kProvider));
    EXPECT_EQ(Source::kEnv, core::table.source(core::Id::kProvider));
  }
  for (const char* bad : {"rdma", "", "2", "tcpx"}) {
    SCOPED_TRACE(bad);
    const std::string err = reload_with_env("SLIPSTREAM_PROVIDER", bad);
    EXPECT_EQ(0, core::table.get_int(core::Id::kProvider));
    EXPECT_EQ("auto", core::table.get_string(core::Id::kProvider));
    EXPECT_EQ(1, count_lines(err)) << err;
    EXPECT_TRUE(has(err, "provider:")) << err;
    EXPECT_TRUE(has(err, "auto|shm|tcp|verbs")) << err;
  }
}

TEST_F(ConfigTest, LogLevelNumbersAndNames) {
  const struct {
    const char* text;
    int64_t want;
  } ok[] = {
      {"0", 0},    {"6", 6},       {"panic", 0}, {"error", 1}, {"warn", 2},
      {"info", 3}, {"details", 4}, {"DEBUG", 5}, {"fine", 6},
  };
  for (const auto& c : ok) {
    SCOPED_TRACE(c.text);
    setenv("SLIPSTREAM_LOG_LEVEL", c.text, 1);
    reload();
    EXPECT_EQ(c.want, core::table.get_int(core::Id::kLogLevel));
    EXPECT_EQ(c.want, core::table.env_int(core::Id::kLogLevel));
  }
  for (const char* bad : {"7", "-1", "loud"}) {
    SCOPED_TRACE(bad);
    const std::string err = reload_with_env("SLIPSTREAM_LOG_LEVEL", bad);
    EXPECT_EQ(2, core::table.get_int(core::Id::kLogLevel));
    EXPECT_EQ(2, core::table.env_int(core::Id::kLogLevel));
    EXPECT_EQ(1, count_lines(err)) << err;
    EXPECT_TRUE(has(err, "log_level:")) << err;
  }
}

TEST_F(ConfigTest, WarningsFollowTheLogThreshold) {
  setenv("SLIPSTREAM_LOG_LEVEL", "error", 1);
  EXPECT_EQ("", reload_with_file("spin", "soon"));
  EXPECT_EQ(10, g_test.get_int(TId::kSpin));
}

TEST_F(ConfigTest, ReloadRereadsButLookupsAreCached) {
  reload_with_file("spin", "20");
  EXPECT_EQ(20, g_test.get_int(TId::kSpin));
  write_file("spin", "25");
  setenv("SLIPSTREAM_PROVIDER", "tcp", 1);
  EXPECT_EQ(20, g_test.get_int(TId::kSpin));  // read once
  EXPECT_EQ("auto", core::table.get_string(core::Id::kProvider));
  reload();
  EXPECT_EQ(25, g_test.get_int(TId::kSpin));
  EXPECT_EQ("tcp", core::table.get_string(core::Id::kProvider));
}

TEST_F(ConfigTest, MissingFilesAndDirAreSilent) {
  StderrCapture cap;
  reload();
  setenv("SSTEST_DIR", (dir_ + "/nowhere").c_str(), 1);
  reload();
  EXPECT_EQ("", cap.text());
  EXPECT_EQ(384, g_test.get_int(TId::kDepth));
  EXPECT_EQ(Source::kDefault, g_test.source(TId::kDepth));
}

TEST_F(ConfigTest, UnreadableFileWarns) {
  ASSERT_EQ(0, mkdir((dir_ + "/spin").c_str(), 0700));  // read() gives EISDIR
  StderrCapture cap;
  reload();
  const std::string err = cap.text();
  EXPECT_EQ(10, g_test.get_int(TId::kSpin));
  EXPECT_EQ(1, count_lines(err)) << err;
  EXPECT_TRUE(has(err, "spin: cannot read")) << err;
  EXPECT_TRUE(has(err, "default 10")) << err;
}

TEST_F(ConfigTest, OversizedFileWarnsWithItsStartOnly) {
  const std::string err = reload_with_file("depth", std::string(5000, '7'));
  EXPECT_EQ(384, g_test.get_int(TId::kDepth));
  EXPECT_EQ(1, count_lines(err)) << err;
  EXPECT_TRUE(has(err, "too long")) << err;
  EXPECT_TRUE(has(err, "...")) << err;
  EXPECT_LT(err.size(), 400u) << err;
}

TEST_F(ConfigTest, ControlCharactersDoNotSplitTheWarning) {
  const std::string err = reload_with_file("depth", "1\n2\n3\n");
  EXPECT_EQ(1, count_lines(err)) << err;
  EXPECT_TRUE(has(err, "\"1?2?3\"")) << err;
}

TEST_F(ConfigTest, BadDirFallsBackToDefault) {
  const std::string err = reload_with_env("SSTEST_DIR", "   ");
  EXPECT_EQ(1, count_lines(err)) << err;
  EXPECT_TRUE(has(err, "test_dir:")) << err;
  EXPECT_EQ(Source::kDefault, g_test.source(TId::kDir));
  EXPECT_EQ("/nonexistent/ss-config-test", g_test.get_string(TId::kDir));
}

TEST_F(ConfigTest, ErrnoPreserved) {
  write_file("spin", "nonsense");
  errno = EXDEV;
  {
    StderrCapture cap;
    reload();
    EXPECT_EQ(EXDEV, errno);
    EXPECT_EQ(10, g_test.get_int(TId::kSpin));
    EXPECT_EQ(EXDEV, errno);
  }
}

TEST_F(ConfigTest, InvalidIdsAreHarmless) {
  EXPECT_EQ(0, g_test.get_int(TId::kCount));
  EXPECT_EQ("", g_test.get_string(TId::kCount));
  EXPECT_EQ("", g_test.origin(TId::kCount));
  EXPECT_EQ(Source::kDefault, g_test.source(TId::kCount));
  EXPECT_EQ(0, g_test.env_int(TId::kCount));
  EXPECT_EQ(0, g_test.get_int(-1));
}

TEST_F(ConfigTest, TooManySourcesIsRefused) {
  FakeRules more[kMaxSources];
  for (auto& r : more) ASSERT_EQ(0, g_test.add_source(&r));
  EXPECT_EQ(-ENOSPC, g_test.add_source(&rules_));
  for (auto& r : more) g_test.remove_source(&r);
  EXPECT_EQ(0, g_test.add_source(&rules_));
}

TEST_F(ConfigTest, ConcurrentFirstUse) {
  reload_with_file("depth", "77");
  std::vector<std::thread> threads;
  std::vector<int64_t> got(8);
  for (size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&got, t] {
      int64_t sum = 0;
      for (int i = 0; i < 1000; ++i) sum += g_test.get_int(TId::kDepth);
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
  EXPECT_EQ(Check::kNotNumber, parse_int("12\0"
                                         "3",
                                         4, &v));
}

TEST(ConfigParse, Scaled) {
  int64_t v = 0;
  EXPECT_EQ(Check::kOk, parse_scaled("-2k", 3, Unit::kBytes, &v));
  EXPECT_EQ(-2048, v);
  EXPECT_EQ(Check::kOk, parse_scaled("8g", 2, Unit::kBytes, &v));
  EXPECT_EQ(int64_t{8} << 30, v);
  EXPECT_EQ(Check::kOutOfRange, parse_scaled("9223372036854775807k", 20, Unit::kBytes, &v));
  EXPECT_EQ(Check::kBadUnit, parse_scaled("1kb", 3, Unit::kBytes, &v));
  EXPECT_EQ(Check::kBadUnit, parse_scaled("1s", 2, Unit::kBytes, &v));
  EXPECT_EQ(Check::kNotNumber, parse_scaled("k", 1, Unit::kBytes, &v));
  EXPECT_EQ(Check::kNotNumber, parse_scaled("1k", 2, Unit::kNone, &v));
  EXPECT_EQ(Check::kOk, parse_scaled("1s", 2, Unit::kMs, &v));
  EXPECT_EQ(1000, v);
  EXPECT_EQ(Check::kOk, parse_scaled("1MS", 3, Unit::kUs, &v));
  EXPECT_EQ(1000, v);
  EXPECT_EQ(Check::kNotWhole, parse_scaled("1us", 3, Unit::kMs, &v));
  EXPECT_EQ(Check::kBadUnit, parse_scaled("1h", 2, Unit::kMs, &v));
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
