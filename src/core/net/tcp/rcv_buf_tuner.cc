#include "core/net/tcp/rcv_buf_tuner.h"

#include <algorithm>

#include "core/net/tcp/seq.h"

namespace ss::net::tcp {
namespace {
constexpr uint32_t kInitialSegments = 10;  // Linux's TCP_INIT_CWND
constexpr uint32_t kSlackSegments = 16;    // room beyond twice a round trip's reads
}  // namespace

void RcvBufTuner::start(uint32_t rcv_nxt, uint32_t adv_mss, uint64_t now) {
  started_ = true;
  space_ = kInitialSegments * adv_mss;
  space_seq_ = rcv_nxt;
  space_start_us_ = now;
  sampling_ = false;
}

void RcvBufTuner::arrived(uint32_t rcv_nxt, uint32_t rcv_wnd, uint64_t now) {
  if (!started_) return;
  if (sampling_) {
    if (seq_lt(rcv_nxt, rtt_seq_)) return;
    const uint64_t sample = std::max<uint64_t>(now - rtt_start_us_, 1);
    rtt_us_ = rtt_us_ ? std::min(rtt_us_, sample) : sample;
  }
  sampling_ = true;
  rtt_seq_ = rcv_nxt + rcv_wnd;
  rtt_start_us_ = now;
}

uint32_t RcvBufTuner::read(uint32_t copied_seq, uint32_t rcv_buf, uint32_t max, uint32_t rcv_mss,
                           uint64_t now) {
  if (!started_ || rtt_us_ == 0 || now - space_start_us_ < rtt_us_) return rcv_buf;
  const uint32_t copied = copied_seq - space_seq_;
  space_seq_ = copied_seq;
  space_start_us_ = now;
  if (copied <= space_) return rcv_buf;
  const uint64_t most = std::max(rcv_buf, max);
  uint64_t want = 2 * uint64_t{copied} + kSlackSegments * uint64_t{rcv_mss};
  // Reading sped up by this share of the last round trip: grow ahead of it
  // (in floating point: the product may pass 2^64; the bound cuts it).
  const double grow =
      2.0 * static_cast<double>(want) * (copied - space_) / std::max<uint32_t>(space_, 1);
  want += static_cast<uint64_t>(std::min(grow, static_cast<double>(most)));
  space_ = copied;
  return static_cast<uint32_t>(std::clamp<uint64_t>(want, rcv_buf, most));
}

}  // namespace ss::net::tcp
