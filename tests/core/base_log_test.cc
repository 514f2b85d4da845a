// The logger: threshold from SLIPSTREAM_LOG_LEVEL, line format, truncation,
// errno preservation.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "core/base/log.h"
#include "tests/common/stderr_capture.h"

namespace ss::log {
namespace {

using sstest::StderrCapture;

std::string prefix(const char* level) {
  return "slipstream[" + std::to_string(getpid()) + "]: " + level + ": ";
}

class LogTest : public ::testing::Test {
 protected:
  void SetUp() override { set_level(nullptr); }
  void TearDown() override { set_level(nullptr); }
  static void set_level(const char* v) {
    if (v)
      setenv("SLIPSTREAM_LOG_LEVEL", v, 1);
    else
      unsetenv("SLIPSTREAM_LOG_LEVEL");
    reload();
  }
};

TEST_F(LogTest, DefaultThresholdIsWarn) {
  EXPECT_TRUE(enabled(Level::kPanic));
  EXPECT_TRUE(enabled(Level::kError));
  EXPECT_TRUE(enabled(Level::kWarn));
  EXPECT_FALSE(enabled(Level::kInfo));
  EXPECT_FALSE(enabled(Level::kFine));
}

TEST_F(LogTest, ThresholdFromEnvNumberOrName) {
  set_level("4");
  EXPECT_TRUE(enabled(Level::kDetails));
  EXPECT_FALSE(enabled(Level::kDebug));
  set_level("debug");
  EXPECT_TRUE(enabled(Level::kDebug));
  EXPECT_FALSE(enabled(Level::kFine));
  set_level("FINE");
  EXPECT_TRUE(enabled(Level::kFine));
  set_level("0");
  EXPECT_TRUE(enabled(Level::kPanic));
  EXPECT_FALSE(enabled(Level::kError));
}

TEST_F(LogTest, BadThresholdMeansDefault) {
  for (const char* bad : {"7", "-1", "verbose", ""}) {
    SCOPED_TRACE(bad);
    set_level(bad);
    EXPECT_TRUE(enabled(Level::kWarn));
    EXPECT_FALSE(enabled(Level::kInfo));
  }
}

TEST_F(LogTest, ThresholdIsCachedUntilReload) {
  EXPECT_FALSE(enabled(Level::kInfo));
  setenv("SLIPSTREAM_LOG_LEVEL", "info", 1);
  EXPECT_FALSE(enabled(Level::kInfo));
  reload();
  EXPECT_TRUE(enabled(Level::kInfo));
}

TEST_F(LogTest, LineFormat) {
  StderrCapture cap;
  SS_WARN("hello %d %s", 42, "there");
  SS_ERROR("bad");
  EXPECT_EQ(prefix("WARN") + "hello 42 there\n" + prefix("ERROR") + "bad\n", cap.text());
}

TEST_F(LogTest, EveryLevelName) {
  set_level("6");
  StderrCapture cap;
  const char* names[] = {"PANIC", "ERROR", "WARN", "INFO", "DETAILS", "DEBUG", "FINE"};
  std::string want;
  for (int i = 0; i <= 6; ++i) {
    write(static_cast<Level>(i), "x");
    want += prefix(names[i]) + "x\n";
  }
  EXPECT_EQ(want, cap.text());
}

TEST_F(LogTest, BelowThresholdPrintsNothing) {
  StderrCapture cap;
  SS_INFO("quiet");
  SS_DEBUG("quiet");
  write(Level::kInfo, "direct calls filter too");
  EXPECT_EQ("", cap.text());
}

TEST_F(LogTest, ArgumentsOfFilteredMessagesAreNotEvaluated) {
  int calls = 0;
  auto count = [&calls] { return ++calls; };
  SS_DEBUG("%d", count());
  EXPECT_EQ(0, calls);
}

TEST_F(LogTest, TrailingNewlineIsNotDoubled) {
  StderrCapture cap;
  SS_WARN("one\n");
  EXPECT_EQ(prefix("WARN") + "one\n", cap.text());
}

TEST_F(LogTest, LongMessageIsCutToOneLine) {
  const std::string big(10000, 'z');
  StderrCapture cap;
  SS_WARN("%s", big.c_str());
  const std::string out = cap.text();
  EXPECT_EQ(0u, out.find(prefix("WARN")));
  EXPECT_LT(out.size(), 4096u);
  EXPECT_GT(out.size(), 1000u);
  ASSERT_FALSE(out.empty());
  EXPECT_EQ('\n', out.back());
  EXPECT_EQ(out.size() - 1, out.find('\n'));
}

TEST_F(LogTest, ErrnoPreserved) {
  StderrCapture cap;
  errno = EAGAIN;
  SS_WARN("keeps errno");
  EXPECT_EQ(EAGAIN, errno);
  errno = ECONNRESET;
  SS_DEBUG("filtered");
  EXPECT_EQ(ECONNRESET, errno);
  errno = ENOSPC;
  reload();
  EXPECT_EQ(ENOSPC, errno);
}

TEST_F(LogTest, ErrnoPreservedWhenTheWriteFails) {
  fflush(stderr);
  const int saved = dup(STDERR_FILENO);
  ASSERT_GE(saved, 0);
  close(STDERR_FILENO);  // write() now fails with EBADF
  errno = ETIMEDOUT;
  SS_ERROR("into the void");
  const int after = errno;
  dup2(saved, STDERR_FILENO);
  close(saved);
  EXPECT_EQ(ETIMEDOUT, after);
}

TEST_F(LogTest, PercentMSeesTheCallersErrno) {
  StderrCapture cap;
  errno = ENOENT;
  SS_WARN("open: %m");
  EXPECT_EQ(prefix("WARN") + "open: " + strerror(ENOENT) + "\n", cap.text());
}

// fd 2 a connection (an inetd-style program): a line there would land
// in the peer's stream, so none is written.
TEST_F(LogTest, NothingWrittenWhenStderrIsASocket) {
  fflush(stderr);
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  const int saved = dup(STDERR_FILENO);
  ASSERT_GE(saved, 0);
  ASSERT_EQ(dup2(sv[0], STDERR_FILENO), STDERR_FILENO);
  SS_WARN("must not reach the peer");
  SS_ERROR("nor this");
  dup2(saved, STDERR_FILENO);
  close(saved);
  close(sv[0]);  // the peer now sees EOF after whatever was written
  char b[64];
  EXPECT_EQ(read(sv[1], b, sizeof b), 0);
  close(sv[1]);
}

}  // namespace
}  // namespace ss::log
