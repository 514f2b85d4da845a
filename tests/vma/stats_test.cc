// vma_stats: what the publisher writes, read back through the reader's
// own parsing; the file's mode and lifetime; files the reader must refuse.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "libvmacompat/stats_format.h"
#include "libvmacompat/stats_proc.h"
#include "libvmacompat/stats_process.h"
#include "libvmacompat/stats_publisher.h"
#include "libvmacompat/stats_reader.h"

namespace ss::vma::stats {
namespace {

class StatsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ss-vmastat.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (const StatsFile& f : list_stats_files(dir_)) unlink(f.path.c_str());
    unlink((dir_ + "/copy").c_str());
    rmdir(dir_.c_str());
  }
  std::vector<char> bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  // Writes `b` to a file of its own and reads it back with the reader.
  bool read_bytes(const std::vector<char>& b, Snapshot* s, std::string* error) {
    const std::string path = dir_ + "/copy";
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(b.data(), static_cast<std::streamsize>(b.size()));
    return read_stats_file(path, s, error);
  }
  std::string dir_;
};

sockaddr_in v4(const char* ip, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

TEST_F(StatsTest, CountersPublishedAreReadBack) {
  auto pub = Publisher::create(dir_, 4);
  ASSERT_TRUE(pub) << strerror(errno);
  EXPECT_EQ(pub->path(), dir_ + "/vmastat." + std::to_string(getpid()));
  SocketStats s = pub->open_socket(17, SOCK_DGRAM, true);
  ASSERT_TRUE(s);
  const sockaddr_in bound = v4("10.1.2.3", 4567);
  s.set_bound(reinterpret_cast<const sockaddr*>(&bound), sizeof bound);
  for (int i = 0; i < 100; ++i) s.add(kRxPackets);
  s.add(kRxBytes, 6400);
  s.add(kTxEagain, 3);
  s.raise(kRxReadyPktMax, 9);
  s.raise(kRxReadyPktMax, 4);
  GroupStats ring = pub->open_group(kRing, 2, "veth0");
  ring.add(kRingXdpRedirected, 55);

  Snapshot snap;
  std::string error;
  ASSERT_TRUE(read_stats_file(pub->path(), &snap, &error)) << error;
  EXPECT_EQ(snap.pid, getpid());
  EXPECT_FALSE(is_stale(snap));
  EXPECT_EQ(snap.fd_blocks, 4u);
  EXPECT_EQ(snap.garbled, 0u);
  ASSERT_EQ(snap.sockets.size(), 1u);
  const SocketBlock& b = snap.sockets[0].block;
  EXPECT_EQ(b.fd, 17);
  EXPECT_EQ(b.socket_type, SOCK_DGRAM);
  EXPECT_EQ(b.family, AF_INET);
  EXPECT_TRUE(b.offloaded);
  EXPECT_EQ(b.bound_port, htons(4567));
  EXPECT_EQ(memcmp(b.bound_addr, &bound.sin_addr, 4), 0);
  EXPECT_EQ(b.c[kRxPackets], 100u);
  EXPECT_EQ(b.c[kRxBytes], 6400u);
  EXPECT_EQ(b.c[kTxEagain], 3u);
  EXPECT_EQ(b.c[kRxReadyPktMax], 9u);
  ASSERT_EQ(snap.groups.size(), 1u);
  EXPECT_EQ(snap.groups[0].block.kind, kRing);
  EXPECT_EQ(snap.groups[0].block.id, 2);
  EXPECT_EQ(snap.groups[0].block.c[kRingXdpRedirected], 55u);

  // The views print those figures.
  char* text = nullptr;
  size_t len = 0;
  FILE* out = open_memstream(&text, &len);
  print_view(out, snap, ViewOptions{3, {}});
  fclose(out);
  const std::string full(text, len);
  free(text);
  EXPECT_NE(full.find("Fd=[17]"), std::string::npos) << full;
  EXPECT_NE(full.find("Local Address   = [10.1.2.3:4567]"), std::string::npos) << full;
  EXPECT_NE(full.find("Rx Offload: 6 KB / 100 / 0 / 0"), std::string::npos) << full;
  EXPECT_NE(full.find("XDP: 55 / 0"), std::string::npos) << full;
}

TEST_F(StatsTest, ClosedBlocksVanishAndAreReused) {
  auto pub = Publisher::create(dir_, 2);
  ASSERT_TRUE(pub);
  SocketStats a = pub->open_socket(3, SOCK_DGRAM, true);
  SocketStats b = pub->open_socket(4, SOCK_DGRAM, true);
  EXPECT_TRUE(a && b);
  EXPECT_FALSE(pub->open_socket(5, SOCK_DGRAM, true)) << "only two blocks";
  a.add(kRxPackets, 10);
  pub->close_socket(a);
  EXPECT_FALSE(a);
  SocketStats c = pub->open_socket(6, SOCK_STREAM, false);
  ASSERT_TRUE(c);
  Snapshot snap;
  std::string error;
  ASSERT_TRUE(read_stats_file(pub->path(), &snap, &error)) << error;
  ASSERT_EQ(snap.sockets.size(), 2u);
  EXPECT_EQ(snap.sockets[0].block.fd, 6);
  EXPECT_EQ(snap.sockets[0].block.c[kRxPackets], 0u) << "a reused block starts from zero";
  EXPECT_EQ(snap.sockets[1].block.fd, 4);
}

TEST_F(StatsTest, FileIsMode0600WhateverTheUmask) {
  const mode_t old = umask(0);
  auto pub = Publisher::create(dir_, 1);
  umask(old);
  ASSERT_TRUE(pub);
  struct stat st;
  ASSERT_EQ(stat(pub->path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST_F(StatsTest, PrivateWhenTheDirectoryIsEmpty) {
  auto pub = Publisher::create("", 3);
  ASSERT_TRUE(pub);
  EXPECT_EQ(pub->path(), "");
  SocketStats s = pub->open_socket(1, SOCK_DGRAM, true);
  ASSERT_TRUE(s);
  s.add(kRxPackets);
  EXPECT_TRUE(list_stats_files(dir_).empty());
}

TEST_F(StatsTest, RemovedWhenDestroyed) {
  auto pub = Publisher::create(dir_, 1);
  ASSERT_TRUE(pub);
  const std::string path = pub->path();
  EXPECT_EQ(access(path.c_str(), F_OK), 0);
  pub.reset();
  EXPECT_NE(access(path.c_str(), F_OK), 0);
}

// A child's publisher lives in a static, as the face's does: exit()
// removes its file; a child killed keeps its file, which the reader then
// calls stale.
TEST_F(StatsTest, RemovedAtExitAndStaleAfterAKill) {
  for (const bool kill_it : {false, true}) {
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      static std::unique_ptr<Publisher> pub = Publisher::create(dir_, 1);
      char c = pub ? 'y' : 'n';
      if (write(ready[1], &c, 1) != 1) _exit(3);
      if (kill_it) pause();
      exit(0);
    }
    close(ready[1]);
    char c = 0;
    ASSERT_EQ(read(ready[0], &c, 1), 1);
    close(ready[0]);
    ASSERT_EQ(c, 'y');
    const std::string path = dir_ + "/vmastat." + std::to_string(pid);
    Snapshot snap;
    std::string error;
    if (kill_it) {
      ASSERT_TRUE(read_stats_file(path, &snap, &error)) << error;
      EXPECT_FALSE(is_stale(snap));
      kill(pid, SIGKILL);
    }
    int status;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    if (!kill_it) {
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      EXPECT_NE(access(path.c_str(), F_OK), 0) << "removed at exit";
    } else {
      ASSERT_TRUE(read_stats_file(path, &snap, &error)) << error;
      EXPECT_TRUE(is_stale(snap)) << "a dead pid's file is not a live one";
      unlink(path.c_str());
    }
  }
}

// The face's publisher: its file goes at exit, yet a handle used by an
// atexit handler that runs later still writes into valid memory.
SocketStats g_late;
void late_close() {
  g_late.add(kRxPackets);
  if (Publisher* p = process_stats()) p->close_socket(g_late);
}

int child_status(const std::function<int()>& child) {
  const pid_t pid = fork();
  if (pid == 0) exit(child());
  int status = -1;
  waitpid(pid, &status, 0);
  return status;
}

TEST_F(StatsTest, ProcessStatsRemovedAtExitHandlesStayValid) {
  const std::string dir = dir_;
  const int status = child_status([&] {
    atexit(late_close);  // registered first: runs after the publisher's handler
    Publisher* p = start_process_stats(dir, 2);
    if (!p || p != start_process_stats("elsewhere", 9) || p->path().empty()) return 3;
    g_late = p->open_socket(4, SOCK_DGRAM, true);
    return g_late ? 0 : 4;
  });
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_TRUE(list_stats_files(dir_).empty()) << "removed at exit";
}

TEST_F(StatsTest, ProcessStatsFallsBackToPrivateMemory) {
  const int status = child_status([] {
    Publisher* p = start_process_stats("/nonexistent/ss-vmastat", 2);
    return p && p->path().empty() && p->open_socket(1, SOCK_DGRAM, true) ? 0 : 3;
  });
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST_F(StatsTest, ReusedPidIsStale) {
  auto pub = Publisher::create(dir_, 1);
  ASSERT_TRUE(pub);
  Snapshot snap;
  std::string error;
  ASSERT_TRUE(read_stats_file(pub->path(), &snap, &error)) << error;
  snap.start_ticks += 1;  // the same pid, started at another time
  EXPECT_EQ(liveness(snap.pid, snap.start_ticks), Liveness::kReused);
  EXPECT_TRUE(is_stale(snap));
}

TEST_F(StatsTest, ForkedChildLeavesItsParentsFileAlone) {
  auto pub = Publisher::create(dir_, 1);
  ASSERT_TRUE(pub);
  SocketStats s = pub->open_socket(5, SOCK_DGRAM, true);
  s.add(kRxPackets, 1);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    pub->detach_after_fork();
    s.add(kRxPackets, 1000);
    pub.reset();  // must not remove the parent's file
    _exit(0);
  }
  int status;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  Snapshot snap;
  std::string error;
  ASSERT_TRUE(read_stats_file(pub->path(), &snap, &error)) << error;
  ASSERT_EQ(snap.sockets.size(), 1u);
  EXPECT_EQ(snap.sockets[0].block.c[kRxPackets], 1u);
}

TEST_F(StatsTest, TruncatedFilesAreRefused) {
  auto pub = Publisher::create(dir_, 3);
  ASSERT_TRUE(pub);
  const std::vector<char> good = bytes(pub->path());
  ASSERT_EQ(good.size(), file_size_for(3));
  for (size_t len :
       {size_t{0}, size_t{7}, size_t{11}, sizeof(Header) - 1, sizeof(Header), good.size() - 1}) {
    Snapshot snap;
    std::string error;
    EXPECT_FALSE(
        read_bytes({good.begin(), good.begin() + static_cast<ptrdiff_t>(len)}, &snap, &error))
        << len;
    EXPECT_NE(error.find("truncated"), std::string::npos) << len << ": " << error;
  }
}

TEST_F(StatsTest, GarbledHeadersAreRefused) {
  auto pub = Publisher::create(dir_, 3);
  ASSERT_TRUE(pub);
  const std::vector<char> good = bytes(pub->path());
  struct Case {
    size_t offset;
    uint64_t value;
    size_t width;
    const char* error;
  };
  const Case cases[] = {
      {offsetof(Header, magic), 0x4c4c4548, 4, "bad magic"},
      {offsetof(Header, version), 99, 4, "layout version 99"},
      {offsetof(Header, block_size), 8, 4, "block size"},
      {offsetof(Header, fd_blocks), 5000, 4, "fd count 5000 above the maximum"},
      {offsetof(Header, fd_blocks), 1000, 4, "disagrees with 1000 fd blocks"},
      {offsetof(Header, protocol), 0x78, 1, "protocol 'xlipstream"},
      {offsetof(Header, state), 0, 4, "not published"},
  };
  for (const Case& c : cases) {
    std::vector<char> bad = good;
    memcpy(bad.data() + c.offset, &c.value, c.width);
    Snapshot snap;
    std::string error;
    EXPECT_FALSE(read_bytes(bad, &snap, &error)) << c.error;
    EXPECT_NE(error.find(c.error), std::string::npos) << error;
  }
  // More fd blocks than the file holds, the size field agreeing: cut short.
  std::vector<char> bad = good;
  const uint32_t n = 1000;
  const uint64_t size = file_size_for(n);
  memcpy(bad.data() + offsetof(Header, fd_blocks), &n, sizeof n);
  memcpy(bad.data() + offsetof(Header, file_size), &size, sizeof size);
  Snapshot snap;
  std::string error;
  EXPECT_FALSE(read_bytes(bad, &snap, &error));
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;
}

TEST_F(StatsTest, GarbledBlocksAreSkipped) {
  auto pub = Publisher::create(dir_, 3);
  ASSERT_TRUE(pub);
  pub->open_socket(1, SOCK_DGRAM, true);
  pub->open_socket(2, SOCK_DGRAM, true);
  std::vector<char> bad = bytes(pub->path());
  const uint32_t junk = 0xdeadbeef;
  memcpy(bad.data() + sizeof(Header) + offsetof(SocketBlock, state), &junk, sizeof junk);
  memcpy(bad.data() + offsetof(Header, rings) + offsetof(GroupBlock, state), &junk, sizeof junk);
  Snapshot snap;
  std::string error;
  ASSERT_TRUE(read_bytes(bad, &snap, &error)) << error;
  ASSERT_EQ(snap.sockets.size(), 1u);
  EXPECT_EQ(snap.sockets[0].block.fd, 2);
  EXPECT_EQ(snap.garbled, 2u);
}

// A block caught mid-rewrite (odd sequence) or rewritten between the two
// reads (sequence or identity changed) is left out.
TEST_F(StatsTest, BlocksTheTwoCopiesDisagreeOnAreLeftOut) {
  auto pub = Publisher::create(dir_, 3);
  ASSERT_TRUE(pub);
  for (int fd : {1, 2, 3}) pub->open_socket(fd, SOCK_DGRAM, true);
  const std::vector<char> good = bytes(pub->path());
  Snapshot first, second;
  std::string error;
  ASSERT_TRUE(parse(good.data(), good.size(), &first, &error)) << error;
  ASSERT_TRUE(parse(good.data(), good.size(), &second, &error)) << error;
  first.sockets[0].block.seq += 1;            // odd in the first copy
  second.sockets[1].block.seq += 2;           // rewritten in between
  second.sockets[2].block.c[kRxPackets] = 9;  // counters move freely
  settle(first, &second);
  ASSERT_EQ(second.sockets.size(), 1u);
  EXPECT_EQ(second.sockets[0].block.fd, 3);
  EXPECT_EQ(second.sockets[0].block.c[kRxPackets], 9u);
}

TEST_F(StatsTest, PerSecondRatesOverTheInterval) {
  auto pub = Publisher::create(dir_, 3);
  ASSERT_TRUE(pub);
  SocketStats kept = pub->open_socket(3, SOCK_DGRAM, true);
  SocketStats reopened = pub->open_socket(4, SOCK_DGRAM, true);
  kept.add(kRxPackets, 100);
  kept.raise(kRxReadyPktMax, 50);
  kept.set(kRxReadyByteLimit, 65536);
  Snapshot before, now;
  std::string error;
  ASSERT_TRUE(read_stats_file(pub->path(), &before, &error)) << error;
  kept.add(kRxPackets, 400);
  kept.add(kTxBytes, 2000);
  pub->close_socket(reopened);
  reopened = pub->open_socket(4, SOCK_DGRAM, true);
  ASSERT_TRUE(read_stats_file(pub->path(), &now, &error)) << error;
  const Snapshot rates = per_second(before, now, 2.0);
  ASSERT_EQ(rates.sockets.size(), 1u) << "a block reopened since is left out";
  const uint64_t* c = rates.sockets[0].block.c;
  EXPECT_EQ(c[kRxPackets], 200u);
  EXPECT_EQ(c[kTxBytes], 1000u);
  EXPECT_EQ(c[kRxReadyPktMax], 50u) << "maxima as they are";
  EXPECT_EQ(c[kRxReadyByteLimit], 65536u) << "gauges as they are";
}

// A TCP connection of ours: its state, RTT, windows and loss recovery
// under the counters libvma shows (vma_stats -v 3, dump_fd_stats).
TEST(StatsFormat, TcpConnectionLines) {
  SocketBlock b{};
  b.fd = 7;
  b.socket_type = SOCK_STREAM;
  b.offloaded = 1;
  b.c[kTxPackets] = 10;
  b.c[kTxRetransmits] = 4;
  b.c[kTcpRtoExpiries] = 1;
  b.c[kTcpSackRecoveries] = 2;
  b.c[kTcpOutOfOrder] = 5;
  b.c[kTcpState] = TCP_CLOSE_WAIT;
  b.c[kTcpSrttUs] = 45;
  b.c[kTcpRttVarUs] = 12;
  b.c[kTcpRtoUs] = 200000;
  b.c[kTcpCwnd] = 10;
  b.c[kTcpSndWnd] = 65535;
  b.c[kTcpRcvWnd] = 131072;
  char* text = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&text, &size);
  ASSERT_NE(f, nullptr);
  print_socket_full(f, b);
  fclose(f);
  const std::string out(text, size);
  free(text);
  for (const char* want :
       {"TCP state: CLOSE_WAIT\n", "TCP rtt: 45 / 12 / 200000 [usec srtt/rttvar/rto]\n",
        "TCP window: 10 / 65535 / 131072 [cwnd segments/send bytes/receive bytes]\n",
        "TCP loss: 4 / 1 / 2 / 0 [retransmits/RTO expiries/SACK recoveries/dup-ACK recoveries]\n",
        "TCP out of order: 5, zero window probes: 0\n"})
    EXPECT_NE(out.find(want), std::string::npos) << want << " in:\n" << out;
  b.c[kTcpState] = 0;  // a UDP socket's block, or none published: no TCP lines
  f = open_memstream(&text, &size);
  ASSERT_NE(f, nullptr);
  print_socket_full(f, b);
  fclose(f);
  EXPECT_EQ(std::string(text, size).find("TCP "), std::string::npos);
  free(text);
}

TEST(StatsFormat, FdLists) {
  std::vector<std::pair<int, int>> r;
  ASSERT_TRUE(parse_fd_list("3,5-9", &r));
  EXPECT_EQ(r, (std::vector<std::pair<int, int>>{{3, 3}, {5, 9}}));
  for (const char* bad : {"", "a", "3,", "9-5", "-1", "1-", "1,,2", "99999999999"})
    EXPECT_FALSE(parse_fd_list(bad, &r)) << bad;
}

}  // namespace
}  // namespace ss::vma::stats
