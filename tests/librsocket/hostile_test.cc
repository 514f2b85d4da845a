// A hostile peer on the tcp provider: a raw kernel TCP client talks to a
// listening rsocket in this process and breaks the protocol in one way per
// test. Each time the server must drop that connection (the raw socket
// sees EOF or a reset), must not crash or corrupt memory (the suite also
// runs under ASan), and must go on serving: a normal rsocket client then
// connects and exchanges verified data.
//
// RandomFrames mixes valid and broken frames from fixed seeds (each round
// names its seed), the cases above do not think of.
//
// Frames follow core/prov/util/frame.h; the connection data is
// librsocket/wire.h's ConnData.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/prov/util/frame.h"
#include "librsocket/wire.h"
#include "tests/librsocket/conformance.h"
#include "tests/librsocket/raw_peer.h"

namespace rsconf {
namespace {

using ss::prov::util::FrameHeader;
using ss::prov::util::FrameType;
using ss::prov::util::kFrameHeaderSize;
using ss::prov::util::kHelloMagic;
using ss::prov::util::kHelloVersion;
using ss::rs::ConnData;
using ss::rs::kConnDataSize;

// A raw kernel TCP listener on IPv4 loopback (the passive side played by
// hand); *a gets its address.
void raw_listener(KFd* ls, Addr* a, int backlog) {
  ls->reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_GE(ls->get(), 0);
  *a = loopback(AF_INET);
  ASSERT_EQ(0, ::bind(*ls, a->sa(), a->len));
  ASSERT_EQ(0, ::listen(*ls, backlog));
  a->len = sizeof a->ss;
  ASSERT_EQ(0, ::getsockname(*ls, a->sa(), &a->len));
}

// Waits (up to 20 s) until the server closes or resets the raw connection,
// discarding whatever it sends first (credit updates, a reject).
bool dropped(int fd, std::string* why) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  uint8_t buf[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd pf{fd, POLLIN, 0};
    int n = poll(&pf, 1, 200);
    if (n <= 0) continue;
    ssize_t r = ::recv(fd, buf, sizeof buf, 0);
    if (r == 0) return true;
    if (r < 0 && (errno == ECONNRESET || errno == EPIPE)) return true;
    if (r < 0 && errno != EINTR && errno != EAGAIN) {
      *why = std::string("recv: ") + strerror(errno);
      return true;
    }
  }
  *why = "the server kept the hostile connection open for 20 s";
  return false;
}

class HostileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    ASSERT_TRUE(probe("tcp", AF_INET, &why));
    if (!why.empty()) GTEST_SKIP() << why;
    ASSERT_NO_FATAL_FAILURE(make_listener(AF_INET, &l_));
  }

  void TearDown() override {
    if (server_thread_.joinable()) {
      if (server_fd_.get() >= 0) rshutdown(server_fd_, SHUT_RDWR);
      server_thread_.join();
    }
    server_fd_.reset();
    if (!HasFatalFailure() && !IsSkipped()) {
      // The listener serves a well-behaved client after the attack.
      ASSERT_NO_FATAL_FAILURE(legit_exchange());
    }
  }

  KFd raw_connect() {
    KFd fd = rsconf::raw_connect(l_);
    EXPECT_GE(fd.get(), 0) << strerror(errno);
    return fd;
  }

  // A well-formed hello; reads the accept reply into server_ and accepts
  // the connection, whose reader thread starts once `go_` is set (at once
  // unless hold_reader).
  void handshake(KFd* raw, bool hold_reader = false) {
    *raw = raw_connect();
    ASSERT_GE(raw->get(), 0);
    send_hello(*raw, fake_conn_data());
    uint8_t hdr[kFrameHeaderSize];
    ASSERT_TRUE(raw_recv_exact(*raw, hdr, sizeof hdr)) << "no reply to a well-formed hello";
    FrameHeader h;
    ss::prov::util::decode_frame(hdr, &h);
    ASSERT_EQ(FrameType::kHelloReply, h.type);
    ASSERT_EQ(0, h.flags) << "well-formed hello rejected";
    ASSERT_EQ(kConnDataSize, h.length);
    uint8_t pd[kConnDataSize];
    ASSERT_TRUE(raw_recv_exact(*raw, pd, sizeof pd));
    server_.decode(pd);
    ASSERT_EQ(1, server_.version);
    ASSERT_GT(server_.credits, 0);
    ASSERT_GT(server_.data_buf.length, 0u);
    ASSERT_TRUE(wait_events(l_.fd, POLLIN, 20000) & POLLIN);
    server_fd_.reset(raccept(l_.fd, nullptr, nullptr));
    ASSERT_GE(server_fd_.get(), 0) << strerror(errno);
    go_ = !hold_reader;
    int sfd = server_fd_;
    server_thread_ = std::thread([this, sfd] {
      while (!go_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      char buf[4096];
      for (;;) {
        ssize_t n = rrecv(sfd, buf, sizeof buf, 0);
        if (n <= 0) {
          last_rc_ = n;
          last_errno_ = n < 0 ? errno : 0;
          return;
        }
        received_ += static_cast<size_t>(n);
      }
    });
  }

  FrameHeader data_frame(uint64_t addr, uint32_t key, uint32_t len, uint32_t imm_len) const {
    return {FrameType::kWriteImm, 0, len, addr, key, ss::rs::make_imm(ss::rs::kOpData, imm_len)};
  }

  // A connection whose first data frame says 1000 bytes and brings 7.
  void start_a_frame(KFd* raw) {
    ASSERT_NO_FATAL_FAILURE(handshake(raw));
    uint8_t hdr[kFrameHeaderSize];
    ss::prov::util::encode_frame(
        data_frame(server_.data_buf.addr, server_.data_buf.key, 1000, 1000), hdr);
    raw_send(*raw, hdr, sizeof hdr);
    raw_send(*raw, "partial", 7);
  }

  // The raw socket is dropped and the server's reader sees an error.
  void expect_dropped(int raw) {
    std::string why;
    EXPECT_TRUE(dropped(raw, &why)) << why;
    if (server_thread_.joinable()) {
      bool ok = run_with_timeout([&] { server_thread_.join(); }, 20,
                                 [&] { rshutdown(server_fd_, SHUT_RDWR); });
      EXPECT_TRUE(ok) << "the server's rrecv did not return after the protocol violation";
      EXPECT_EQ(-1, last_rc_) << "a broken connection must not look like an orderly EOF";
      EXPECT_TRUE(last_errno_ == ECONNRESET || last_errno_ == EPROTO || last_errno_ == EIO)
          << strerror(last_errno_);
    }
  }

  // No connection was queued for the application.
  void expect_nothing_queued() {
    pollfd pf{l_.fd, POLLIN, 0};
    EXPECT_EQ(0, rpoll(&pf, 1, 200)) << "a refused peer reached the accept queue";
  }

  void legit_exchange() {
    RFd c, s;
    ASSERT_NO_FATAL_FAILURE(connect_to(AF_INET, l_, &c, &s));
    constexpr size_t kLen = 256 * 1024;
    size_t bad1 = 0, bad2 = 0, got1 = 0, got2 = 0;
    std::thread t([&] { got1 = recv_pattern(s, kLen, 4242, 30000, true, &bad1); });
    std::thread t2([&] { send_pattern(s, kLen, 4343, 20000, true); });
    send_pattern(c, kLen, 4242, 20000, true);
    got2 = recv_pattern(c, kLen, 4343, 30000, true, &bad2);
    t.join();
    t2.join();
    EXPECT_EQ(kLen, got1);
    EXPECT_EQ(kLen, got2);
    EXPECT_EQ(SIZE_MAX, bad1) << "data corrupted after the attack";
    EXPECT_EQ(SIZE_MAX, bad2) << "data corrupted after the attack";
  }

  Listener l_;
  ConnData server_;
  RFd server_fd_;
  std::thread server_thread_;
  std::atomic<bool> go_{false};
  std::atomic<size_t> received_{0};
  ssize_t last_rc_ = 0;
  int last_errno_ = 0;
};

TEST_F(HostileTest, GarbageInsteadOfHello) {
  KFd raw = raw_connect();
  std::string junk = "GET / HTTP/1.1\r\nHost: rsocket\r\n\r\n";
  junk.append(4000, '\x5a');
  raw_send(raw, junk.data(), junk.size());
  expect_dropped(raw);
  expect_nothing_queued();
}

TEST_F(HostileTest, HelloWithProtocolVersion7) {
  KFd raw = raw_connect();
  send_hello(raw, fake_conn_data(7));
  // The server may answer with a reject; it must never accept.
  uint8_t hdr[kFrameHeaderSize];
  if (raw_recv_exact(raw, hdr, sizeof hdr, 10000)) {
    FrameHeader h;
    ss::prov::util::decode_frame(hdr, &h);
    EXPECT_EQ(FrameType::kHelloReply, h.type);
    EXPECT_EQ(1, h.flags) << "a version-7 peer was accepted";
  }
  expect_dropped(raw);
  expect_nothing_queued();
}

TEST_F(HostileTest, HelloWithBadMagicOrFrameVersion) {
  for (int variant = 0; variant < 3; variant++) {
    KFd raw = raw_connect();
    uint8_t pd[kConnDataSize];
    fake_conn_data().encode(pd);
    FrameHeader h{FrameType::kHello, kTcpKind,   static_cast<uint32_t>(kConnDataSize), 0,
                  kHelloVersion,     kHelloMagic};
    if (variant == 0) h.imm = 0xDEADBEEF;
    if (variant == 1) h.rkey = 7;
    if (variant == 2) h.length = 0x7FFFFFFF;  // hello claiming 2 GiB of private data
    send_frame(raw, h, pd, sizeof pd);
    SCOPED_TRACE("variant " + std::to_string(variant));
    expect_dropped(raw);
  }
  expect_nothing_queued();
}

TEST_F(HostileTest, HelloWithMalformedConnData) {
  for (int variant = 0; variant < 3; variant++) {
    KFd raw = raw_connect();
    ConnData cd = fake_conn_data();
    if (variant == 0) cd.credits = 0;
    if (variant == 1) cd.target_sgl.length = 1000;
    if (variant == 2) cd.data_buf.length = 0;
    uint8_t pd[kConnDataSize];
    cd.encode(pd);
    uint32_t len = variant == 2 ? 8 : kConnDataSize;  // variant 2 also truncated
    FrameHeader h{FrameType::kHello, kTcpKind, len, 0, kHelloVersion, kHelloMagic};
    send_frame(raw, h, pd, len);
    SCOPED_TRACE("variant " + std::to_string(variant));
    uint8_t hdr[kFrameHeaderSize];
    if (raw_recv_exact(raw, hdr, sizeof hdr, 10000)) {
      FrameHeader r;
      ss::prov::util::decode_frame(hdr, &r);
      EXPECT_EQ(1, r.flags) << "malformed connection data was accepted";
    }
    expect_dropped(raw);
  }
  expect_nothing_queued();
}

TEST_F(HostileTest, WriteImmWithWrongRkey) {
  KFd raw;
  ASSERT_NO_FATAL_FAILURE(handshake(&raw));
  uint32_t payload = 0x41414141;
  send_frame(raw, data_frame(server_.data_buf.addr, server_.data_buf.key ^ 0x5A5A, 4, 4), &payload,
             4);
  expect_dropped(raw);
  EXPECT_EQ(0u, received_.load()) << "data written with a wrong key was delivered";
}

TEST_F(HostileTest, WriteImmOutsideAdvertisedBuffer) {
  // Just past the end of the whole receive buffer (both halves).
  KFd raw;
  ASSERT_NO_FATAL_FAILURE(handshake(&raw));
  uint32_t payload = 0x42424242;
  uint64_t past = server_.data_buf.addr + 2ull * server_.data_buf.length;
  send_frame(raw, data_frame(past, server_.data_buf.key, 4, 4), &payload, 4);
  expect_dropped(raw);
  EXPECT_EQ(0u, received_.load());
}

TEST_F(HostileTest, WriteImmBelowAdvertisedBuffer) {
  KFd raw;
  ASSERT_NO_FATAL_FAILURE(handshake(&raw));
  uint32_t payload = 0x43434343;
  send_frame(raw, data_frame(server_.data_buf.addr - 64, server_.data_buf.key, 4, 4), &payload, 4);
  expect_dropped(raw);
  EXPECT_EQ(0u, received_.load());
}

TEST_F(HostileTest, WriteImmStraddlingBufferEnd) {
  KFd raw;
  ASSERT_NO_FATAL_FAILURE(handshake(&raw));
  std::vector<uint8_t> payload(64, 0x44);
  uint64_t near_end = server_.data_buf.addr + 2ull * server_.data_buf.length - 32;
  send_frame(raw, data_frame(near_end, server_.data_buf.key, 64, 64), payload.data(),
             payload.size());
  expect_dropped(raw);
}

TEST_F(HostileTest, WriteImmLongerThanBuffer) {
  KFd raw;
  ASSERT_NO_FATAL_FAILURE(handshake(&raw));
  uint32_t len = 2 * server_.data_buf.length + 4096;
  std::vector<uint8_t> payload(len, 0x45);
  FrameHeader h = data_frame(server_.data_buf.addr, server_.data_buf.key, len, len & 0x1FFFFFFF);
  uint8_t hdr[kFrameHeaderSize];
  ss::prov::util::encode_frame(h, hdr);
  raw_send(raw, hdr, sizeof hdr);
  // The payload follows for as long as the server takes it.
  std::thread t([&] { raw_send(raw, payload.data(), payload.size()); });
  expect_dropped(raw);
  ::shutdown(raw, SHUT_RDWR);
  t.join();
}

TEST_F(HostileTest, WriteImmAbsurdLength) {
  KFd raw;
  ASSERT_NO_FATAL_FAILURE(handshake(&raw));
  send_frame(raw, data_frame(server_.data_buf.addr, server_.data_buf.key, 0xFFFFFFFFu, 4));
  std::vector<uint8_t> some(8192, 0x46);
  raw_send(raw, some.data(), some.size());
  expect_dropped(raw);
}

TEST_F(HostileTest, PlainWriteAbsurdLengthAndWrongKey) {
  KFd raw;
  ASSERT_NO_FATAL_FAILURE(handshake(&raw));
  FrameHeader h{FrameType::kWrite, 0, 0xFFFFFFF0u, server_.target_sgl.addr, 12345, 0};
  send_frame(raw, h);
  expect_dropped(raw);
}

TEST_F(HostileTest, ImmediateClaimsMoreThanWritten) {
  KFd raw;
  ASSERT_NO_FATAL_FAILURE(handshake(&raw));
  uint32_t payload = 0x47474747;
  send_frame(raw, data_frame(server_.data_buf.addr, server_.data_buf.key, 4, 60000), &payload, 4);
  expect_dropped(raw);
  EXPECT_LE(received_.load(), 4u) << "the server trusted an immediate over the bytes written";
}

TEST_F(HostileTest, ReservedOpcodeInImmediate) {
  KFd raw;
  ASSERT_NO_FATAL_FAILURE(handshake(&raw));
  uint32_t payload = 0x48484848;
  FrameHeader h{FrameType::kWriteImm,
                0,
                4,
                server_.data_buf.addr,
                server_.data_buf.key,
                ss::rs::make_imm(ss::rs::kOpRsvdDataMore, 4)};
  send_frame(raw, h, &payload, 4);
  expect_dropped(raw);
}

TEST_F(HostileTest, UnknownFrameType) {
  KFd raw;
  ASSERT_NO_FATAL_FAILURE(handshake(&raw));
  FrameHeader h{static_cast<FrameType>(0x77), 0, 0, 0, 0, 0};
  send_frame(raw, h);
  expect_dropped(raw);
}

TEST_F(HostileTest, FloodBeyondCredits) {
  KFd raw;
  // The server's application does not read until the whole flood is in.
  ASSERT_NO_FATAL_FAILURE(handshake(&raw, /*hold_reader=*/true));
  const uint32_t credits = server_.credits;
  const uint32_t count = credits + 50;
  ASSERT_LT(count, server_.data_buf.length) << "one byte per message must fit the first half";
  std::vector<uint8_t> stream;
  for (uint32_t i = 0; i < count; i++) {
    uint8_t hdr[kFrameHeaderSize];
    ss::prov::util::encode_frame(data_frame(server_.data_buf.addr + i, server_.data_buf.key, 1, 1),
                                 hdr);
    stream.insert(stream.end(), hdr, hdr + sizeof hdr);
    stream.push_back(static_cast<uint8_t>(i));
  }
  raw_send(raw, stream.data(), stream.size());
  go_ = true;
  expect_dropped(raw);
  EXPECT_LE(received_.load(), static_cast<size_t>(credits))
      << "the server accepted more messages than it gave credits for";
}

TEST_F(HostileTest, PeerVanishesMidFrame) {
  KFd raw;
  ASSERT_NO_FATAL_FAILURE(start_a_frame(&raw));
  raw.reset();  // close with the frame unfinished
  bool ok = run_with_timeout([&] { server_thread_.join(); }, 20,
                             [&] { rshutdown(server_fd_, SHUT_RDWR); });
  EXPECT_TRUE(ok) << "the server's rrecv did not notice the peer closing mid-frame";
  EXPECT_EQ(-1, last_rc_) << "a connection cut mid-frame is not an orderly EOF";
  EXPECT_EQ(ECONNRESET, last_errno_) << strerror(last_errno_);
}

// The same cut by a reset: the peer closes with the server's first
// message (its credits) unread, which Linux answers with a reset; the
// server's read meets it after the frame's start. Still no orderly end,
// though the peer read all the data we sent (there was none).
TEST_F(HostileTest, PeerResetsMidFrame) {
  KFd raw;
  ASSERT_NO_FATAL_FAILURE(start_a_frame(&raw));
  pollfd pf{raw, POLLIN, 0};
  ASSERT_EQ(1, poll(&pf, 1, 20000)) << "the server sent nothing after the hello";
  raw.reset();  // with bytes unread: a reset
  bool ok = run_with_timeout([&] { server_thread_.join(); }, 20,
                             [&] { rshutdown(server_fd_, SHUT_RDWR); });
  EXPECT_TRUE(ok) << "the server's rrecv did not notice the peer's reset mid-frame";
  EXPECT_EQ(-1, last_rc_) << "a connection reset mid-frame is not an orderly EOF";
  EXPECT_EQ(ECONNRESET, last_errno_) << strerror(last_errno_);
}

TEST_F(HostileTest, SilentPeersDoNotBlockOthers) {
  // Raw connections that never send a hello must not stall a real client.
  std::vector<KFd> silent;
  for (int i = 0; i < 20; i++) silent.push_back(raw_connect());
  ASSERT_NO_FATAL_FAILURE(legit_exchange());
  // A hello sent one byte at a time still works.
  KFd slow = raw_connect();
  uint8_t pd[kConnDataSize];
  fake_conn_data().encode(pd);
  uint8_t hdr[kFrameHeaderSize];
  ss::prov::util::encode_frame({FrameType::kHello, kTcpKind, static_cast<uint32_t>(kConnDataSize),
                                0, kHelloVersion, kHelloMagic},
                               hdr);
  std::vector<uint8_t> all(hdr, hdr + sizeof hdr);
  all.insert(all.end(), pd, pd + sizeof pd);
  for (uint8_t b : all) {
    raw_send(slow, &b, 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  uint8_t reply[kFrameHeaderSize];
  ASSERT_TRUE(raw_recv_exact(slow, reply, sizeof reply)) << "no reply to a slow hello";
  FrameHeader r;
  ss::prov::util::decode_frame(reply, &r);
  EXPECT_EQ(FrameType::kHelloReply, r.type);
  EXPECT_EQ(0, r.flags);
  ASSERT_TRUE(wait_events(l_.fd, POLLIN, 20000) & POLLIN);
  RFd s(raccept(l_.fd, nullptr, nullptr));
  EXPECT_GE(s.get(), 0);
}

// A peer that takes the TCP connection but never answers the hello leaves
// rconnect waiting; rshutdown abandons that connect as Linux does for one in
// progress: the blocked rconnect returns ECONNRESET (so a caller can always
// release it), and a non-blocking one reports ECONNRESET through SO_ERROR.
TEST(TcpWireTest, ShutdownAbandonsAConnectInProgress) {
  std::string why;
  ASSERT_TRUE(probe("tcp", AF_INET, &why));
  if (!why.empty()) GTEST_SKIP() << why;
  KFd ls;
  Addr a;
  // The kernel completes the handshakes; nobody replies to the hello.
  ASSERT_NO_FATAL_FAILURE(raw_listener(&ls, &a, 4));

  RFd c(rsocket(AF_INET, SOCK_STREAM, 0));
  ASSERT_GE(c.get(), 0);
  int rc = 0, e = 0;
  std::atomic<bool> returned{false};
  bool in_time = run_with_timeout(
      [&] {
        std::thread t([&] {
          rc = rconnect(c, a.sa(), a.len);
          e = errno;
          returned = true;
        });
        // Until the connect is under way, rshutdown answers ENOTCONN.
        while (!returned && rshutdown(c, SHUT_RDWR) != 0) {
          EXPECT_EQ(ENOTCONN, errno) << strerror(errno);
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        t.join();
      },
      30, [&] { ls.reset(); });  // pending connections are reset: rconnect fails
  ASSERT_TRUE(in_time) << "rshutdown did not release a blocked rconnect";
  EXPECT_EQ(-1, rc);
  EXPECT_EQ(ECONNRESET, e) << strerror(e);

  RFd n(rsocket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
  ASSERT_GE(n.get(), 0);
  ASSERT_EQ(-1, rconnect(n, a.sa(), a.len));
  ASSERT_EQ(EINPROGRESS, errno) << strerror(errno);
  EXPECT_EQ(0, rshutdown(n, SHUT_RDWR)) << strerror(errno);
  EXPECT_TRUE(wait_events(n, POLLOUT, 5000) & POLLERR);
  int err = 0;
  socklen_t len = sizeof err;
  ASSERT_EQ(0, rgetsockopt(n, SOL_SOCKET, SO_ERROR, &err, &len)) << strerror(errno);
  EXPECT_EQ(ECONNRESET, err) << strerror(err);
}

// The passive side may publish its second receive-buffer half (an SGL
// write with immediate) right behind its connect reply; both then arrive in
// one read at the active side. The active side must keep that entry: the
// peer writes target_sgl[1] only once, and without it every transfer stalls
// after the first half. A raw kernel server plays the passive side.
TEST(TcpWireTest, CreditUpdateArrivingWithConnectReplyIsKept) {
  std::string why;
  ASSERT_TRUE(probe("tcp", AF_INET, &why));
  if (!why.empty()) GTEST_SKIP() << why;
  KFd ls;
  Addr a;
  ASSERT_NO_FATAL_FAILURE(raw_listener(&ls, &a, 1));

  constexpr uint64_t kHalfA = 0x100000, kHalfB = 0x200000;
  constexpr uint32_t kHalf = 65536, kKey = 5;
  constexpr size_t kTotal = 100000;
  std::atomic<size_t> in_a{0}, in_b{0}, elsewhere{0};
  std::string server_error;
  KFd conn;
  std::thread srv([&] {
    int fd = ::accept(ls, nullptr, nullptr);
    if (fd < 0) {
      server_error = "accept failed";
      return;
    }
    conn.reset(fd);
    uint8_t hello[kFrameHeaderSize + kConnDataSize];
    if (!raw_recv_exact(fd, hello, sizeof hello)) {
      server_error = "no hello";
      return;
    }
    FrameHeader h;
    ss::prov::util::decode_frame(hello, &h);
    if (h.type != FrameType::kHello || h.length != kConnDataSize) {
      server_error = "unexpected hello";
      return;
    }
    ConnData client;
    client.decode(hello + kFrameHeaderSize);
    ConnData ours;
    ours.flags = ss::rs::kConnFlagIomap | (ss::rs::host_is_big_endian() ? ss::rs::kConnFlagNet : 0);
    ours.credits = 64;
    ours.target_sgl = {0x300000, 6, 2};
    ours.data_buf = {kHalfA, kKey, kHalf};
    std::vector<uint8_t> out(kFrameHeaderSize + kConnDataSize);
    ss::prov::util::encode_frame({FrameType::kHelloReply, 0, static_cast<uint32_t>(kConnDataSize),
                                  0, kHelloVersion, kHelloMagic},
                                 out.data());
    ours.encode(out.data() + kFrameHeaderSize);
    // Right behind the reply: publish the second half into entry 1.
    ss::rs::RsSge second{kHalfB, kKey, kHalf};  // the client's own byte order
    uint8_t upd[kFrameHeaderSize];
    ss::prov::util::encode_frame(
        {FrameType::kWriteImm, 0, sizeof second, client.target_sgl.addr + sizeof(ss::rs::RsSge),
         client.target_sgl.key, ss::rs::make_imm(ss::rs::kOpSgl, ours.credits)},
        upd);
    out.insert(out.end(), upd, upd + sizeof upd);
    const auto* sp = reinterpret_cast<const uint8_t*>(&second);
    out.insert(out.end(), sp, sp + sizeof second);
    if (!raw_send(fd, out.data(), out.size())) {
      server_error = "reply not sent";
      return;
    }
    // Sink: tally where the client's data lands.
    std::vector<uint8_t> payload;
    while (in_a + in_b + elsewhere < kTotal) {
      uint8_t hdr[kFrameHeaderSize];
      if (!raw_recv_exact(fd, hdr, sizeof hdr, 30000)) return;
      FrameHeader f;
      ss::prov::util::decode_frame(hdr, &f);
      payload.resize(f.length);
      if (f.length && !raw_recv_exact(fd, payload.data(), f.length, 30000)) return;
      if (f.rkey != kKey) continue;  // the client's own credit updates to us
      if (f.remote_addr >= kHalfA && f.remote_addr < kHalfA + kHalf)
        in_a += f.length;
      else if (f.remote_addr >= kHalfB && f.remote_addr < kHalfB + kHalf)
        in_b += f.length;
      else
        elsewhere += f.length;
    }
  });
  RFd c(rsocket(AF_INET, SOCK_STREAM, 0));
  ASSERT_GE(c.get(), 0);
  ASSERT_EQ(0, rconnect(c, a.sa(), a.len)) << strerror(errno);
  std::vector<uint8_t> data(kTotal, 0x33);
  size_t sent = 0;
  bool in_time = run_with_timeout([&] { sent = send_all(c, data.data(), data.size()); }, 10,
                                  [&] { rshutdown(c, SHUT_RDWR); });
  EXPECT_TRUE(in_time) << "the sender stalled after " << in_a.load()
                       << " bytes: the peer's second buffer half, published right behind "
                          "the connect reply, was lost";
  EXPECT_EQ(kTotal, sent);
  if (!in_time && conn.get() >= 0) ::shutdown(conn, SHUT_RDWR);
  srv.join();
  EXPECT_EQ("", server_error);
  EXPECT_EQ(kHalf, in_a.load());
  EXPECT_EQ(kTotal - kHalf, in_b.load());
  EXPECT_EQ(0u, elsewhere.load());
}

// Rounds of frames drawn from fixed seeds: mostly what a real peer sends
// (data into the published half, a credit update into the server's SGL,
// plain writes, a shutdown), each frame with a chance of one field broken:
// any frame type or flags, a wrong key, an address around or far outside
// the buffers, a length from 0 to absurd, an immediate with any opcode or
// length, a payload shorter than claimed. Whatever a round holds, the
// server must end that connection's rrecv once the peer leaves (EOF or an
// error, never a hang), never crash, and serve a normal client afterwards
// (TearDown).
TEST_F(HostileTest, RandomFrames) {
  using ss::rs::make_imm;
  constexpr int kRounds = 300;
  for (int round = 0; round < kRounds; round++) {
    SCOPED_TRACE("seed " + std::to_string(round));
    std::mt19937 rng(static_cast<uint32_t>(round));
    auto pick = [&](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
    KFd raw;
    ASSERT_NO_FATAL_FAILURE(handshake(&raw));
    const ss::rs::RsSge& data = server_.data_buf;
    const ss::rs::RsSge& sgl = server_.target_sgl;
    uint32_t data_off = 0;  // the next free byte of the published half
    const int frames = 1 + static_cast<int>(pick(24));
    for (int f = 0; f < frames; f++) {
      FrameHeader h{};
      std::vector<uint8_t> payload;
      switch (pick(5)) {
        case 0:
        case 1: {  // data
          const uint32_t len = 1 + pick(512);
          h = data_frame(data.addr + data_off % data.length, data.key, len, len);
          data_off += len;
          break;
        }
        case 2: {  // a credit update offering a (made-up) buffer of ours
          h = {FrameType::kWriteImm,
               0,
               sizeof(ss::rs::RsSge),
               sgl.addr + pick(sgl.length) * 16,
               sgl.key,
               make_imm(ss::rs::kOpSgl, 16 + pick(64))};
          ss::rs::RsSge offer{0x30000, 79, 4096};
          payload.resize(sizeof offer);
          memcpy(payload.data(), &offer, sizeof offer);
          break;
        }
        case 3:  // a plain write
          h = {FrameType::kWrite, 0, 1 + pick(64), data.addr + pick(data.length), data.key, 0};
          break;
        default:  // shutdown or disconnect
          h = {
              FrameType::kWriteImm,
              0,
              0,
              sgl.addr,
              sgl.key,
              make_imm(ss::rs::kOpCtrl, pick(2) ? ss::rs::kCtrlShutdown : ss::rs::kCtrlDisconnect)};
          break;
      }
      if (pick(3) == 0) {  // break one field
        switch (pick(7)) {
          case 0:
            h.type = static_cast<FrameType>(pick(256));
            break;
          case 1:
            h.flags = static_cast<uint8_t>(1 + pick(255));
            break;
          case 2:
            h.rkey = rng();
            break;
          case 3:
            h.remote_addr = data.addr + 2ull * data.length - pick(64);
            break;
          case 4:
            h.remote_addr = (static_cast<uint64_t>(rng()) << 32) | rng();
            break;
          case 5:
            h.length = pick(2) ? pick(70000) : rng();
            break;
          default:
            h.imm = pick(2) ? make_imm(pick(8), pick(70000)) : rng();
            break;
        }
      }
      // Payloads stay small: a frame claiming more waits for bytes that
      // never come, until the peer leaves.
      if (payload.size() != h.length) {
        payload.resize(std::min<uint32_t>(h.length, 8192));
        for (auto& b : payload) b = static_cast<uint8_t>(rng());
      }
      send_frame(raw, h, payload.data(), payload.size());
    }
    ::shutdown(raw, SHUT_WR);
    bool ok = run_with_timeout([&] { server_thread_.join(); }, 20,
                               [&] { rshutdown(server_fd_, SHUT_RDWR); });
    ASSERT_TRUE(ok) << "the server's rrecv did not return after the peer left";
    EXPECT_TRUE(last_rc_ == 0 || last_errno_ == ECONNRESET || last_errno_ == EPROTO ||
                last_errno_ == EIO)
        << "rrecv " << last_rc_ << ": " << strerror(last_errno_);
    raw.reset();
    server_fd_.reset();
    last_rc_ = 0;
    last_errno_ = 0;
    received_ = 0;
  }
}

}  // namespace
}  // namespace rsconf
