// Connection::handover: what another TCP needs to carry an established
// connection on (handover.h), taken on the fake wire (tcp_wire.h).
#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <cstring>
#include <vector>

#include "core/net/checksum.h"
#include "core/net/tcp/handover.h"
#include "core/net/tcp/handover_codec.h"
#include "core/net/tcp/header.h"
#include "core/net/tcp/options.h"
#include "tests/core/tcp_room_sink.h"
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

uint8_t pattern(uint64_t k, int dir) {
  return static_cast<uint8_t>(((k + dir * 12345u) * 2654435761u) >> 13);
}

// Both ends send (2 MB and 1 MB) under 1% loss and reordering, then
// half-close; each is handed over mid-stream (data unread, sent and not
// acknowledged) to a new connection that carries it on (restore): every
// byte arrives once and in order both ways, both see the end of stream,
// and the closes finish.
TEST(TcpHandover, ACarriedOnConnectionLosesNothingBothWays) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE(seed);
    wire::Faults f;
    f.drop = 0.01;
    f.reorder = 0.01;
    f.seed = seed;
    wire::Wire w({}, {}, f);
    const uint64_t total[2] = {2 << 20, 1 << 20};
    uint64_t sent[2] = {}, got[2] = {};  // got[i]: what side i received
    bool intact = true, eof[2] = {}, shut[2] = {}, closed[2] = {}, handed[2] = {};
    int err[2] = {-1, -1};
    size_t readable_at_hand = 0, unacked_at_hand[2] = {};
    std::vector<uint8_t> buf(65536);
    w.end(0).connect(1000, 0);
    w.run(600'000'000, [&] {
      for (int i = 0; i < 2; i++) {
        if (w.end(i).state() == State::kClosed && !closed[i]) continue;  // side 1 before the SYN
        if (!handed[i] && got[i] >= total[1 - i] / 3 && sent[i] >= total[i] / 3) {
          readable_at_hand += w.end(i).readable();
          unacked_at_hand[i] = w.end(i).info().unacked;
          err[i] = w.hand_over(i);
          handed[i] = true;
        }
        Connection& c = w.end(i);
        while (sent[i] < total[i] && c.writable()) {
          const size_t n = std::min<uint64_t>(buf.size(), total[i] - sent[i]);
          for (size_t k = 0; k < n; k++) buf[k] = pattern(sent[i] + k, i);
          const ssize_t m = c.send({buf.data(), n}, w.now());
          if (m <= 0) break;
          sent[i] += static_cast<uint64_t>(m);
        }
        if (sent[i] == total[i] && !shut[i]) shut[i] = c.shutdown_write(w.now()) == 0;
        // A few KB a turn: bytes are often left unread.
        const ssize_t m = eof[i] ? 0 : c.recv({buf.data(), 8192}, false, w.now());
        for (ssize_t k = 0; k < m; k++)
          intact = intact && buf[k] == pattern(got[i] + static_cast<uint64_t>(k), 1 - i);
        if (m > 0) got[i] += static_cast<uint64_t>(m);
        if (m == 0 && !eof[i] && c.state() != State::kEstablished &&
            c.state() != State::kFinWait1 && c.state() != State::kFinWait2)
          eof[i] = true;
        if (eof[i] && shut[i] && !closed[i]) {
          c.close(w.now());
          closed[i] = true;
        }
      }
      return !(closed[0] && closed[1] &&
               (w.end(0).state() == State::kTimeWait || w.end(0).state() == State::kClosed) &&
               (w.end(1).state() == State::kTimeWait || w.end(1).state() == State::kClosed));
    });
    EXPECT_EQ(err[0], 0);
    EXPECT_EQ(err[1], 0);
    EXPECT_GT(readable_at_hand, 0u);                         // bytes to read were carried
    EXPECT_GT(unacked_at_hand[0] + unacked_at_hand[1], 0u);  // and bytes in flight
    EXPECT_EQ(got[1], total[0]);
    EXPECT_EQ(got[0], total[1]);
    EXPECT_TRUE(intact);
    EXPECT_TRUE(eof[0] && eof[1]);
    EXPECT_TRUE(closed[0] && closed[1]);
    EXPECT_GT(w.dropped(), 0u);
  }
}

// A closing connection carried on: side 0 sent 100 KB and its FIN
// (FIN-WAIT-2 once acknowledged), side 1 read none of it (CLOSE-WAIT with
// the bytes unread). Each handed over, the new ones are in those states;
// side 1 reads the 100 KB and the end of stream, answers 10 KB and
// closes; side 0 reads them, its end of stream, and waits in TIME-WAIT.
TEST(TcpHandover, CarriedOnInCloseWaitAndFinWait2) {
  wire::Wire w({}, {}, {});
  std::vector<uint8_t> out(100000), back(10000), got;
  for (size_t i = 0; i < out.size(); i++) out[i] = pattern(i, 0);
  for (size_t i = 0; i < back.size(); i++) back[i] = pattern(i, 1);
  w.end(0).connect(1000, 0);
  size_t sent = 0;
  w.run(10'000'000, [&] {
    Connection& a = w.end(0);
    if (a.state() == State::kEstablished && sent < out.size()) {
      const ssize_t n = a.send({out.data() + sent, out.size() - sent}, w.now());
      if (n > 0) sent += static_cast<size_t>(n);
      if (sent == out.size()) a.close(w.now());
    }
    return !(w.end(0).state() == State::kFinWait2 && w.end(1).state() == State::kCloseWait);
  });
  ASSERT_EQ(w.end(0).state(), State::kFinWait2);
  ASSERT_EQ(w.end(1).state(), State::kCloseWait);
  ASSERT_EQ(w.hand_over(1), 0);
  ASSERT_EQ(w.hand_over(0), 0);
  EXPECT_EQ(w.end(1).state(), State::kCloseWait);
  EXPECT_EQ(w.end(0).state(), State::kFinWait2);
  std::vector<uint8_t> buf(200000), from_b;
  bool b_eof = false, a_eof = false, b_closed = false;
  w.run(20'000'000, [&] {
    Connection& b = w.end(1);
    for (ssize_t n; !b_eof && (n = b.recv(buf, false, w.now())) >= 0;) {
      if (n == 0) {
        b_eof = true;
        break;
      }
      got.insert(got.end(), buf.begin(), buf.begin() + n);
    }
    if (b_eof && !b_closed) {
      EXPECT_EQ(b.send(back, w.now()), static_cast<ssize_t>(back.size()));
      b.close(w.now());
      b_closed = true;
    }
    Connection& a = w.end(0);
    for (ssize_t n; !a_eof && (n = a.recv(buf, false, w.now())) >= 0;) {
      if (n == 0) {
        a_eof = true;
        break;
      }
      from_b.insert(from_b.end(), buf.begin(), buf.begin() + n);
    }
    return !(a_eof && w.end(1).state() == State::kClosed);
  });
  EXPECT_EQ(got, out);
  EXPECT_EQ(from_b, back);
  EXPECT_TRUE(a_eof && b_eof);
  EXPECT_EQ(w.end(0).state(), State::kTimeWait);
  EXPECT_EQ(w.end(1).state(), State::kClosed);
  EXPECT_EQ(w.end(0).error(), 0);
  EXPECT_EQ(w.end(1).error(), 0);
}

// What crosses a process boundary is checked: the codec takes back what
// it made, and refuses bytes cut short, lengthened, of another magic, an
// unknown family or a window scale above 14; restore refuses a
// connection already used and a handover whose bytes do not match.
TEST(TcpHandover, TheBytesBetweenProcessesAreChecked) {
  FourTuple t;
  t.local = IpAddr::parse("fd00::1");
  t.remote = IpAddr::parse("fd00::2");
  t.local_port = 80;
  t.remote_port = 40000;
  Handover h;
  h.snd_una = 7;
  h.rcv_nxt = 9;
  h.rcv_wup = 9;
  h.rcv_wnd = 1000;
  h.snd_wnd = 1000;
  h.peer_mss = 1400;
  h.sent = {1, 2, 3};
  h.unsent = {4};
  h.unread = {5, 6};
  const std::vector<uint8_t> good = encode_handover(t, h);
  FourTuple t2;
  Handover h2;
  ASSERT_EQ(decode_handover(good, &t2, &h2), 0);
  EXPECT_TRUE(t2 == t);
  EXPECT_EQ(h2.sent, h.sent);
  EXPECT_EQ(h2.unsent, h.unsent);
  EXPECT_EQ(h2.unread, h.unread);
  EXPECT_EQ(h2.rcv_wnd, 1000u);
  std::vector<uint8_t> bad = good;
  bad.pop_back();
  EXPECT_EQ(decode_handover(bad, &t2, &h2), -EINVAL);
  bad = good;
  bad.push_back(0);
  EXPECT_EQ(decode_handover(bad, &t2, &h2), -EINVAL);
  EXPECT_EQ(decode_handover(std::span(good).first(10), &t2, &h2), -EINVAL);
  bad = good;
  bad[0] ^= 1;
  EXPECT_EQ(decode_handover(bad, &t2, &h2), -EINVAL);
  Handover wide = h;
  wide.snd_wscale = 15;
  EXPECT_EQ(decode_handover(encode_handover(t, wide), &t2, &h2), -EINVAL);
  FourTuple nofam = t;
  nofam.local.family = AF_UNSPEC;
  EXPECT_EQ(decode_handover(encode_handover(nofam, h), &t2, &h2), -EINVAL);

  RoomSink sink;
  TimerQueue timers;
  Connection c({}, 80, 40000, &sink, &timers);
  EXPECT_EQ(c.restore(h, {}, 0), -EINVAL);  // its 2 unread bytes not given
  EXPECT_EQ(c.state(), State::kClosed);
  Connection used({}, 80, 40000, &sink, &timers);
  used.connect(1, 0);
  h.unread.clear();
  EXPECT_EQ(used.restore(h, {}, 0), -EINVAL);
  EXPECT_EQ(c.restore(h, {}, 0), 0);
  EXPECT_EQ(c.state(), State::kEstablished);
  EXPECT_EQ(c.snd_una(), 7u);
  EXPECT_EQ(c.info().unacked, 1u);  // the 4 bytes went again in one segment
}

}  // namespace
}  // namespace ss::net::tcp
