// Hostile peers on the shm provider: a client that connects through the
// library, then writes its own entries into the server's completion ring
// (which it maps, as every shm sender does), or control frames of its own
// onto the connection's stream (memfds short or unsealed, a second ring,
// more descriptors than any frame carries, descriptors on frames that take
// none). The server must fail that
// connection (ECONNRESET, never a byte that was not sent), never crash or
// read outside its buffers (the suite also runs under ASan), and go on
// serving others.
//
// The hostile client is this binary re-executed (RS_CONFORMANCE_CHILD=
// shm_ring_hostile); it finds the server's ring among the "slipstream-ring"
// memfds mapped in its process as the one holding its own 5-byte "hello".
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/base/fd_passing.h"
#include "core/prov/shm/ring.h"
#include "core/prov/shm/rendezvous.h"
#include "core/prov/shm/shm_endpoint.h"
#include "core/prov/util/frame.h"
#include "librsocket/wire.h"
#include "tests/common/stderr_capture.h"
#include "tests/librsocket/conformance.h"

namespace rsconf {
namespace {

using ss::prov::shm::RingControl;
using ss::prov::shm::RingEntry;
using ss::rs::make_imm;

// ---------------------------------------------------------------------------
// The hostile child

struct PeerRing {
  RingControl* ctl = nullptr;
  uint32_t entries = 0;
  uint64_t head = 0;        // the first position we have not published
  uint32_t stream_seq = 0;  // what our library's hello entry carried
};

// The ring's size from its mapping (page-rounded): the largest power of two
// that fits, as the owner sized it.
uint32_t entries_in(size_t map_len) {
  uint32_t n = 64;
  while (ss::prov::shm::ring_bytes(n * 2) <= map_len) n *= 2;
  return n;
}

bool find_peer_ring(PeerRing* out) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  int found = 0;
  while (std::getline(maps, line)) {
    if (line.find("slipstream-ring") == std::string::npos) continue;
    unsigned long lo = 0, hi = 0;
    if (sscanf(line.c_str(), "%lx-%lx", &lo, &hi) != 2) continue;
    auto* ctl = reinterpret_cast<RingControl*>(lo);
    const uint32_t n = entries_in(hi - lo);
    // Walk the published entries from the start (few were published).
    uint64_t pos = 0;
    bool has_hello = false;
    uint32_t seq_of_hello = 0;
    while (pos < n && ctl->entries[pos].seq.load(std::memory_order_acquire) == pos + 1) {
      const RingEntry& e = ctl->entries[pos];
      if (e.imm == make_imm(ss::rs::kOpData, 5) && e.len == 5) {
        has_hello = true;
        seq_of_hello = e.stream_seq;
      }
      pos++;
    }
    if (!has_hello) continue;
    *out = {ctl, n, pos, seq_of_hello};
    found++;
  }
  return found == 1;
}

void publish(const PeerRing& r, uint64_t pos, uint32_t imm, uint32_t len, uint32_t stream_seq) {
  RingEntry& e = r.ctl->entries[pos & (r.entries - 1)];
  e.imm = imm;
  e.len = len;
  e.stream_seq = stream_seq;
  e.seq.store(static_cast<uint32_t>(pos + 1), std::memory_order_release);
}

// The connection's unix stream (our library's handshake socket): the one
// connected to a slipstream shm rendezvous.
int find_stream_fd() {
  for (int fd = 0; fd < 1024; fd++) {
    sockaddr_un peer{};
    socklen_t len = sizeof peer;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) < 0) continue;
    if (peer.sun_family != AF_UNIX || len <= offsetof(sockaddr_un, sun_path) + 1) continue;
    if (strncmp(peer.sun_path + 1, "slipstream/shm/", 15) == 0) return fd;
  }
  return -1;
}

// One control frame on the stream, with `nfds` descriptors attached.
void send_ctrl(int stream, uint8_t type, const void* payload, uint32_t len, const int* fds,
               int nfds) {
  std::vector<uint8_t> frame(ss::prov::util::kFrameHeaderSize + len);
  ss::prov::util::encode_frame({ss::prov::util::FrameType::kCtrl, type, len, 0, 0, 0},
                               frame.data());
  if (len) memcpy(frame.data() + ss::prov::util::kFrameHeaderSize, payload, len);
  iovec iov{frame.data(), frame.size()};
  if (ss::send_with_fds(stream, &iov, 1, fds, nfds, 0) != static_cast<ssize_t>(frame.size()))
    child_fail("sendmsg");
}

// A memfd of `size` bytes, sealed against shrinking when `sealed`.
int make_memfd(size_t size, bool sealed) {
  int fd = memfd_create("hostile", MFD_CLOEXEC | (sealed ? MFD_ALLOW_SEALING : 0));
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) < 0) child_fail("memfd");
  if (sealed && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) < 0) child_fail("F_ADD_SEALS");
  return fd;
}

// A region announcement: base, length, offset into the memfd, key.
void announce_region(int stream, uint64_t len, int fd) {
  uint8_t p[ss::prov::shm::kCtrlRegionPayload] = {};
  const uint64_t base = 0x100000000ull, offset = 0;
  const uint32_t rkey = 0x4242;
  memcpy(p, &base, 8);
  memcpy(p + 8, &len, 8);
  memcpy(p + 16, &offset, 8);
  memcpy(p + 24, &rkey, 4);
  send_ctrl(stream, ss::prov::shm::kCtrlRegion, p, sizeof p, &fd, fd >= 0 ? 1 : 0);
}

bool is_stream_case(const std::string& c_case) {
  return c_case.rfind("region_", 0) == 0 || c_case == "ring_twice" || c_case == "fd_flood" ||
         c_case == "fds_hoarded";
}

// Cases on the stream: control frames the server must refuse.
void stream_case(const std::string& c_case) {
  using namespace ss::prov::shm;
  int stream = find_stream_fd();
  if (stream < 0) child_fail("finding the connection's stream");
  if (c_case == "region_unsealed") {
    announce_region(stream, 1 << 16, make_memfd(1 << 16, false));
  } else if (c_case == "region_short") {
    announce_region(stream, 1 << 20, make_memfd(4096, true));
  } else if (c_case == "region_no_fd") {
    announce_region(stream, 1 << 16, -1);
  } else if (c_case == "ring_twice") {
    uint32_t entries = 64;
    int fd = make_memfd(ring_bytes(entries), true);
    send_ctrl(stream, kCtrlRing, &entries, sizeof entries, &fd, 1);
  } else if (c_case == "fds_hoarded") {
    // Valid name frames (they take no descriptor), each carrying four.
    sockaddr_in in{};
    in.sin_family = AF_INET;
    uint8_t names[2 + 2 * sizeof in];
    names[0] = sizeof in;
    memcpy(names + 1, &in, sizeof in);
    names[1 + sizeof in] = sizeof in;
    memcpy(names + 2 + sizeof in, &in, sizeof in);
    for (int i = 0; i < 20; i++) {
      int fds[4];
      for (int& fd : fds) fd = make_memfd(4096, true);
      send_ctrl(stream, kCtrlAddr, names, sizeof names, fds, 4);
      for (int fd : fds) close(fd);
    }
  } else if (c_case == "fd_flood") {
    int fds[16];
    for (int& fd : fds) fd = make_memfd(4096, true);
    send_ctrl(stream, kCtrlWake, nullptr, 0, fds, 16);
  } else {
    errno = EINVAL;
    child_fail("unknown case");
  }
}

void run_hostile_child() {
  const char* port = getenv("RS_CONFORMANCE_PORT");
  const char* what = getenv("RS_CONFORMANCE_CASE");
  if (!port || !what) child_fail("environment");
  select_provider("shm");
  Addr a = loopback(AF_INET, static_cast<uint16_t>(atoi(port)));
  int c = rsocket(AF_INET, SOCK_STREAM, 0);
  if (c < 0) child_fail("rsocket");
  if (rconnect(c, a.sa(), a.len) < 0) child_fail("rconnect");
  if (rsend(c, "hello", 5, 0) != 5) child_fail("rsend");
  int rcvbuf = 0;
  socklen_t optlen = sizeof rcvbuf;
  // The server runs with the same defaults: its published half is ours.
  if (rgetsockopt(c, SOL_SOCKET, SO_RCVBUF, &rcvbuf, &optlen) < 0) child_fail("SO_RCVBUF");
  const uint32_t half = static_cast<uint32_t>(rcvbuf) / 2;
  const std::string c_case = what;
  PeerRing r;
  errno = 0;
  if (!find_peer_ring(&r)) child_fail("finding the server's ring");
  if (is_stream_case(c_case)) {
    // Only once the server took the hello: frames it cannot parse end the
    // stream, and a message behind them would be dropped with it.
    if (write(kChildNotifyFd, "R", 1) != 1) _exit(3);
    for (int i = 0; i < 20000 && r.ctl->tail.load(std::memory_order_acquire) < r.head; i++)
      usleep(1000);
    stream_case(c_case);
    for (;;) pause();
  }
  const uint32_t seq = r.stream_seq;
  if (c_case == "oversize") {
    publish(r, r.head, make_imm(ss::rs::kOpData, 1u << 28), 1u << 28, seq);
  } else if (c_case == "len_mismatch") {
    publish(r, r.head, make_imm(ss::rs::kOpData, 64), 32, seq);
  } else if (c_case == "reserved_op") {
    publish(r, r.head, make_imm(ss::rs::kOpRsvd, 0), 0, seq);
  } else if (c_case == "crosses_half") {
    // After the 5-byte hello, a message that would run past the half.
    publish(r, r.head, make_imm(ss::rs::kOpData, half - 2), half - 2, seq);
  } else if (c_case == "flood") {
    // One-byte messages far beyond the receive credits (as many as the ring holds).
    for (uint64_t i = 0; i < r.entries - r.head; i++)
      publish(r, r.head + i, make_imm(ss::rs::kOpData, 1), 1, seq);
  } else if (c_case == "ring_hoard") {
    // Credits for 65535 messages, and we never take one from our ring.
    publish(r, r.head, make_imm(ss::rs::kOpSgl, 0xFFFF), 0, seq);
  } else if (c_case == "stream_ahead") {
    // An entry that claims stream frames which never come, then we leave.
    publish(r, r.head, make_imm(ss::rs::kOpData, 5), 5, seq + 1000);
    if (write(kChildNotifyFd, "R", 1) != 1) _exit(3);
    _exit(0);
  } else {
    errno = EINVAL;
    child_fail("unknown case");
  }
  if (write(kChildNotifyFd, "R", 1) != 1) _exit(3);
  for (;;) pause();  // alive: the server's verdict must not come from our exit
}

[[noreturn]] void run_listener_as_nobody();  // below, with its test

struct ChildMode {
  ChildMode() {
    const char* mode = getenv("RS_CONFORMANCE_CHILD");
    if (mode && strcmp(mode, "shm_ring_hostile") == 0) run_hostile_child();
    if (mode && strcmp(mode, "shm_listen_as_nobody") == 0) run_listener_as_nobody();
  }
} g_child_mode;

// ---------------------------------------------------------------------------
// The server

class ShmHostileBase : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    ASSERT_TRUE(probe("shm", AF_INET, &why));
    if (!why.empty()) GTEST_SKIP() << why;
    select_provider("shm");
  }
  // Starts the hostile child on `c_case`, accepts it into s_ and reads its
  // hello; stderr is captured into cap_ from before the accept on (the bad
  // entries may be seen as early as raccept).
  void accept_hostile(const std::string& c_case) {
    ASSERT_NO_FATAL_FAILURE(make_listener(AF_INET, &l_));
    KFd notify;
    child_.pid = spawn_child(
        "shm_ring_hostile",
        {"RS_CONFORMANCE_PORT=" + std::to_string(l_.addr.port()), "RS_CONFORMANCE_CASE=" + c_case},
        &notify);
    ASSERT_GT(child_.pid, 0) << strerror(errno);
    std::string report;
    ASSERT_TRUE(child_ready(notify, &report)) << "child: " << report;
    cap_ = std::make_unique<sstest::StderrCapture>();
    ASSERT_TRUE(wait_events(l_.fd, POLLIN, 20000) & POLLIN);
    s_.reset(raccept(l_.fd, nullptr, nullptr));
    ASSERT_GE(s_.get(), 0) << strerror(errno);
    char hello[5];
    ASSERT_EQ(5u, recv_all(s_, hello, 5)) << cap_->text();
    ASSERT_EQ(0, memcmp(hello, "hello", 5));
  }

  Reaper child_;
  Listener l_;
  std::unique_ptr<sstest::StderrCapture> cap_;
  RFd s_;
};

class ShmHostileTest : public ShmHostileBase, public ::testing::WithParamInterface<const char*> {};
class ShmHostileSender : public ShmHostileBase {};

// Reads what the connection still delivers, polling without blocking (the
// hostile child never kicks our wake-up), until it ends. Returns the bytes
// read after the hello; *last gets the final rrecv's result and errno.
size_t drain(int s, ssize_t* last, int* err) {
  size_t extra = 0;
  char buf[4096];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    ssize_t n = rrecv(s, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      extra += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EAGAIN && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    *last = n;
    *err = n < 0 ? errno : 0;
    return extra;
  }
}

TEST_P(ShmHostileTest, BadRingEntryFailsTheConnection) {
  const std::string c_case = GetParam();
  ASSERT_NO_FATAL_FAILURE(accept_hostile(c_case));
  ssize_t last = 0;
  int err = 0;
  const size_t extra = drain(s_, &last, &err);
  const std::string log = cap_->text();
  size_t warnings = 0;
  for (size_t at = 0; (at = log.find("WARN", at)) != std::string::npos; at++) warnings++;
  ASSERT_NE(EAGAIN, err) << "the connection neither failed nor ended within 30 s";
  if (c_case == "stream_ahead") {
    // Data whose frames never came is never delivered; the end is an EOF
    // or a reset.
    EXPECT_EQ(0u, extra);
    EXPECT_TRUE(last == 0 || err == ECONNRESET) << last << " " << strerror(err);
  } else {
    // Messages within the credits, before the first bad one, may be read.
    if (c_case == "flood") {
      int rq = 0;
      socklen_t len = sizeof rq;
      ASSERT_EQ(0, rgetsockopt(s_, SOL_RDMA, RDMA_RQSIZE, &rq, &len)) << strerror(errno);
      EXPECT_LE(extra, static_cast<size_t>(rq));
    } else {
      EXPECT_EQ(0u, extra);
    }
    EXPECT_EQ(-1, last);
    EXPECT_EQ(ECONNRESET, err) << strerror(err);
    // One line says why; a flood of bad messages is not a flood of lines.
    EXPECT_EQ(1u, warnings) << log;
    EXPECT_NE(std::string::npos, log.find("connection failed")) << log;
  }

  // The listener serves a well-behaved client afterwards.
  RFd c2, s2;
  ASSERT_NO_FATAL_FAILURE(connect_to(AF_INET, l_, &c2, &s2));
  ASSERT_EQ(3, rsend(c2, "abc", 3, 0));
  char b[3];
  ASSERT_EQ(3u, recv_all(s2, b, 3));
  EXPECT_EQ(0, memcmp(b, "abc", 3));
}

// A peer that grants credits and never takes a message from its ring:
// once the ring is full and as many messages again wait for room, the
// connection fails (the wait would otherwise grow with every send).
TEST_F(ShmHostileSender, PeerThatNeverEmptiesItsRingIsDropped) {
  ASSERT_NO_FATAL_FAILURE(accept_hostile("ring_hoard"));
  ssize_t n = 0;
  int sent = 0, err = 0;
  for (; sent < 20000; sent++) {
    n = rsend(s_, "x", 1, MSG_DONTWAIT);
    if (n != 1) {
      err = errno;
      break;
    }
  }
  const std::string log = cap_->text();
  ASSERT_EQ(-1, n) << "all " << sent << " sends went through";
  EXPECT_EQ(ECONNRESET, err) << strerror(err) << " after " << sent << " sends";
  EXPECT_NE(std::string::npos, log.find("beyond its credits")) << log;
}

// ---------------------------------------------------------------------------
// Peers of another user. Memory is shared only with our own uid or root,
// and both ends check before a byte goes to the other.

constexpr uid_t kNobody = 65534, kOtherUser = 65533;

// Drops this (forked or re-executed) child to `uid` for good.
bool become(uid_t uid) {
  return setgroups(0, nullptr) == 0 && setgid(uid) == 0 && setuid(uid) == 0;
}

struct Seen {  // what a child saw on its one unix connection
  uint32_t connected = 0, bytes = 0, fds = 0;
};

// Reads `c` until the other end hangs up (or 5 s pass without a byte).
void read_until_eof(int c, Seen* seen) {
  for (int i = 0; i < 1000; i++) {
    char buf[512];
    iovec iov{buf, sizeof buf};
    int fds[ss::kMaxPassedFds], got = 0;
    pollfd q{c, POLLIN, 0};
    if (poll(&q, 1, 5000) != 1) break;
    ssize_t n = ss::recv_with_fds(c, &iov, 1, fds, ss::kMaxPassedFds, &got, 0);
    // A message of more than we take, or more than this process could
    // hold, brought some all the same.
    if (n == -EPROTO || n == -EMFILE) {
      seen->fds++;
      continue;
    }
    if (n <= 0) break;
    seen->bytes += static_cast<uint32_t>(n);
    seen->fds += static_cast<uint32_t>(got);
    for (int i = 0; i < got; i++) close(fds[i]);
  }
}

// Forks a child that runs `body` as `uid` and reports what it saw on the
// pipe whose read end goes to *report (`body` may write on its fd first).
pid_t fork_as(uid_t uid, KFd* report, const std::function<void(Seen*, int report_fd)>& body) {
  int rep[2];
  if (pipe2(rep, O_CLOEXEC) != 0) return -1;
  pid_t pid = fork();
  if (pid != 0) {
    close(rep[1]);
    report->reset(rep[0]);
    return pid;
  }
  Seen seen;
  if (!become(uid)) _exit(2);
  body(&seen, rep[1]);
  _exit(write(rep[1], &seen, sizeof seen) == sizeof seen ? 0 : 3);
}

bool read_seen(int fd, Seen* seen) {
  return read(fd, seen, sizeof *seen) == static_cast<ssize_t>(sizeof *seen);
}

// The rendezvous of 127.0.0.1:port.
void rendezvous_of(uint16_t port, sockaddr_un* name, socklen_t* name_len) {
  Addr a = loopback(AF_INET, port);
  ASSERT_EQ(0, ss::prov::shm::rendezvous_name(a.sa(), a.len, name, name_len));
}

class ShmPeerCredentials : public ShmHostileBase {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to run children as other users";
    ShmHostileBase::SetUp();
  }
};

// Another user binds the rendezvous name of a port first (abstract names
// belong to whoever takes them): our connecting side must not take it for
// the listener. The connect is refused before a byte (hello, memfds) goes
// to it, with a warning naming that user.
TEST_F(ShmPeerCredentials, ConnectRefusesAnotherUsersRendezvous) {
  // A port nobody listens on, held by us for the test.
  KFd hold(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  Addr a = loopback(AF_INET);
  ASSERT_EQ(0, bind(hold, a.sa(), a.len)) << strerror(errno);
  ASSERT_EQ(0, getsockname(hold, a.sa(), &a.len));
  sockaddr_un name;
  socklen_t name_len;
  ASSERT_NO_FATAL_FAILURE(rendezvous_of(a.port(), &name, &name_len));
  KFd report;
  Reaper squatter;
  squatter.pid = fork_as(kNobody, &report, [&](Seen* seen, int report_fd) {
    KFd l(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (bind(l, reinterpret_cast<const sockaddr*>(&name), name_len) != 0 || listen(l, 4) != 0)
      _exit(2);
    if (write(report_fd, "r", 1) != 1) _exit(3);
    pollfd p{l, POLLIN, 0};
    if (poll(&p, 1, 20000) != 1) return;
    KFd c(accept4(l, nullptr, nullptr, SOCK_CLOEXEC));
    seen->connected = c.get() >= 0;
    if (c.get() >= 0) read_until_eof(c, seen);
  });
  ASSERT_GT(squatter.pid, 0) << strerror(errno);
  char ready = 0;
  ASSERT_EQ(1, read(report, &ready, 1)) << "the squatter could not bind the rendezvous";

  sstest::StderrCapture cap;
  RFd c(rsocket(AF_INET, SOCK_STREAM, 0));
  ASSERT_GE(c.get(), 0);
  int rc = 0, err = 0;
  bool returned = run_with_timeout(
      [&] {
        rc = rconnect(c, a.sa(), a.len);
        err = errno;
      },
      10, [&] { rshutdown(c, SHUT_RDWR); });
  c.reset();
  const std::string log = cap.text();
  Seen seen;
  ASSERT_TRUE(read_seen(report, &seen));
  EXPECT_TRUE(returned) << "rconnect waited on another user's rendezvous";
  EXPECT_EQ(-1, rc);
  EXPECT_EQ(ECONNREFUSED, err) << strerror(err);
  EXPECT_EQ(1u, seen.connected) << "the connect never reached the squatter: nothing was shown";
  EXPECT_EQ(0u, seen.bytes) << "bytes went to another user's rendezvous";
  EXPECT_EQ(0u, seen.fds) << "descriptors went to another user's rendezvous";
  EXPECT_NE(std::string::npos, log.find("rendezvous of uid 65534 refused")) << log;
}

// A listener of one user, a client of another that speaks a well-formed
// hello on its rendezvous (not through the library, which would refuse
// first): the listener hangs up without a reply or a descriptor.
[[noreturn]] void run_listener_as_nobody() {
  if (!become(kNobody)) child_fail("setuid");
  select_provider("shm");
  Addr a = loopback(AF_INET);
  int l = rsocket(AF_INET, SOCK_STREAM, 0);
  if (l < 0 || rbind(l, a.sa(), a.len) != 0 || rlisten(l, 4) != 0) child_fail("listen");
  socklen_t len = sizeof a.ss;
  if (rgetsockname(l, a.sa(), &len) != 0) child_fail("rgetsockname");
  const std::string ready = "R" + std::to_string(a.port());
  if (write(kChildNotifyFd, ready.data(), ready.size()) != static_cast<ssize_t>(ready.size()))
    _exit(3);
  for (;;) pause();
}

TEST_F(ShmPeerCredentials, ListenerRefusesAnotherUsersClient) {
  sstest::StderrCapture cap;  // the listener's warning comes through our stderr
  Reaper listener;
  KFd notify;
  listener.pid = spawn_child("shm_listen_as_nobody", {}, &notify);
  ASSERT_GT(listener.pid, 0) << strerror(errno);
  std::string ready;
  ASSERT_TRUE(child_ready(notify, &ready)) << "listener: " << ready;
  const uint16_t port = static_cast<uint16_t>(atoi(ready.c_str() + (ready[0] == 'R')));
  sockaddr_un name;
  socklen_t name_len;
  ASSERT_NO_FATAL_FAILURE(rendezvous_of(port, &name, &name_len));
  KFd report;
  Reaper client;
  client.pid = fork_as(kOtherUser, &report, [&](Seen* seen, int) {
    KFd c(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (connect(c, reinterpret_cast<const sockaddr*>(&name), name_len) != 0) return;
    seen->connected = 1;
    uint8_t hello[ss::prov::util::kFrameHeaderSize + ss::rs::kConnDataSize] = {};
    ss::prov::util::encode_frame(
        {ss::prov::util::FrameType::kHello, ss::prov::shm::kProto.hello_tag,
         static_cast<uint32_t>(ss::rs::kConnDataSize), 0, ss::prov::util::kHelloVersion,
         ss::prov::util::kHelloMagic},
        hello);
    if (write(c, hello, sizeof hello) != static_cast<ssize_t>(sizeof hello)) return;
    read_until_eof(c, seen);
  });
  ASSERT_GT(client.pid, 0) << strerror(errno);
  Seen seen;
  ASSERT_TRUE(read_seen(report, &seen)) << "the client could not run as uid " << kOtherUser;
  kill_and_reap(listener.pid);  // its stderr is our capture: it must end first
  listener.pid = -1;
  const std::string log = cap.text();
  EXPECT_EQ(1u, seen.connected);
  EXPECT_EQ(0u, seen.bytes) << "another user's client got a reply";
  EXPECT_EQ(0u, seen.fds) << "descriptors went to another user's client";
  EXPECT_NE(std::string::npos, log.find("connection from uid 65533 refused")) << log;
}

INSTANTIATE_TEST_SUITE_P(Cases, ShmHostileTest,
                         ::testing::Values("oversize", "len_mismatch", "reserved_op",
                                           "crosses_half", "flood", "stream_ahead",
                                           "region_unsealed", "region_short", "region_no_fd",
                                           "ring_twice", "fd_flood", "fds_hoarded"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

}  // namespace
}  // namespace rsconf
