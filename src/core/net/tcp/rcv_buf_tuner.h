// Receive-buffer autotuning, as Linux's (tcp_rcv_space_adjust): once a
// receiver's round trip, the buffer grows to twice what the program read
// in the last one, plus 16 segments, more when the reading sped up, up to
// a ceiling (Linux's tcp_rmem[2]). A program that set SO_RCVBUF keeps it.
//
// The round trip a receiver sees is the time one window takes to arrive
// (as Linux measures it without timestamps, ours being milliseconds):
// a window-limited sender fills it once a round trip, one that pauses
// takes longer, so the estimate is the least sample (Linux's too).
#pragma once
#include <cstdint>

namespace ss::net::tcp {

class RcvBufTuner {
 public:
  // The connection is established with rcv_nxt; it starts as Linux does,
  // from ten segments (of the MSS we announced) read a round trip.
  void start(uint32_t rcv_nxt, uint32_t adv_mss, uint64_t now);
  // In-order data moved rcv_nxt; rcv_wnd is the window the last ACK offered.
  void arrived(uint32_t rcv_nxt, uint32_t rcv_wnd, uint64_t now);
  // The program has read every byte before copied_seq. Returns the
  // receive buffer to use: rcv_buf, or more (at most max) at the end of a
  // round trip that read more than the one before.
  uint32_t read(uint32_t copied_seq, uint32_t rcv_buf, uint32_t max, uint32_t rcv_mss,
                uint64_t now);
  uint64_t rtt_us() const { return rtt_us_; }

 private:
  bool started_ = false;
  uint64_t rtt_us_ = 0;  // the least sample; 0 before the first
  bool sampling_ = false;
  uint32_t rtt_seq_ = 0;  // the window's right edge when the sample began
  uint64_t rtt_start_us_ = 0;
  uint32_t space_ = 0;      // bytes read in the last round trip measured
  uint32_t space_seq_ = 0;  // copied_seq when this round trip began
  uint64_t space_start_us_ = 0;
};

}  // namespace ss::net::tcp
