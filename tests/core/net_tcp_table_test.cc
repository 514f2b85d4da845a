// The stack's lookup table: connections by 4-tuple, listeners by address
// and port (wildcards per family), and where a segment goes, with
// TIME-WAIT reuse by a newer SYN.
#include <gtest/gtest.h>

#include <cerrno>
#include <vector>

#include "core/net/tcp/table.h"
#include "tests/core/tcp_room_sink.h"

namespace ss::net::tcp {
namespace {

using NullSink = RoomSink;  // what is sent is not looked at here

FourTuple tuple(const char* local, uint16_t lport, const char* remote, uint16_t rport) {
  FourTuple t;
  t.local = IpAddr::parse(local);
  t.remote = IpAddr::parse(remote);
  t.local_port = lport;
  t.remote_port = rport;
  return t;
}

Header seg(uint8_t flags, uint32_t seq, uint32_t ack) {
  Header h;
  h.flags = flags;
  h.seq = seq;
  h.ack = ack;
  h.window = 65535;
  return h;
}

TEST(TcpTable, ConnectionsByTuple) {
  Table table;
  NullSink sink;
  TimerQueue timers;
  Connection a(Config{}, 80, 1000, &sink, &timers), b(Config{}, 80, 1001, &sink, &timers);
  const FourTuple ta = tuple("10.0.0.1", 80, "10.0.0.2", 1000);
  const FourTuple tb = tuple("10.0.0.1", 80, "10.0.0.2", 1001);
  EXPECT_EQ(table.add(ta, &a), 0);
  EXPECT_EQ(table.add(tb, &b), 0);
  EXPECT_EQ(table.add(ta, &b), -EADDRINUSE);
  EXPECT_EQ(table.find(ta), &a);
  EXPECT_EQ(table.find(tb), &b);
  table.remove(ta);
  EXPECT_EQ(table.find(ta), nullptr);
  EXPECT_EQ(table.connections(), 1u);
}

TEST(TcpTable, ListenersExactThenWildcardOfTheFamily) {
  Table table;
  IsnGenerator isn;
  Listener any4(ListenerConfig{}, nullptr, &isn), one(ListenerConfig{}, nullptr, &isn);
  EXPECT_EQ(table.listen(IpAddr::parse("0.0.0.0"), 80, &any4), 0);
  EXPECT_EQ(table.listen(IpAddr::parse("10.0.0.1"), 80, &one), 0);
  EXPECT_EQ(table.listen(IpAddr::parse("10.0.0.1"), 80, &any4), -EADDRINUSE);
  EXPECT_EQ(table.listener_for(IpAddr::parse("10.0.0.1"), 80), &one);
  EXPECT_EQ(table.listener_for(IpAddr::parse("10.0.0.9"), 80), &any4);
  EXPECT_EQ(table.listener_for(IpAddr::parse("fd00::1"), 80), nullptr);
  EXPECT_EQ(table.listener_for(IpAddr::parse("10.0.0.1"), 81), nullptr);
  table.unlisten(IpAddr::parse("10.0.0.1"), 80);
  EXPECT_EQ(table.listener_for(IpAddr::parse("10.0.0.1"), 80), &any4);
}

TEST(TcpTable, RoutesAndReusesTimeWait) {
  Table table;
  IsnGenerator isn;
  NullSink sink;
  TimerQueue timers;
  Config cfg;
  cfg.timestamps = false;
  Connection c(cfg, 80, 1000, &sink, &timers);
  // Into TIME-WAIT: our SYN answered, our FIN acknowledged, the peer's FIN.
  c.connect(0, 0);
  c.input(seg(kSyn | kAck, 5000, 1), Options{}, {}, 10);
  c.close(20);
  c.input(seg(kAck, 5001, 2), Options{}, {}, 30);
  c.input(seg(kFin | kAck, 5001, 2), Options{}, {}, 40);
  ASSERT_EQ(c.state(), State::kTimeWait);

  const FourTuple t = tuple("10.0.0.1", 80, "10.0.0.2", 1000);
  Connection* conn = nullptr;
  Listener* listener = nullptr;
  EXPECT_EQ(table.route(t, seg(kSyn, 9000, 0), Options{}, &conn, &listener), Table::Route::kNone);
  Listener l(ListenerConfig{}, nullptr, &isn);
  ASSERT_EQ(table.listen(IpAddr::parse("0.0.0.0"), 80, &l), 0);
  EXPECT_EQ(table.route(t, seg(kSyn, 9000, 0), Options{}, &conn, &listener),
            Table::Route::kListener);
  EXPECT_EQ(listener, &l);
  ASSERT_EQ(table.add(t, &c), 0);
  EXPECT_EQ(table.route(t, seg(kAck, 5002, 2), Options{}, &conn, &listener),
            Table::Route::kConnection);
  EXPECT_EQ(conn, &c);
  // A SYN beyond what TIME-WAIT saw (rcv_nxt 5002) may take its place; an
  // older one is the old connection's.
  EXPECT_EQ(table.route(t, seg(kSyn, 9000, 0), Options{}, &conn, &listener), Table::Route::kReuse);
  EXPECT_EQ(table.route(t, seg(kSyn, 4000, 0), Options{}, &conn, &listener),
            Table::Route::kConnection);
}

}  // namespace
}  // namespace ss::net::tcp
