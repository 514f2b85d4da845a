// The listener's queues (SYN queue, accept queue, their bounds and
// drops), SYN cookies under a flood, its RSTs for stray segments, and
// RFC 6528's initial sequence numbers.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <vector>

#include "core/net/tcp/listener.h"
#include "tests/core/tcp_room_sink.h"

namespace ss::net::tcp {
namespace {

struct Sent {
  FourTuple t;
  Header h;
  Options o;
};

class Host : public ListenerHost {
 public:
  struct Sink : RoomSink {
    Host* host;
    FourTuple t;
    void sent(std::span<const uint8_t> seg) override {
      Header h;
      std::span<const uint8_t> data;
      ASSERT_EQ(parse_header(seg, &h, &data), HeaderVerdict::kOk);
      Options o;
      parse_options(h.options, h.flags & kSyn, &o);
      h.options = {};
      host->sent.push_back(Sent{t, h, o});
    }
  };
  std::unique_ptr<Connection> make_connection(const FourTuple& t, const Config& cfg) override {
    sinks.push_back(std::make_unique<Sink>());
    sinks.back()->host = this;
    sinks.back()->t = t;
    return std::make_unique<Connection>(cfg, t.local_port, t.remote_port, sinks.back().get(),
                                        &timers);
  }
  void send_stateless(const FourTuple& t, const Header& h, const Options& o) override {
    sent.push_back(Sent{t, h, o});
  }
  TimerQueue timers;
  std::vector<std::unique_ptr<Sink>> sinks;
  std::vector<Sent> sent;
};

FourTuple client(uint16_t port) {
  FourTuple t;
  in_addr a{}, b{};
  inet_pton(AF_INET, "10.0.0.1", &a);
  inet_pton(AF_INET, "10.0.0.2", &b);
  t.local = IpAddr::v4(a);
  t.remote = IpAddr::v4(b);
  t.local_port = 80;
  t.remote_port = port;
  return t;
}

Header segment(const FourTuple& t, uint8_t flags, uint32_t seq, uint32_t ack) {
  Header h;
  h.src_port = t.remote_port;
  h.dst_port = t.local_port;
  h.flags = flags;
  h.seq = seq;
  h.ack = ack;
  h.window = 65535;
  return h;
}

class TcpListener : public testing::Test {
 protected:
  void make(size_t backlog, size_t syn_backlog, int syncookies = 0, uint32_t max_syn_rate = 0) {
    ListenerConfig cfg;
    cfg.max_syn_rate = max_syn_rate;
    cfg.backlog = backlog;
    cfg.syn_backlog = syn_backlog;
    cfg.syncookies = syncookies;
    cfg.conn.synack_retries = 1;
    l = std::make_unique<Listener>(cfg, &host, &isn);
  }
  void syn(uint16_t port, uint64_t now = 0, const Options& o = {}) {
    l->input(client(port), segment(client(port), kSyn, 1000, 0), o, {}, now);
  }
  // A copy: later sends may move the vector.
  Sent last_to(uint16_t port) {
    for (auto it = host.sent.rbegin(); it != host.sent.rend(); ++it) {
      if (it->t.remote_port == port) return *it;
    }
    ADD_FAILURE() << "nothing sent to " << port;
    return Sent{};
  }
  // The SYN-ACK this client got last.
  uint32_t synack_seq(uint16_t port) {
    for (auto it = host.sent.rbegin(); it != host.sent.rend(); ++it) {
      if (it->t.remote_port == port && it->h.flags == (kSyn | kAck)) return it->h.seq;
    }
    ADD_FAILURE() << "no SYN-ACK to " << port;
    return 0;
  }
  void ack(uint16_t port, uint64_t now = 0) {
    l->input(client(port), segment(client(port), kAck, 1001, synack_seq(port) + 1), Options{}, {},
             now);
  }
  IsnGenerator isn;
  Host host;
  std::unique_ptr<Listener> l;
};

// A listening socket that closes resets what it holds: a handshake under
// way and a connection not yet accepted each get a RST (as Linux).
TEST_F(TcpListener, ClosingResetsHandshakesAndUnacceptedConnections) {
  make(8, 8);
  syn(2001);
  syn(2002);
  ack(2002);
  ASSERT_EQ(l->syn_queue(), 1u);
  ASSERT_EQ(l->accept_queue(), 1u);
  l->abort_all(1000);
  EXPECT_EQ(l->syn_queue(), 0u);
  EXPECT_EQ(l->accept_queue(), 0u);
  for (uint16_t p : {2001, 2002}) EXPECT_TRUE(last_to(p).h.flags & kRst) << p;
}

// VMA_TCP_MAX_SYN_RATE: new SYNs beyond the rate in one second are
// dropped and counted; the next second takes more.
TEST_F(TcpListener, SynsBeyondTheRateAreDroppedUntilTheNextSecond) {
  make(64, 64, 0, 3);
  for (uint16_t p = 3001; p <= 3005; p++) syn(p, 2'100'000);
  EXPECT_EQ(l->syn_queue(), 3u);
  EXPECT_EQ(l->counters().syn_rate_drops, 2u);
  syn(3004, 2'999'999);
  EXPECT_EQ(l->syn_queue(), 3u);
  syn(3004, 3'000'000);
  syn(3005, 3'000'001);
  EXPECT_EQ(l->syn_queue(), 5u);
  EXPECT_EQ(l->counters().syn_rate_drops, 3u);
}

TEST_F(TcpListener, AcceptsInTheOrderHandshakesComplete) {
  make(8, 8);
  for (uint16_t p : {1001, 1002, 1003}) syn(p);
  EXPECT_EQ(l->syn_queue(), 3u);
  EXPECT_EQ(host.sent.size(), 3u);  // three SYN-ACKs
  ack(1002);
  ack(1001);
  EXPECT_EQ(l->accept_queue(), 2u);
  FourTuple t;
  auto c = l->accept(&t);
  ASSERT_TRUE(c);
  EXPECT_EQ(t.remote_port, 1002);
  EXPECT_EQ(c->state(), State::kEstablished);
  c = l->accept(&t);
  ASSERT_TRUE(c);
  EXPECT_EQ(t.remote_port, 1001);
  EXPECT_FALSE(l->accept(&t));
  EXPECT_EQ(l->counters().handshakes, 2u);
  EXPECT_EQ(l->syn_queue(), 1u);
}

// An option set on the listening socket after listen reaches the
// handshakes that start afterwards (SO_RCVBUF: the SYN-ACK's window).
TEST_F(TcpListener, AnOptionSetAfterListenReachesLaterHandshakes) {
  make(8, 8);
  syn(1001);
  l->set_option(Option::kRcvBuf, 3000);
  syn(1002);
  EXPECT_EQ(last_to(1001).h.window, 65535);  // the default's, capped by the field
  EXPECT_EQ(last_to(1002).h.window, 3000);
}

TEST_F(TcpListener, ARepeatedSynGetsTheSameSynAck) {
  make(8, 8);
  syn(1001);
  const uint32_t first = synack_seq(1001);
  syn(1001);
  EXPECT_EQ(l->syn_queue(), 1u);
  EXPECT_EQ(synack_seq(1001), first);
  EXPECT_EQ(host.sent.size(), 2u);
}

TEST_F(TcpListener, AFullSynQueueDropsAndCounts) {
  make(8, 4);
  for (uint16_t p = 1001; p <= 1006; p++) syn(p);
  EXPECT_EQ(l->syn_queue(), 4u);
  EXPECT_EQ(host.sent.size(), 4u);
  EXPECT_EQ(l->counters().syn_queue_overflows, 2u);
  EXPECT_EQ(l->counters().syns, 6u);
}

TEST_F(TcpListener, AFullAcceptQueueDropsTheLastAckUntilAccepted) {
  make(1, 8);
  syn(1001);
  syn(1002);
  ack(1001);
  ack(1002);  // no room: dropped, the client sends it again
  EXPECT_EQ(l->accept_queue(), 1u);
  EXPECT_EQ(l->syn_queue(), 1u);
  EXPECT_EQ(l->counters().accept_queue_overflows, 1u);
  syn(1003);  // and new SYNs wait too
  EXPECT_EQ(l->counters().accept_queue_overflows, 2u);
  FourTuple t;
  ASSERT_TRUE(l->accept(&t));
  ack(1002);
  ASSERT_TRUE(l->accept(&t));
  EXPECT_EQ(t.remote_port, 1002);
}

TEST_F(TcpListener, AStrayAckGetsAResetAndARstNothing) {
  make(8, 8);
  const FourTuple t = client(2000);
  l->input(t, segment(t, kAck, 5, 777), Options{}, {}, 0);
  ASSERT_EQ(host.sent.size(), 1u);
  EXPECT_EQ(host.sent[0].h.flags, kRst);
  EXPECT_EQ(host.sent[0].h.seq, 777u);
  l->input(t, segment(t, kRst, 5, 0), Options{}, {}, 0);
  l->input(t, segment(t, kFin, 5, 0), Options{}, {}, 0);  // neither SYN nor ACK: dropped
  EXPECT_EQ(host.sent.size(), 1u);
  EXPECT_EQ(l->counters().resets_sent, 1u);
  EXPECT_EQ(l->syn_queue(), 0u);
}

TEST_F(TcpListener, AnUnansweredSynAckLeavesTheQueue) {
  make(8, 8);
  syn(1001);
  // synack_retries 1: again after 1 s, given up 2 s later.
  for (uint64_t now = 0; now <= 4'000'000; now += 100'000) {
    while (auto* timer = static_cast<ConnectionTimer*>(host.timers.pop_due(now))) {
      timer->conn->on_timer(timer, now);
    }
    l->settle();
  }
  EXPECT_EQ(l->syn_queue(), 0u);
  EXPECT_EQ(l->counters().failed_handshakes, 1u);
  EXPECT_EQ(host.sent.size(), 2u);  // the SYN-ACK and its one retransmission
}

Options full_syn_options() {
  Options o;
  o.has_mss = true;
  o.mss = 1460;
  o.has_wscale = true;
  o.wscale = 7;
  o.sack_permitted = true;
  o.has_ts = true;
  o.ts_val = 5000;
  return o;
}

TEST_F(TcpListener, AFloodGetsCookiesWhoseAcksConnect) {
  make(8, 2, 1);
  for (uint16_t p = 1001; p <= 1005; p++) syn(p, 1'000'000, full_syn_options());
  EXPECT_EQ(l->syn_queue(), 2u);
  EXPECT_EQ(l->counters().cookies_sent, 3u);
  EXPECT_EQ(l->counters().syn_queue_overflows, 3u);
  const Sent sa = last_to(1005);
  ASSERT_EQ(sa.h.flags, kSyn | kAck);
  EXPECT_TRUE(sa.o.has_wscale);
  EXPECT_TRUE(sa.o.sack_permitted);
  ASSERT_TRUE(sa.o.has_ts);
  EXPECT_EQ(sa.o.ts_ecr, 5000u);
  EXPECT_LE(sa.o.ts_val, 1000u);  // no later than our clock (1 s, ts_offset 0)
  // The handshake's ACK, echoing the cookie's timestamp, 3 s later.
  Header a = segment(client(1005), kAck, 1001, sa.h.seq + 1);
  a.window = 100;
  Options ao;
  ao.has_ts = true;
  ao.ts_val = 5003;
  ao.ts_ecr = sa.o.ts_val;
  l->input(client(1005), a, ao, {}, 4'000'000);
  EXPECT_EQ(l->counters().cookies_ok, 1u);
  FourTuple t;
  auto c = l->accept(&t);
  ASSERT_TRUE(c);
  EXPECT_EQ(t.remote_port, 1005);
  EXPECT_EQ(c->state(), State::kEstablished);
  EXPECT_EQ(c->mss(), 1460u - 12);     // the MSS and timestamps came back
  EXPECT_EQ(c->snd_wnd(), 100u << 7);  // and the peer's window scale
  EXPECT_EQ(c->peer_mss(), 1460u);
}

TEST_F(TcpListener, AForgedOrExpiredCookieGetsAReset) {
  make(8, 0, 1);  // no SYN queue: every SYN gets a cookie
  syn(1001, 0, full_syn_options());
  const Sent sa = last_to(1001);
  Options ao;
  ao.has_ts = true;
  ao.ts_val = 5001;
  ao.ts_ecr = sa.o.ts_val;
  const FourTuple t = client(1001);
  // Forged (a guess off by much: a cookie's neighbours decode to other
  // MSS values, as Linux's do; an off-path guess is 12 in 2^24).
  l->input(t, segment(t, kAck, 1001, sa.h.seq + 1 + 0x5a5a5a), ao, {}, 1000);
  l->input(t, segment(t, kAck, 1001, sa.h.seq + 1), ao, {}, 200'000'000);  // three slots on
  l->input(t, segment(t, kAck, 1001, sa.h.seq + 1), Options{}, {}, 1000);  // the echo dropped
  EXPECT_EQ(l->counters().cookies_bad, 3u);
  EXPECT_EQ(l->counters().resets_sent, 3u);
  EXPECT_EQ(l->accept_queue(), 0u);
  l->input(t, segment(t, kAck, 1001, sa.h.seq + 1), ao, {}, 100'000'000);  // the next slot
  EXPECT_EQ(l->counters().cookies_ok, 1u);
  EXPECT_EQ(l->accept_queue(), 1u);
}

// The ACK of a handshake whose SYN-ACK another listener of the process
// sent (a port's group changed meanwhile), also in a fork child made
// after that SYN-ACK: the cookie is good there too.
TEST_F(TcpListener, AnotherListenerOfTheProcessOrAForkChildTakesTheCookie) {
  make(8, 0, 1);
  syn(1001, 0, full_syn_options());
  const Sent sa = last_to(1001);
  const FourTuple t = client(1001);
  Options ao;
  ao.has_ts = true;
  ao.ts_val = 5001;
  ao.ts_ecr = sa.o.ts_val;
  const Header a = segment(t, kAck, 1001, sa.h.seq + 1);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // a new listener there, as a joining worker's
    Host h;
    ListenerConfig cfg;
    cfg.syncookies = 1;
    Listener other(cfg, &h, &isn);
    other.input(t, a, ao, {}, 1000);
    _exit(other.counters().cookies_ok == 1 && other.accept_queue() == 1 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the fork child's listener refused it";
  Host h;
  ListenerConfig cfg;
  cfg.syncookies = 1;
  Listener other(cfg, &h, &isn);
  other.input(t, a, ao, {}, 1000);
  EXPECT_EQ(other.counters().cookies_ok, 1u);
  EXPECT_EQ(other.accept_queue(), 1u);
  EXPECT_EQ(other.counters().resets_sent, 0u);
}

TEST_F(TcpListener, WithoutTimestampsACookieOffersOnlyTheMss) {
  make(8, 0, 1);
  Options o = full_syn_options();
  o.has_ts = false;
  o.mss = 1400;  // taken down to the table's 1360
  syn(1001, 0, o);
  const Sent sa = last_to(1001);
  EXPECT_TRUE(sa.o.has_mss);
  EXPECT_FALSE(sa.o.has_wscale);
  EXPECT_FALSE(sa.o.sack_permitted);
  EXPECT_FALSE(sa.o.has_ts);
  Header a = segment(client(1001), kAck, 1001, sa.h.seq + 1);
  a.window = 100;
  l->input(client(1001), a, Options{}, {}, 1000);
  FourTuple t;
  auto c = l->accept(&t);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->mss(), 1360u);
  EXPECT_EQ(c->snd_wnd(), 100u);  // unscaled
}

TEST_F(TcpListener, CookiesOffMeansDropsOnly) {
  make(8, 1, 0);
  syn(1001);
  syn(1002);
  EXPECT_EQ(l->counters().cookies_sent, 0u);
  EXPECT_EQ(l->counters().syn_queue_overflows, 1u);
  EXPECT_EQ(host.sent.size(), 1u);
}

TEST(TcpResetReply, AnswersAsRfc9293Says) {
  Header h, rst;
  h.src_port = 5;
  h.dst_port = 6;
  h.flags = kSyn;
  h.seq = 100;
  ASSERT_TRUE(reset_reply(h, 0, &rst));
  EXPECT_EQ(rst.flags, kRst | kAck);
  EXPECT_EQ(rst.seq, 0u);
  EXPECT_EQ(rst.ack, 101u);
  EXPECT_EQ(rst.src_port, 6);
  h.flags = kAck | kPsh;
  h.ack = 4242;
  ASSERT_TRUE(reset_reply(h, 10, &rst));
  EXPECT_EQ(rst.flags, kRst);
  EXPECT_EQ(rst.seq, 4242u);
  h.flags = kRst;
  EXPECT_FALSE(reset_reply(h, 0, &rst));
}

TEST(TcpIsn, FollowsAClockPerTupleAndDiffersAcrossTuples) {
  IsnGenerator g, other;
  const FourTuple a = client(1001), b = client(1002);
  EXPECT_EQ(g.isn(a, 4000) - g.isn(a, 0), 1000u);  // a 4 µs tick
  EXPECT_NE(g.isn(a, 0), g.isn(b, 0));
  EXPECT_NE(g.isn(a, 0), other.isn(a, 0));  // another key
}

}  // namespace
}  // namespace ss::net::tcp
