// A synchronized connection's state, as another TCP needs it to carry
// the connection on without the peer noticing: the kernel's, through
// Linux's TCP_REPAIR (the VMA face hands a connection a fork child shares
// to its kernel socket). The bytes are copies: the connection keeps its
// own until the stack lets it go.
#pragma once
#include <cstdint>
#include <vector>

#include "core/base/api.h"
#include "core/net/tcp/isn.h"  // FourTuple

namespace ss::net::tcp {

struct Handover {
  // Sequence numbers: `sent` starts at snd_una, `unsent` follows it;
  // `unread` ends at rcv_nxt.
  uint32_t snd_una = 0, rcv_nxt = 0;
  // The windows as RFC 9293 keeps them (Linux's struct tcp_repair_window):
  // the peer's (bytes, scaled) and ours (rcv_wup + rcv_wnd is the right
  // edge we advertised; it must not move back).
  uint32_t snd_wl1 = 0, snd_wnd = 0, max_snd_wnd = 0, rcv_wnd = 0, rcv_wup = 0;
  uint32_t peer_mss = 0;  // what the peer announced (the kernel's mss_clamp)
  bool window_scaling = false, sack = false, timestamps = false;
  uint8_t snd_wscale = 0, rcv_wscale = 0;
  uint32_t ts_val = 0;  // past our last timestamp, even: the kernel's clock goes on from it
  // The peer's FIN came (CLOSE-WAIT, CLOSING, LAST-ACK, TIME-WAIT):
  // rcv_nxt is its sequence number, and the other TCP takes it as a
  // segment (peer_close_packet). ts_recent: the peer's last timestamp.
  bool fin = false;
  uint32_t ts_recent = 0;
  // Ours (FIN-WAIT, CLOSING, LAST-ACK, TIME-WAIT): went (fin_sent; snd_una
  // stops before it, also once the peer acknowledged it, and `unsent` is
  // empty), or waits behind `unsent` (fin_queued). The other TCP sends
  // its own after the bytes. fin_acked: the peer acknowledged it
  // (FIN-WAIT-2, TIME-WAIT), and the other TCP takes that ACK as a
  // segment too. ours_first: it went before the peer's came and is not
  // acknowledged (CLOSING). The other TCP needs no other order: TIME-WAIT
  // becomes the peer's FIN, ours, then the ACK of ours (LAST-ACK to
  // closed, nothing sent), the socket as Linux's is after its TIME-WAIT.
  bool fin_sent = false, fin_queued = false, fin_acked = false, ours_first = false;
  std::vector<uint8_t> sent, unsent, unread;
};

// What the peer sent past the data, for a TCP that takes a FIN or the ACK
// of its own only as a segment (Linux's repair mode carries neither).
enum class PeerClose {
  kFin,        // its FIN at h.rcv_nxt, acknowledging h.snd_una (not our FIN)
  kAckOfOurs,  // after its FIN if h.fin: an ACK of our FIN (h.snd_una + 1)
};

// That segment as a packet from t.remote to t.local, IP header first (no
// link header), with the peer's window and last timestamp, checksummed.
// Empty where h has no such segment (no h.fin, no h.fin_acked).
SS_API std::vector<uint8_t> peer_close_packet(const FourTuple& t, const Handover& h,
                                              PeerClose what);

}  // namespace ss::net::tcp
