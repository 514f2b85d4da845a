// The segment-level conformance suite: every script in
// tests/core/tcp_scripts (tcp_script.h says the format) runs as a test of
// its own.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/core/tcp_script.h"

namespace {

namespace fs = std::filesystem;

// make check exports srcdir; by hand, the test runs from the build tree
// or the source tree.
fs::path scripts_dir() {
  std::vector<fs::path> tries;
  if (const char* s = std::getenv("srcdir"))
    tries.push_back(fs::path(s) / "tests/core/tcp_scripts");
  tries.push_back("tests/core/tcp_scripts");
  tries.push_back("../tests/core/tcp_scripts");
  for (const fs::path& p : tries) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) return p;
  }
  return {};
}

std::vector<std::string> script_names() {
  std::vector<std::string> names;
  const fs::path dir = scripts_dir();
  std::error_code ec;
  if (dir.empty()) return {"(no scripts folder)"};
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".tcp") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class TcpScript : public testing::TestWithParam<std::string> {};

TEST_P(TcpScript, Passes) {
  const fs::path dir = scripts_dir();
  ASSERT_FALSE(dir.empty()) << "tests/core/tcp_scripts not found (run from the build tree)";
  std::ifstream in(dir / (GetParam() + ".tcp"));
  ASSERT_TRUE(in) << GetParam();
  std::stringstream text;
  text << in.rdbuf();
  const std::string failed = ss::net::tcp::script::run(text.str());
  EXPECT_EQ(failed, "") << GetParam() << ".tcp";
  // The same with the peer's data over linked frames of 333 bytes.
  const std::string linked = ss::net::tcp::script::run(text.str(), 333);
  EXPECT_EQ(linked, "") << GetParam() << ".tcp, data over linked frames";
}

INSTANTIATE_TEST_SUITE_P(Scripts, TcpScript, testing::ValuesIn(script_names()),
                         [](const testing::TestParamInfo<std::string>& p) {
                           std::string n = p.param;
                           for (char& c : n) {
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n;
                         });

// The runner itself must fail a script that does not hold.
TEST(TcpScriptRunner, FailsWhatDoesNotHold) {
  using ss::net::tcp::script::run;
  EXPECT_NE(run("0 connect\n"), "");                                // the SYN unclaimed
  EXPECT_NE(run("0 connect\n0 > S. 0 ack 1\n"), "");                // wrong flags
  EXPECT_NE(run("0 connect\n0.5 > S 0 <mss 1460>\n"), "");          // wrong time
  EXPECT_NE(run("0 connect\n0 > S 0 <mss 1400>\n"), "");            // wrong option
  EXPECT_NE(run("0 connect\n0 > S 0\n0 state ESTABLISHED\n"), "");  // wrong state
  EXPECT_EQ(run("0 connect\n0 > S 0\n0 state SYN-SENT\n"), "");
}

}  // namespace
