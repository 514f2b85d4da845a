// Data integrity on every provider and address family: sizes from 1 B to
// 1 MiB in both directions at once, transfers that wrap the rings many
// times, small buffers and queues that force the credit and wrap paths,
// iovec calls, non-blocking event loops, and several threads and sockets.
#include <fcntl.h>
#include <poll.h>
#include <sys/uio.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/base/config.h"
#include "tests/librsocket/conformance.h"

namespace rsconf {
namespace {

class DataTest : public ConnTest {};

struct Result {
  size_t sent = 0, received = 0, bad_at = SIZE_MAX;
  int send_err = 0, recv_err = 0;
};

// Streams `len` bytes a->b and b->a at the same time: on each socket one
// thread sends while another receives. A stall (no byte moving for 30 s)
// shuts both sockets down and is reported in `stalled`.
constexpr int kStallSeconds = 30;

void duplex(int a, int b, size_t len, size_t chunk, bool randomize, Result* ab, Result* ba,
            bool* stalled, int release_seconds = 20, int stall_seconds = kStallSeconds) {
  std::atomic<size_t> progress{0};
  bool ok = run_watching_progress(
      {[&] {
         ab->sent = send_pattern(a, len, 1000 + len, chunk, randomize, &ab->send_err, &progress);
       },
       [&] {
         ba->sent = send_pattern(b, len, 2000 + len, chunk, randomize, &ba->send_err, &progress);
       },
       [&] {
         ab->received = recv_pattern(b, len, 1000 + len, chunk, randomize, &ab->bad_at,
                                     &ab->recv_err, &progress);
       },
       [&] {
         ba->received = recv_pattern(a, len, 2000 + len, chunk, randomize, &ba->bad_at,
                                     &ba->recv_err, &progress);
       }},
      progress, stall_seconds,
      [&] {
        rshutdown(a, SHUT_RDWR);
        rshutdown(b, SHUT_RDWR);
      },
      release_seconds);
  *stalled = !ok;
}

// One direction only: a sender thread, a receiver thread.
void one_way(int a, int b, size_t len, size_t chunk, bool randomize, Result* r, bool* stalled) {
  std::atomic<size_t> progress{0};
  bool ok = run_watching_progress(
      {[&] {
         r->sent = send_pattern(a, len, 3000 + len, chunk, randomize, &r->send_err, &progress);
       },
       [&] {
         r->received = recv_pattern(b, len, 3000 + len, chunk, randomize, &r->bad_at, &r->recv_err,
                                    &progress);
       }},
      progress, kStallSeconds, [&] {
        rshutdown(a, SHUT_RDWR);
        rshutdown(b, SHUT_RDWR);
      });
  *stalled = !ok;
}

void expect_complete(const Result& r, size_t len, const std::string& what) {
  EXPECT_EQ(len, r.sent) << what << ": send stopped early: " << strerror(r.send_err);
  EXPECT_EQ(len, r.received) << what << ": receive stopped early: "
                             << (r.recv_err ? strerror(r.recv_err) : "EOF");
  EXPECT_EQ(SIZE_MAX, r.bad_at) << what << ": first corrupt byte at stream offset " << r.bad_at;
}

TEST_P(DataTest, SizesBothDirectionsAtOnce) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  const size_t sizes[] = {1,      2,      3,      7,      64,     100,     1023,   2047,
                          2048,   2049,   4095,   4096,   4097,   65535,   65536,  65537,
                          131071, 131072, 131073, 262147, 524288, 1048575, 1 << 20};
  for (size_t len : sizes) {
    Result ab, ba;
    // Whole-buffer sends and receives, then odd-sized pieces.
    bool stalled = false;
    duplex(p.client, p.server, len, len, false, &ab, &ba, &stalled);
    EXPECT_FALSE(stalled) << len << " B: no progress for " << kStallSeconds << " s";
    expect_complete(ab, len, "client->server " + std::to_string(len) + " B");
    expect_complete(ba, len, "server->client " + std::to_string(len) + " B");
    if (HasFailure()) return;
    if (len > 1) {
      duplex(p.client, p.server, len, std::min<size_t>(len, 9000), true, &ab, &ba, &stalled);
      EXPECT_FALSE(stalled) << len << " B chunked: no progress for " << kStallSeconds << " s";
      expect_complete(ab, len, "client->server chunked " + std::to_string(len) + " B");
      expect_complete(ba, len, "server->client chunked " + std::to_string(len) + " B");
      if (HasFailure()) return;
    }
  }
}

TEST_P(DataTest, LargeTransfersWrapTheRings) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  // Each direction alone: hundreds of times the default 128 KiB ring.
  constexpr size_t kOneWay = 48u << 20;
  for (int dir = 0; dir < 2; dir++) {
    Result r;
    bool stalled = false;
    int from = dir ? p.server.get() : p.client.get(), to = dir ? p.client.get() : p.server.get();
    one_way(from, to, kOneWay, 200000, true, &r, &stalled);
    EXPECT_FALSE(stalled) << "no progress for " << kStallSeconds << " s";
    expect_complete(r, kOneWay, dir ? "server->client" : "client->server");
    if (HasFailure()) return;
  }
  // Both at once.
  constexpr size_t kDuplex = 4u << 20;
  Result ab, ba;
  bool stalled = false;
  duplex(p.client, p.server, kDuplex, 200000, true, &ab, &ba, &stalled);
  EXPECT_FALSE(stalled) << "no progress for " << kStallSeconds << " s";
  expect_complete(ab, kDuplex, "client->server");
  expect_complete(ba, kDuplex, "server->client");
}

TEST_P(DataTest, SmallBuffersForceCreditAndWrapPaths) {
  auto small = [](int fd) {
    int v = 4096;
    ASSERT_EQ(0, rsetsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v)) << strerror(errno);
    ASSERT_EQ(0, rsetsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v)) << strerror(errno);
    v = 16;
    ASSERT_EQ(0, rsetsockopt(fd, SOL_RDMA, RDMA_RQSIZE, &v, sizeof v)) << strerror(errno);
    ASSERT_EQ(0, rsetsockopt(fd, SOL_RDMA, RDMA_SQSIZE, &v, sizeof v)) << strerror(errno);
  };
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p, small, small));
  int v;
  socklen_t len = sizeof v;
  ASSERT_EQ(0, rgetsockopt(p.server, SOL_SOCKET, SO_RCVBUF, &v, &len));
  EXPECT_EQ(8192, v) << "accepted socket did not inherit the listener's SO_RCVBUF";
  // Each direction on its own: tiny messages (a credit update every few
  // bytes), then pieces around the 4 KiB half of the receive ring (a wrap
  // and a credit update every half).
  for (size_t chunk : {1, 7, 100, 3000, 8192, 20000}) {
    const size_t total = chunk < 100 ? 16 * 1024 : 1024 * 1024;
    for (int dir = 0; dir < 2; dir++) {
      Result r;
      bool stalled = false;
      int from = dir ? p.server.get() : p.client.get(), to = dir ? p.client.get() : p.server.get();
      one_way(from, to, total, chunk, chunk > 1, &r, &stalled);
      std::string what = std::string(dir ? "server->client" : "client->server") +
                         ", chunks up to " + std::to_string(chunk);
      EXPECT_FALSE(stalled) << what << ": no progress for " << kStallSeconds << " s";
      expect_complete(r, total, what);
      if (HasFailure()) return;
    }
  }
  // Both directions at once.
  for (size_t chunk : {100, 5000}) {
    const size_t total = 128 * 1024;
    Result ab, ba;
    bool stalled = false;
    duplex(p.client, p.server, total, chunk, true, &ab, &ba, &stalled);
    EXPECT_FALSE(stalled) << "chunks up to " << chunk << ": no progress for " << kStallSeconds
                          << " s";
    expect_complete(ab, total, "client->server, chunks up to " + std::to_string(chunk));
    expect_complete(ba, total, "server->client, chunks up to " + std::to_string(chunk));
    if (HasFailure()) return;
  }
}

// Blocked calls must be woken by the event they wait for. With the periodic
// wake-up (wake_up_interval) made very long, a lost wake-up between the
// sending and the receiving thread of one socket becomes a stall.
TEST_P(DataTest, DuplexNeedsNoPeriodicWakeUp) {
  ScopedEnv wake("SLIPSTREAM_RS_WAKE_UP_INTERVAL", kLongWakeUpMs);
  auto small = [](int fd) {
    int v = 4096;
    ASSERT_EQ(0, rsetsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v));
    ASSERT_EQ(0, rsetsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v));
  };
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p, small, small));
  constexpr size_t kLen = 8u << 20;  // many chances for the race
  Result ab, ba;
  bool stalled = false;
  duplex(p.client, p.server, kLen, 3000, true, &ab, &ba, &stalled, kLongWakeUpReleaseSeconds,
         kLostWakeUpSeconds);
  EXPECT_FALSE(stalled) << "a sender and a receiver on one socket stalled for "
                        << kLostWakeUpSeconds
                        << " s: a wake-up was lost (only the periodic wake_up_interval "
                           "would have rescued it)";
  expect_complete(ab, kLen, "client->server");
  expect_complete(ba, kLen, "server->client");
}

TEST_P(DataTest, ManySmallMessagesBeyondCredits) {
  // Many more messages than RDMA_RQSIZE credits, one byte each, while the
  // reader is slow: the sender must wait for credits, not overrun.
  auto q = [](int fd) {
    int v = 16;
    ASSERT_EQ(0, rsetsockopt(fd, SOL_RDMA, RDMA_RQSIZE, &v, sizeof v));
  };
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p, q, q));
  constexpr size_t kCount = 5000;
  int serr = 0;
  size_t sent = 0;
  std::thread t([&] {
    for (size_t i = 0; i < kCount; i++) {
      uint8_t b = static_cast<uint8_t>(i * 7);
      if (rsend(p.client, &b, 1, 0) != 1) {
        serr = errno;
        return;
      }
      sent++;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::vector<uint8_t> got(kCount);
  int rerr = 0;
  size_t n = recv_all(p.server, got.data(), kCount, &rerr);
  t.join();
  EXPECT_EQ(kCount, sent) << strerror(serr);
  ASSERT_EQ(kCount, n) << strerror(rerr);
  for (size_t i = 0; i < kCount; i++)
    ASSERT_EQ(static_cast<uint8_t>(i * 7), got[i]) << "message " << i;
}

TEST_P(DataTest, IovecCalls) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  std::vector<uint8_t> src(7 + 1000 + 3 + 5000 + 1);
  fill_pattern(src.data(), src.size(), 42);
  uint8_t* s = src.data();
  iovec out[] = {{s, 7}, {s + 7, 0}, {s + 7, 1000}, {s + 1007, 3}, {s + 1010, 5000}, {s + 6010, 1}};
  ASSERT_EQ(static_cast<ssize_t>(src.size()), rwritev(p.client, out, 6)) << strerror(errno);

  // rreadv scatters over every iovec.
  std::vector<uint8_t> dst(src.size());
  size_t got = 0;
  while (got < dst.size()) {
    size_t left = dst.size() - got;
    size_t a = std::min<size_t>(left, 10), b = std::min<size_t>(left - a, 2000);
    iovec in[] = {
        {dst.data() + got, a}, {dst.data() + got + a, b}, {dst.data() + got + a + b, left - a - b}};
    ssize_t n = rreadv(p.server, in, 3);
    ASSERT_GT(n, 0) << strerror(errno);
    got += static_cast<size_t>(n);
  }
  EXPECT_EQ(SIZE_MAX, check_pattern(dst.data(), dst.size(), 42));

  // rsendmsg / rrecvmsg, including MSG_PEEK honoured by rrecvmsg.
  uint8_t a1[5] = {'h', 'e', 'l', 'l', 'o'}, a2[1] = {' '}, a3[5] = {'w', 'o', 'r', 'l', 'd'};
  iovec mo[] = {{a1, 5}, {a2, 1}, {a3, 5}};
  msghdr m{};
  m.msg_iov = mo;
  m.msg_iovlen = 3;
  ASSERT_EQ(11, rsendmsg(p.server, &m, 0)) << strerror(errno);
  ASSERT_TRUE(wait_events(p.client, POLLIN) & POLLIN);
  char r1[2], r2[3], r3[4], r4[10];
  iovec mi[] = {{r1, 2}, {r2, 3}, {r3, 4}, {r4, 10}};
  msghdr mr{};
  mr.msg_iov = mi;
  mr.msg_iovlen = 4;
  // Wait until all 11 bytes are there.
  ssize_t n = 0;
  for (int i = 0; i < 1000 && n < 11; i++) {
    n = rrecvmsg(p.client, &mr, MSG_PEEK);
    ASSERT_GT(n, 0) << strerror(errno);
    if (n < 11) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(11, n);
  EXPECT_EQ(0, memcmp(r1, "he", 2));
  EXPECT_EQ(0, memcmp(r2, "llo", 3));
  EXPECT_EQ(0, memcmp(r3, " wor", 4));
  EXPECT_EQ(0, memcmp(r4, "ld", 2));
  memset(r1, 0, 2);
  memset(r2, 0, 3);
  memset(r3, 0, 4);
  memset(r4, 0, 10);
  ASSERT_EQ(11, rrecvmsg(p.client, &mr, 0)) << "MSG_PEEK consumed the data?";
  EXPECT_EQ(0, memcmp(r1, "he", 2));
  EXPECT_EQ(0, memcmp(r2, "llo", 3));
  EXPECT_EQ(0, memcmp(r3, " wor", 4));
  EXPECT_EQ(0, memcmp(r4, "ld", 2));
  EXPECT_EQ(-1, rrecvmsg(p.client, &mr, MSG_DONTWAIT));
  EXPECT_EQ(EAGAIN, errno);

  // rsendv is rwritev with flags: a large vector with many entries.
  std::vector<uint8_t> big(300000);
  fill_pattern(big.data(), big.size(), 43);
  std::vector<iovec> many;
  for (size_t off = 0; off < big.size();) {
    size_t k = std::min<size_t>(big.size() - off, 1 + (off * 31) % 7000);
    many.push_back({big.data() + off, k});
    off += k;
  }
  size_t sent = 0;
  std::thread t([&] {
    // A short count resends the rest (a stream may take part of a vector).
    size_t idx = 0, skip = 0;
    while (idx < many.size()) {
      std::vector<iovec> rest(many.begin() + idx, many.end());
      rest[0].iov_base = static_cast<uint8_t*>(rest[0].iov_base) + skip;
      rest[0].iov_len -= skip;
      int cnt = static_cast<int>(std::min<size_t>(rest.size(), 1024));
      ssize_t k = rwritev(p.client, rest.data(), cnt);
      if (k <= 0) return;
      sent += static_cast<size_t>(k);
      size_t adv = static_cast<size_t>(k) + skip;
      while (idx < many.size() && adv >= many[idx].iov_len) adv -= many[idx++].iov_len;
      skip = adv;
    }
  });
  std::vector<uint8_t> bigin(big.size());
  size_t r = recv_all(p.server, bigin.data(), bigin.size());
  t.join();
  EXPECT_EQ(big.size(), sent);
  ASSERT_EQ(big.size(), r);
  EXPECT_EQ(SIZE_MAX, check_pattern(bigin.data(), bigin.size(), 43));
}

TEST_P(DataTest, NonblockingEventLoopBothWays) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  ASSERT_EQ(0, rfcntl(p.client, F_SETFL, O_NONBLOCK));
  ASSERT_EQ(0, rfcntl(p.server, F_SETFL, O_NONBLOCK));
  constexpr size_t kLen = 6u << 20;
  struct Side {
    int fd;
    uint64_t out_seed, in_seed;
    size_t sent = 0, rcvd = 0, bad = SIZE_MAX;
    bool eof = false;
  } side[2] = {{p.client, 11, 22}, {p.server, 22, 11}};
  std::vector<uint8_t> buf(70000);
  int idle_rounds = 0;
  while (side[0].rcvd < kLen || side[1].rcvd < kLen) {
    pollfd fds[2];
    for (int i = 0; i < 2; i++) {
      fds[i].fd = side[i].fd;
      fds[i].events = POLLIN | (side[i].sent < kLen ? POLLOUT : 0);
      fds[i].revents = 0;
    }
    int n = rpoll(fds, 2, 10000);
    ASSERT_GE(n, 0) << strerror(errno);
    if (n == 0) {
      ASSERT_LT(++idle_rounds, 3) << "no progress for 30 s: sent " << side[0].sent << "/"
                                  << side[1].sent << " received " << side[0].rcvd << "/"
                                  << side[1].rcvd;
      continue;
    }
    for (int i = 0; i < 2; i++) {
      Side& s = side[i];
      ASSERT_FALSE(fds[i].revents & (POLLERR | POLLNVAL)) << "revents " << fds[i].revents;
      if ((fds[i].revents & POLLOUT) && s.sent < kLen) {
        size_t k = std::min<size_t>(kLen - s.sent, 1 + (s.sent * 13) % 60000);
        fill_pattern(buf.data(), k, s.out_seed, s.sent);
        ssize_t w = rsend(s.fd, buf.data(), k, 0);
        if (w < 0)
          ASSERT_EQ(EAGAIN, errno) << strerror(errno);
        else
          s.sent += static_cast<size_t>(w);
      }
      if (fds[i].revents & POLLIN) {
        ssize_t r = rrecv(s.fd, buf.data(), buf.size(), 0);
        if (r < 0) {
          ASSERT_EQ(EAGAIN, errno) << strerror(errno);
        } else {
          ASSERT_GT(r, 0) << "unexpected EOF";
          size_t b = check_pattern(buf.data(), static_cast<size_t>(r), s.in_seed, s.rcvd);
          if (b != SIZE_MAX && s.bad == SIZE_MAX) s.bad = s.rcvd + b;
          s.rcvd += static_cast<size_t>(r);
        }
      }
    }
  }
  EXPECT_EQ(kLen, side[0].sent);
  EXPECT_EQ(kLen, side[1].sent);
  EXPECT_EQ(SIZE_MAX, side[0].bad);
  EXPECT_EQ(SIZE_MAX, side[1].bad);
}

TEST_P(DataTest, SendBufferFillsEagainThenPollout) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  ASSERT_EQ(0, rfcntl(p.client, F_SETFL, O_NONBLOCK));
  std::vector<uint8_t> buf(65536);
  size_t sent = 0;
  bool full = false;
  while (sent < (512u << 20)) {
    fill_pattern(buf.data(), buf.size(), 3, sent);
    ssize_t n = rsend(p.client, buf.data(), buf.size(), 0);
    if (n < 0) {
      ASSERT_EQ(EAGAIN, errno) << strerror(errno);
      full = true;
      break;
    }
    ASSERT_GT(n, 0);
    sent += static_cast<size_t>(n);
  }
  ASSERT_TRUE(full) << "512 MiB went out to a peer that reads nothing";
  pollfd pf{p.client, POLLOUT, 0};
  // Room may come back between the two calls (the peer's engine takes in
  // what was in flight, as Linux's ACKs do); a POLLOUT is then true: the
  // next send takes something.
  if (rpoll(&pf, 1, 0) != 0) {
    ASSERT_TRUE(pf.revents & POLLOUT);
    fill_pattern(buf.data(), buf.size(), 3, sent);
    const ssize_t n = rsend(p.client, buf.data(), buf.size(), 0);
    ASSERT_GT(n, 0) << "POLLOUT on a socket whose send then gave " << strerror(errno);
    sent += static_cast<size_t>(n);
  }
  // The peer drains; the writer becomes writable again.
  std::vector<uint8_t> in(sent);
  size_t got = recv_all(p.server, in.data(), sent);
  ASSERT_EQ(sent, got);
  EXPECT_EQ(SIZE_MAX, check_pattern(in.data(), sent, 3));
  EXPECT_TRUE(wait_events(p.client, POLLOUT) & POLLOUT);
  EXPECT_EQ(2, rsend(p.client, "ok", 2, 0)) << strerror(errno);
}

TEST_P(DataTest, FullDuplexOneSocketTwoThreads) {
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p));
  // The server echoes everything on one thread per direction, through a
  // single rsocket; the client sends and receives on two threads.
  constexpr size_t kLen = 4u << 20;
  std::atomic<size_t> echoed{0}, progress{0};
  Result r;
  bool ok = run_watching_progress(
      {[&] {
         std::vector<uint8_t> b(50000);
         while (echoed < kLen) {
           ssize_t n = rrecv(p.server, b.data(), b.size(), 0);
           if (n <= 0) return;
           if (send_all(p.server, b.data(), static_cast<size_t>(n)) != static_cast<size_t>(n))
             return;
           echoed += static_cast<size_t>(n);
           progress += static_cast<size_t>(n);
         }
       },
       [&] { r.sent = send_pattern(p.client, kLen, 99, 30000, true, &r.send_err, &progress); },
       [&] {
         r.received =
             recv_pattern(p.client, kLen, 99, 40000, true, &r.bad_at, &r.recv_err, &progress);
       }},
      progress, kStallSeconds, [&] {
        rshutdown(p.client, SHUT_RDWR);
        rshutdown(p.server, SHUT_RDWR);
      });
  EXPECT_TRUE(ok) << "no progress for " << kStallSeconds << " s";
  expect_complete(r, kLen, "echo");
}

TEST_P(DataTest, EightSocketsEightThreads) {
  Listener l;
  ASSERT_NO_FATAL_FAILURE(make_listener(family(), &l));
  constexpr int kN = 8;
  constexpr size_t kLen = 2u << 20;
  // Servers: an acceptor starts one echo thread per connection.
  std::vector<RFd> servers(kN);
  std::vector<std::thread> echoes;
  std::atomic<int> accepted{0};
  std::atomic<bool> stop{false};
  std::thread acceptor([&] {
    while (accepted < kN && !stop) {
      if (!(wait_events(l.fd, POLLIN, 200) & POLLIN)) continue;
      int s = raccept(l.fd, nullptr, nullptr);
      if (s < 0) continue;
      int i = accepted;
      servers[i].reset(s);
      echoes.emplace_back([&, i] {
        std::vector<uint8_t> b(20000);
        for (;;) {
          ssize_t n = rrecv(servers[i], b.data(), b.size(), 0);
          if (n <= 0) return;
          if (send_all(servers[i], b.data(), static_cast<size_t>(n)) != static_cast<size_t>(n))
            return;
        }
      });
      accepted++;
    }
  });
  std::vector<Result> res(kN);
  std::vector<int> connect_err(kN, 0);
  std::vector<std::atomic<int>> client_fds(kN);
  for (auto& fd : client_fds) fd = -1;
  std::atomic<size_t> progress{0};
  std::vector<std::function<void()>> clients;
  for (int i = 0; i < kN; i++) {
    clients.emplace_back([&, i] {
      RFd c(rsocket(family(), SOCK_STREAM, 0));
      client_fds[i] = c;
      struct Forget {  // runs before c is closed
        std::atomic<int>& fd;
        ~Forget() { fd = -1; }
      } forget{client_fds[i]};
      if (c < 0 || rconnect(c, l.addr.sa(), l.addr.len) < 0) {
        connect_err[i] = errno ? errno : -1;
        return;
      }
      // Ping-pong in chunks: send one, read its echo.
      std::vector<uint8_t> out(16384), in(16384);
      size_t done = 0;
      while (done < kLen) {
        size_t k = std::min(out.size(), kLen - done);
        fill_pattern(out.data(), k, 500 + i, done);
        int e = 0;
        if (send_all(c, out.data(), k, &e) != k) {
          res[i].send_err = e;
          break;
        }
        res[i].sent += k;
        if (recv_all(c, in.data(), k, &e) != k) {
          res[i].recv_err = e;
          break;
        }
        size_t b = check_pattern(in.data(), k, 500 + i, done);
        if (b != SIZE_MAX && res[i].bad_at == SIZE_MAX) res[i].bad_at = done + b;
        res[i].received += k;
        progress += k;
        done += k;
      }
    });
  }
  // A stalled connection fails the test instead of hanging it: when no
  // byte moves for a while every socket is shut down, which releases the
  // blocked calls. The clients rclose at the end: the echo threads see EOF.
  bool ok = run_watching_progress(clients, progress, kStallSeconds, [&] {
    for (auto& s : servers)
      if (s.get() >= 0) rshutdown(s, SHUT_RDWR);
    for (auto& fd : client_fds)
      if (fd >= 0) rshutdown(fd, SHUT_RDWR);
  });
  EXPECT_TRUE(ok) << "connections stalled: no progress for " << kStallSeconds << " s";
  stop = true;
  acceptor.join();
  for (auto& t : echoes) t.join();
  for (int i = 0; i < kN; i++) {
    EXPECT_EQ(0, connect_err[i]) << "client " << i << ": " << strerror(connect_err[i]);
    expect_complete(res[i], kLen, "client " + std::to_string(i));
  }
  EXPECT_EQ(kN, accepted.load());
}

INSTANTIATE_TEST_SUITE_P(Providers, DataTest, ::testing::ValuesIn(all_params()), param_name);

}  // namespace
}  // namespace rsconf
