// An established connection's state, as another TCP needs it to carry
// the connection on without the peer noticing: the kernel's, through
// Linux's TCP_REPAIR (the VMA face hands a connection a fork child shares
// to its kernel socket). The bytes are copies: the connection keeps its
// own until the stack lets it go.
#pragma once
#include <cstdint>
#include <vector>

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
  std::vector<uint8_t> sent, unsent, unread;
};

}  // namespace ss::net::tcp
