// Connection::handover: what another TCP needs to carry an established
// connection on (handover.h), taken on the fake wire (tcp_wire.h).
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <cstring>
#include <vector>

#include "core/net/checksum.h"
#include "core/net/tcp/handover.h"
#include "core/net/tcp/header.h"
#include "core/net/tcp/options.h"
#include "tests/core/tcp_wire.h"

namespace ss::net::tcp {
namespace {

// Side 0 sends 3000 bytes side 1 does not read; side 1 sends 200 bytes
// whose segments are all lost (its SYN-ACK and ACKs get through).
TEST(TcpHandover, CarriesUnreadUnackedAndWindows) {
  wire::Faults f;
  bool b_sending = false;
  f.drop_rule = [&](int side, uint64_t) { return side == 1 && b_sending; };
  wire::Wire w({}, {}, f);
  Connection& a = w.end(0);
  Connection& b = w.end(1);
  Handover early;
  EXPECT_EQ(a.handover(&early, 0), -EOPNOTSUPP);  // not open yet
  a.connect(1000, 0);
  std::vector<uint8_t> out(3000), back(200);
  for (size_t i = 0; i < out.size(); i++) out[i] = static_cast<uint8_t>(i * 7);
  for (size_t i = 0; i < back.size(); i++) back[i] = static_cast<uint8_t>(i * 3 + 1);
  size_t sent = 0;
  w.run(2'000'000, [&] {
    if (a.state() == State::kEstablished && sent < out.size()) {
      const ssize_t n = a.send({out.data() + sent, out.size() - sent}, w.now());
      if (n > 0) sent += static_cast<size_t>(n);
    }
    return !(sent == out.size() && b.info().unacked == 0 && a.info().unacked == 0 &&
             b.state() == State::kEstablished);
  });
  ASSERT_EQ(b.state(), State::kEstablished);
  b_sending = true;
  ASSERT_EQ(b.send(back, w.now()), 200);
  Handover h;
  ASSERT_EQ(b.handover(&h, w.now()), 0);
  EXPECT_EQ(h.unread, out);
  EXPECT_EQ(h.rcv_nxt, 1001u + 3000u);  // after a's SYN (ISS 1000) and its data
  EXPECT_EQ(h.sent.size() + h.unsent.size(), 200u);
  std::vector<uint8_t> all = h.sent;
  all.insert(all.end(), h.unsent.begin(), h.unsent.end());
  EXPECT_EQ(all, back);
  EXPECT_EQ(h.snd_wnd, a.rcv_wnd());
  EXPECT_EQ(h.rcv_wup + h.rcv_wnd, h.rcv_nxt + b.rcv_wnd());  // the right edge advertised
  EXPECT_EQ(h.peer_mss, b.peer_mss());
  EXPECT_TRUE(h.sack && h.window_scaling);
  // Taking it changes nothing: the data is still there to read.
  std::vector<uint8_t> got(4000);
  EXPECT_EQ(b.recv(got, false, w.now()), 3000);
  // Closed, nothing to hand over.
  b.abort(w.now());
  EXPECT_EQ(b.handover(&h, w.now()), -EOPNOTSUPP);
}

// local:80 and remote:40000, both IPv4 or both IPv6.
FourTuple tuple_of(const char* local, const char* remote) {
  FourTuple t;
  IpAddr* ends[2] = {&t.local, &t.remote};
  const char* names[2] = {local, remote};
  for (int i = 0; i < 2; i++) {
    ends[i]->family = strchr(names[i], ':') ? AF_INET6 : AF_INET;
    inet_pton(ends[i]->family, names[i], ends[i]->bytes);
  }
  t.local_port = 80;
  t.remote_port = 40000;
  return t;
}

// The peer's packet as Linux's receive path checks it: IP header (IPv4's
// checksum), from t.remote to t.local, the TCP checksum, its FIN at
// h.rcv_nxt acknowledging h.snd_una, or its ACK of our FIN (after its
// FIN, if any), the peer's window and timestamp.
void expect_close_packet(const FourTuple& t, const Handover& h, PeerClose what) {
  const std::vector<uint8_t> p = peer_close_packet(t, h, what);
  const bool v6 = t.local.family == AF_INET6;
  const size_t ip = v6 ? 40 : 20;
  ASSERT_GT(p.size(), ip + kHeaderLen);
  EXPECT_EQ(p[0] >> 4, v6 ? 6 : 4);
  EXPECT_EQ(p[v6 ? 6 : 9], kIpProtoTcp);
  const uint8_t* src = p.data() + (v6 ? 8 : 12);
  const uint8_t* dst = p.data() + (v6 ? 24 : 16);
  EXPECT_EQ(memcmp(src, t.remote.bytes, t.remote.size()), 0);
  EXPECT_EQ(memcmp(dst, t.local.bytes, t.local.size()), 0);
  if (!v6) {
    Checksum c;
    c.add(p.data(), 20);
    EXPECT_EQ(c.sum(), 0xffff) << "the IPv4 header's checksum";
  }
  const std::span<const uint8_t> seg(p.data() + ip, p.size() - ip);
  EXPECT_TRUE(checksum_ok(v6 ? 6 : 4, src, dst, seg));
  Header th;
  std::span<const uint8_t> data;
  ASSERT_EQ(parse_header(seg, &th, &data), HeaderVerdict::kOk);
  const bool fin = what == PeerClose::kFin;
  EXPECT_EQ(th.flags, fin ? kFin | kAck : kAck);
  EXPECT_EQ(th.seq, h.rcv_nxt + (!fin && h.fin ? 1u : 0u));
  EXPECT_EQ(th.ack, h.snd_una + (fin ? 0u : 1u));
  EXPECT_EQ(th.src_port, t.remote_port);
  EXPECT_EQ(th.dst_port, t.local_port);
  EXPECT_EQ(uint32_t{th.window} << h.snd_wscale, h.snd_wnd & ~((1u << h.snd_wscale) - 1));
  EXPECT_TRUE(data.empty());
  Options o;
  ASSERT_EQ(parse_options(th.options, false, &o), OptionsVerdict::kOk);
  EXPECT_EQ(o.has_ts, h.timestamps);
  EXPECT_EQ(o.ts_val, h.ts_recent);
}

// Side 0 connects to side 1 (ISS 1000); true once both are ESTABLISHED
// and nothing is in flight.
bool open_quiet(wire::Wire& w) {
  w.end(0).connect(1000, 0);
  w.run(2'000'000,
        [&] { return w.end(1).state() != State::kEstablished || w.end(0).info().unacked != 0; });
  return w.end(1).state() == State::kEstablished;
}

// Side 0 sends 100 bytes and closes; side 1, in CLOSE-WAIT with them
// unread, hands over the connection up to the FIN's number, and the FIN
// as a packet from its peer.
TEST(TcpHandover, CloseWaitCarriesThePeersFinAsAPacket) {
  wire::Wire w({}, {}, {});
  Connection& a = w.end(0);
  Connection& b = w.end(1);
  a.connect(1000, 0);
  std::vector<uint8_t> out(100, 0x42);
  bool closed = false;
  w.run(2'000'000, [&] {
    if (a.state() == State::kEstablished && !closed) {
      EXPECT_EQ(a.send(out, w.now()), 100);
      a.close(w.now());
      closed = true;
    }
    return b.state() != State::kCloseWait || a.state() != State::kFinWait2;
  });
  ASSERT_EQ(b.state(), State::kCloseWait);
  Handover h;
  ASSERT_EQ(b.handover(&h, w.now()), 0);
  EXPECT_TRUE(h.fin);
  EXPECT_EQ(h.rcv_nxt, 1001u + 100u);  // the FIN's own number
  EXPECT_EQ(h.unread, out);
  EXPECT_EQ(h.rcv_wup + h.rcv_wnd, h.rcv_nxt + 1 + b.rcv_wnd());  // the right edge advertised
  EXPECT_TRUE(h.timestamps);
  EXPECT_NE(h.ts_recent, 0u);
  FourTuple t = tuple_of("10.0.0.1", "10.0.0.2");
  EXPECT_FALSE(h.fin_sent || h.fin_acked || h.ours_first);
  expect_close_packet(t, h, PeerClose::kFin);
  t = tuple_of("fd00::1", "fd00::2");
  expect_close_packet(t, h, PeerClose::kFin);
  EXPECT_TRUE(peer_close_packet(t, h, PeerClose::kAckOfOurs).empty());  // ours did not go
  // No FIN, no packet.
  h.fin = false;
  EXPECT_TRUE(peer_close_packet(t, h, PeerClose::kFin).empty());
}

// Side 1 sends 3000 bytes, the last 1000 lost, and shuts its side: in
// FIN-WAIT-1 it hands over the numbers up to its FIN, the lost bytes as
// sent, and says the FIN went; once everything is acknowledged
// (FIN-WAIT-2) the numbers still stop before the FIN, and the peer's
// packet acknowledges it. After side 0's FIN (TIME-WAIT, and once it
// ended) the peer's FIN comes first, then that ACK.
TEST(TcpHandover, OwnFinStaysTheOtherTcpsToSend) {
  wire::Faults f;
  bool lose = false;
  f.drop_rule = [&](int side, uint64_t) { return side == 1 && lose; };
  wire::Wire w({}, {}, f);
  Connection& a = w.end(0);
  Connection& b = w.end(1);
  const FourTuple t = tuple_of("10.0.0.2", "10.0.0.1");
  ASSERT_TRUE(open_quiet(w));
  std::vector<uint8_t> out(3000);
  for (size_t i = 0; i < out.size(); i++) out[i] = static_cast<uint8_t>(i * 5);
  ASSERT_EQ(b.send({out.data(), 2000}, w.now()), 2000);
  w.run(2'000'000, [&] { return b.info().unacked != 0; });
  lose = true;
  ASSERT_EQ(b.send({out.data() + 2000, 1000}, w.now()), 1000);
  b.shutdown_write(w.now());
  ASSERT_EQ(b.state(), State::kFinWait1);
  Handover seen;  // a's: where b's bytes stand (the first 2000 came)
  ASSERT_EQ(a.handover(&seen, w.now()), 0);
  Handover h;
  ASSERT_EQ(b.handover(&h, w.now()), 0);
  EXPECT_TRUE(h.fin_sent);  // the FIN went (and was lost)
  EXPECT_FALSE(h.fin || h.fin_queued || h.fin_acked || h.ours_first);
  for (PeerClose what : {PeerClose::kFin, PeerClose::kAckOfOurs})  // nothing past the data
    EXPECT_TRUE(peer_close_packet(t, h, what).empty());
  EXPECT_EQ(h.snd_una, seen.rcv_nxt);
  EXPECT_EQ(h.sent, std::vector<uint8_t>(out.begin() + 2000, out.end()));
  EXPECT_TRUE(h.unsent.empty());
  lose = false;
  w.run(4'000'000, [&] { return b.state() != State::kFinWait2; });
  ASSERT_EQ(b.state(), State::kFinWait2);
  ASSERT_EQ(b.handover(&h, w.now()), 0);
  EXPECT_TRUE(h.fin_sent && h.fin_acked);
  EXPECT_FALSE(h.fin || h.ours_first);
  EXPECT_EQ(h.snd_una, seen.rcv_nxt + 1000);  // before the acknowledged FIN
  EXPECT_TRUE(h.sent.empty() && h.unsent.empty());
  expect_close_packet(t, h, PeerClose::kAckOfOurs);
  EXPECT_TRUE(peer_close_packet(t, h, PeerClose::kFin).empty());
  a.shutdown_write(w.now());
  w.run(2'000'000, [&] { return b.state() != State::kTimeWait; });
  ASSERT_EQ(b.state(), State::kTimeWait);
  Handover tw;
  ASSERT_EQ(b.handover(&tw, w.now()), 0);
  EXPECT_TRUE(tw.fin && tw.fin_sent && tw.fin_acked);
  EXPECT_FALSE(tw.ours_first);  // the other TCP takes a's FIN, ours, then a's ACK of ours
  EXPECT_EQ(tw.snd_una, h.snd_una);
  EXPECT_EQ(tw.rcv_nxt, h.rcv_nxt);  // a's FIN's own number
  EXPECT_TRUE(tw.sent.empty() && tw.unsent.empty() && tw.unread.empty());
  for (const FourTuple& each : {t, tuple_of("fd00::2", "fd00::1")}) {
    expect_close_packet(each, tw, PeerClose::kFin);
    expect_close_packet(each, tw, PeerClose::kAckOfOurs);
  }
  // Its end (the timer here; a RST does the same) while the program
  // holds it: handed over as TIME-WAIT was.
  w.run(300'000'000, [&] { return b.state() != State::kClosed; });
  ASSERT_EQ(b.state(), State::kClosed);
  Handover ended;
  ASSERT_EQ(b.handover(&ended, w.now()), 0);
  EXPECT_TRUE(ended.fin && ended.fin_sent && ended.fin_acked && !ended.ours_first);
  EXPECT_EQ(ended.snd_una, tw.snd_una);
  EXPECT_EQ(ended.rcv_nxt, tw.rcv_nxt);
}

// Side 1 sends more than side 0's window takes (side 0 reads nothing)
// and shuts its side: its FIN waits behind the bytes. Side 0's FIN then
// makes it CLOSING with its own not sent: the other TCP takes the peer's
// FIN first (ours_first is false) and sends ours after the bytes. Once
// ours went, ours comes first.
TEST(TcpHandover, ClosingSaysWhetherOursWent) {
  wire::Wire w({}, {}, {});
  Connection& a = w.end(0);
  Connection& b = w.end(1);
  ASSERT_TRUE(open_quiet(w));
  std::vector<uint8_t> out(64 * 1024, 0x5a);
  size_t queued = 0;
  w.run(4'000'000, [&] {
    const ssize_t n = b.send(out, w.now());
    if (n > 0) queued += static_cast<size_t>(n);
    return n > 0 || b.info().unacked == 0;  // until the send queue is full and a's window shut
  });
  ASSERT_GT(queued, 0u);
  b.shutdown_write(w.now());
  a.shutdown_write(w.now());
  w.run(1'000'000, [&] { return b.state() != State::kClosing; });
  ASSERT_EQ(b.state(), State::kClosing);
  Handover h;
  ASSERT_EQ(b.handover(&h, w.now()), 0);
  EXPECT_TRUE(h.fin && h.fin_queued);
  EXPECT_FALSE(h.fin_sent || h.fin_acked || h.ours_first);
  EXPECT_FALSE(h.unsent.empty());  // the bytes the window did not take, ours after them
  // a reads: the window opens, b's bytes and FIN go, ours is first now.
  std::vector<uint8_t> sink(1 << 20);
  w.run(8'000'000, [&] {
    while (a.recv(sink, false, w.now()) > 0) {
    }
    return b.state() == State::kClosing && !b.handover(&h, w.now()) && !h.fin_sent;
  });
  ASSERT_EQ(b.handover(&h, w.now()), 0);
  if (b.state() == State::kClosing) {
    EXPECT_TRUE(h.fin_sent && h.ours_first);
    EXPECT_TRUE(h.unsent.empty());
  } else {  // a acknowledged it meanwhile: TIME-WAIT
    EXPECT_EQ(b.state(), State::kTimeWait);
    EXPECT_TRUE(h.fin_acked && !h.ours_first);
  }
}

}  // namespace
}  // namespace ss::net::tcp
