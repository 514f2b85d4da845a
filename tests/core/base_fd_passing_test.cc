// send_with_fds / recv_with_fds: descriptors round-trip over stream and
// seqpacket socketpairs, arrive close-on-exec, and a message carrying more
// than the receiver takes, or more than the kernel could install, leaves
// no descriptor behind; every test counts /proc/self/fd before and after.
#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/base/fd_passing.h"

namespace ss {
namespace {

int open_fds() {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return -1;
  int n = 0;
  while (readdir(d)) n++;
  closedir(d);
  return n;
}

// A socketpair of `type` and pipes whose write ends travel; the descriptor
// count must be the same at the end as before the pair was made.
class FdPassingTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    before_ = open_fds();
    ASSERT_GT(before_, 0);
    ASSERT_EQ(0, socketpair(AF_UNIX, GetParam() | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv_));
  }
  void TearDown() override {
    for (int fd : owned_) ::close(fd);
    ::close(sv_[0]);
    ::close(sv_[1]);
    EXPECT_EQ(before_, open_fds()) << "descriptors leaked";
  }
  // `n` pipes; their write ends (opened without close-on-exec) in *w.
  void pipes(int n, std::vector<int>* r, std::vector<int>* w) {
    for (int i = 0; i < n; i++) {
      int p[2];
      ASSERT_EQ(0, pipe(p));
      owned_.push_back(p[0]);
      owned_.push_back(p[1]);
      r->push_back(p[0]);
      w->push_back(p[1]);
    }
  }
  ssize_t send(const char* text, const int* fds, int nfds) {
    iovec iov{const_cast<char*>(text), strlen(text)};
    return send_with_fds(sv_[0], &iov, 1, fds, nfds, MSG_DONTWAIT);
  }
  ssize_t recv(std::string* text, int* fds, int max_fds, int* got) {
    char buf[64];
    iovec iov{buf, sizeof buf};
    ssize_t n = recv_with_fds(sv_[1], &iov, 1, fds, max_fds, got, MSG_DONTWAIT);
    if (n > 0) text->assign(buf, static_cast<size_t>(n));
    return n;
  }

  int before_ = 0;
  int sv_[2] = {-1, -1};
  std::vector<int> owned_;
};

// Each count arrives whole, each descriptor close-on-exec (sent without)
// and naming the sender's pipe: bytes written through it come out there.
TEST_P(FdPassingTest, RoundTripNoneOneSeveral) {
  for (int count : {0, 1, 3}) {
    SCOPED_TRACE(count);
    std::vector<int> r, w;
    ASSERT_NO_FATAL_FAILURE(pipes(count, &r, &w));
    ASSERT_EQ(5, send("hello", w.data(), count));
    int got = -1, fds[kMaxPassedFds];
    std::string text;
    ASSERT_EQ(5, recv(&text, fds, kMaxPassedFds, &got));
    EXPECT_EQ("hello", text);
    ASSERT_EQ(count, got);
    for (int i = 0; i < got; i++) {
      EXPECT_EQ(FD_CLOEXEC, fcntl(fds[i], F_GETFD) & FD_CLOEXEC)
          << "received without close-on-exec";
      EXPECT_EQ(0, fcntl(w[i], F_GETFD) & FD_CLOEXEC);  // a flag of ours, not the sender's
      ASSERT_EQ(1, ::write(fds[i], "x", 1));
      char c = 0;
      EXPECT_EQ(1, ::read(r[i], &c, 1));
      ::close(fds[i]);
    }
  }
}

// Up to the limit in one message; past it the sender is refused.
TEST_P(FdPassingTest, SendsAtMostTheLimit) {
  std::vector<int> r, w;
  ASSERT_NO_FATAL_FAILURE(pipes(kMaxPassedFds + 1, &r, &w));
  EXPECT_EQ(-EINVAL, send("x", w.data(), kMaxPassedFds + 1));
  EXPECT_EQ(-EINVAL, send("x", w.data(), -1));
  ASSERT_EQ(1, send("x", w.data(), kMaxPassedFds));
  int got = 0, fds[kMaxPassedFds];
  std::string text;
  ASSERT_EQ(1, recv(&text, fds, kMaxPassedFds, &got));
  ASSERT_EQ(kMaxPassedFds, got);
  for (int i = 0; i < got; i++) ::close(fds[i]);
}

// More than the receiver takes (an odd limit too, whose buffer padding
// would hold one more): none of them stays, the message is refused as the
// peer's fault, and what follows it is received as usual.
TEST_P(FdPassingTest, MoreThanMaxAreClosedAndReported) {
  std::vector<int> r, w;
  ASSERT_NO_FATAL_FAILURE(pipes(3, &r, &w));
  for (int max : {0, 1, 2}) {
    SCOPED_TRACE(max);
    const int during = open_fds();
    ASSERT_EQ(3, send("abc", w.data(), max + 1));
    int got = -1, fds[kMaxPassedFds];
    std::string text;
    EXPECT_EQ(-EPROTO, recv(&text, fds, max, &got));
    EXPECT_EQ(0, got);
    EXPECT_EQ(during, open_fds()) << "a descriptor of the refused message stayed";
  }
  ASSERT_EQ(4, send("next", w.data(), 1));
  int got = -1, fd = -1;
  std::string text;
  ASSERT_EQ(4, recv(&text, &fd, 1, &got));
  EXPECT_EQ("next", text);
  ASSERT_EQ(1, got);
  ::close(fd);
}

// A stream never joins two messages' descriptors in one read: the read
// stops after the first message that carries any.
TEST_P(FdPassingTest, OneMessagesDescriptorsPerRead) {
  std::vector<int> r, w;
  ASSERT_NO_FATAL_FAILURE(pipes(2, &r, &w));
  ASSERT_EQ(2, send("ab", &w[0], 1));
  ASSERT_EQ(2, send("cd", &w[1], 1));
  for (const char* want : {"ab", "cd"}) {
    int got = -1, fds[kMaxPassedFds];
    std::string text;
    ASSERT_EQ(2, recv(&text, fds, kMaxPassedFds, &got));
    EXPECT_EQ(want, text);
    ASSERT_EQ(1, got);
    ::close(fds[0]);
  }
}

// Errors come back as -errno: nothing to read, a peer gone (and no
// SIGPIPE, which would end this test program).
TEST_P(FdPassingTest, ErrorsAreNegativeErrno) {
  int got = -1, fd;
  std::string text;
  EXPECT_EQ(-EAGAIN, recv(&text, &fd, 1, &got));
  EXPECT_EQ(0, got);
  EXPECT_EQ(-EINVAL, recv(&text, &fd, kMaxPassedFds + 1, &got));
  ::close(sv_[1]);
  sv_[1] = ::open("/dev/null", O_RDONLY | O_CLOEXEC);  // TearDown closes it
  EXPECT_EQ(-EPIPE, send("x", nullptr, 0));
}

// The kernel has a slot for the first descriptor only: it truncates, and
// the one installed is closed again, reported as this process being out
// of descriptors (EMFILE), not as the peer's fault.
TEST_P(FdPassingTest, TruncatedForLackOfSlotsClosesEveryOne) {
  std::vector<int> r, w;
  ASSERT_NO_FATAL_FAILURE(pipes(3, &r, &w));
  ASSERT_EQ(3, send("abc", w.data(), 3));
  rlimit old{};
  ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &old));
  rlimit low = old;
  low.rlim_cur = std::min<rlim_t>(old.rlim_cur, 1024);
  ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &low));
  std::vector<int> used;  // every slot below the limit but one
  for (int fd; (fd = fcntl(sv_[0], F_DUPFD_CLOEXEC, 0)) >= 0;) used.push_back(fd);
  const bool filled = !used.empty() && errno == EMFILE;
  if (filled) {
    ::close(used.back());
    used.pop_back();
  }
  int got = -1, fds[kMaxPassedFds];
  std::string text;
  const ssize_t n = filled ? recv(&text, fds, 3, &got) : 0;
  const int slot = fcntl(sv_[0], F_DUPFD_CLOEXEC, 0);  // free again if it was closed
  if (slot >= 0) ::close(slot);
  for (int fd : used) ::close(fd);
  setrlimit(RLIMIT_NOFILE, &old);
  ASSERT_TRUE(filled) << "could not use up the descriptor slots";
  EXPECT_EQ(-EMFILE, n);
  EXPECT_EQ(0, got);
  EXPECT_GE(slot, 0) << "the descriptor the kernel installed was kept";
}

INSTANTIATE_TEST_SUITE_P(Sockets, FdPassingTest, ::testing::Values(SOCK_STREAM, SOCK_SEQPACKET),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return std::string(i.param == SOCK_STREAM ? "Stream" : "Seqpacket");
                         });

}  // namespace
}  // namespace ss
