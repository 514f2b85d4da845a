// Connection::handover: what another TCP needs to carry an established
// connection on (handover.h), taken on the fake wire (tcp_wire.h).
#include <gtest/gtest.h>

#include <vector>

#include "core/net/tcp/handover.h"
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
  // Past ESTABLISHED (a FIN sent), nothing to hand over.
  b.close(w.now());
  EXPECT_EQ(b.handover(&h, w.now()), -EOPNOTSUPP);
}

}  // namespace
}  // namespace ss::net::tcp
