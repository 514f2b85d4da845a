// The listener's queues (SYN queue, accept queue, their bounds and
// drops), its RSTs for stray segments, and RFC 6528's initial sequence
// numbers.
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <memory>
#include <vector>

#include "core/net/tcp/listener.h"

namespace ss::net::tcp {
namespace {

struct Sent {
  FourTuple t;
  Header h;
};

class Host : public ListenerHost {
 public:
  struct Sink : SegmentSink {
    Host* host;
    FourTuple t;
    std::vector<uint8_t> room;
    std::span<uint8_t> segment_room(size_t len) override {
      room.assign(len, 0);
      return room;
    }
    void send_segment(size_t len) override {
      Header h;
      std::span<const uint8_t> data;
      ASSERT_EQ(parse_header({room.data(), len}, &h, &data), HeaderVerdict::kOk);
      host->sent.push_back(Sent{t, h});
    }
  };
  std::unique_ptr<Connection> make_connection(const FourTuple& t, const Config& cfg) override {
    sinks.push_back(std::make_unique<Sink>());
    sinks.back()->host = this;
    sinks.back()->t = t;
    return std::make_unique<Connection>(cfg, t.local_port, t.remote_port, sinks.back().get(),
                                        &timers);
  }
  void send_reset(const FourTuple& t, const Header& rst) override {
    sent.push_back(Sent{t, rst});
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
  void make(size_t backlog, size_t syn_backlog) {
    ListenerConfig cfg;
    cfg.backlog = backlog;
    cfg.syn_backlog = syn_backlog;
    cfg.conn.synack_retries = 1;
    l = std::make_unique<Listener>(cfg, &host, &isn);
  }
  void syn(uint16_t port, uint64_t now = 0) {
    l->input(client(port), segment(client(port), kSyn, 1000, 0), Options{}, {}, now);
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
