// splice(2) between a pipe and a connection, as Linux's kernel TCP gives
// it: bytes intact both ways, EOF, SPLICE_F_NONBLOCK, and the errors for
// two sockets or an offset. Part of the differential suite: plain and
// preloaded runs must both pass.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "tests/preload/pair.h"

namespace {

std::vector<char> pattern(size_t n, int seed) {
  std::vector<char> v(n);
  for (size_t i = 0; i < n; i++) v[i] = static_cast<char>(i * 13 + seed);
  return v;
}

TEST(DifferentialSplice, PipeToConnectionAndBack) {
  differential::Pair p;
  differential::connect_pair(&p);
  int in[2], out[2];
  ASSERT_EQ(pipe(in), 0);
  ASSERT_EQ(pipe(out), 0);
  const std::vector<char> sent = pattern(300 * 1000, 5);
  std::thread feeder([&] {  // pipe in[1] -> splice -> connection c
    size_t off = 0;
    while (off < sent.size()) {
      ssize_t w = write(in[1], sent.data() + off, std::min<size_t>(7000, sent.size() - off));
      if (w <= 0) break;
      off += static_cast<size_t>(w);
    }
    close(in[1]);
  });
  std::thread to_conn([&] {
    for (;;) {
      ssize_t n = splice(in[0], nullptr, p.c, nullptr, 1 << 20, 0);
      if (n <= 0) {
        EXPECT_EQ(n, 0) << "pipe to connection: " << strerror(errno);
        break;
      }
    }
    shutdown(p.c, SHUT_WR);
  });
  std::thread to_pipe([&] {  // connection s -> splice -> pipe out[1]
    for (;;) {
      ssize_t n = splice(p.s, nullptr, out[1], nullptr, 1 << 20, 0);
      if (n <= 0) {
        EXPECT_EQ(n, 0) << "connection to pipe: " << strerror(errno);
        break;
      }
    }
    close(out[1]);
  });
  std::vector<char> got;
  char buf[4096];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) got.insert(got.end(), buf, buf + n);
  feeder.join();
  to_conn.join();
  to_pipe.join();
  EXPECT_EQ(got.size(), sent.size());
  EXPECT_TRUE(got == sent) << "bytes changed on the way";
  close(in[0]);
  close(out[0]);
}

TEST(DifferentialSplice, NonblockingAndErrors) {
  differential::Pair p;
  differential::connect_pair(&p);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  EXPECT_EQ(splice(fds[0], nullptr, p.c, nullptr, 100, SPLICE_F_NONBLOCK), -1);
  EXPECT_EQ(errno, EAGAIN) << "an empty pipe";
  ASSERT_EQ(fcntl(p.s, F_SETFL, O_NONBLOCK), 0);
  EXPECT_EQ(splice(p.s, nullptr, fds[1], nullptr, 100, 0), -1);
  EXPECT_EQ(errno, EAGAIN) << "nothing to read on a non-blocking connection";
  EXPECT_EQ(splice(p.c, nullptr, p.s, nullptr, 100, 0), -1);
  EXPECT_EQ(errno, EINVAL) << "two sockets";
  loff_t off = 0;
  EXPECT_EQ(splice(p.s, nullptr, fds[1], &off, 100, 0), -1);
  EXPECT_EQ(errno, ESPIPE) << "an offset on the pipe";
  EXPECT_EQ(splice(p.s, &off, fds[1], nullptr, 100, 0), -1);
  EXPECT_EQ(errno, EINVAL) << "an offset on the socket";
  ASSERT_EQ(write(fds[1], "abc", 3), 3);
  EXPECT_EQ(splice(fds[0], nullptr, p.c, nullptr, 100, 0), 3);
  char b[4];
  ASSERT_EQ(fcntl(p.s, F_SETFL, 0), 0);
  EXPECT_EQ(differential::read_full(p.s, b, 3), 3);
  EXPECT_EQ(memcmp(b, "abc", 3), 0);
  close(fds[0]);
  close(fds[1]);
}

}  // namespace
