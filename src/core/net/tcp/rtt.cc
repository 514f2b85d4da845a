#include "core/net/tcp/rtt.h"

#include <algorithm>

namespace ss::net::tcp {

void RttEstimator::sample(uint64_t rtt_us) {
  if (rtt_us == 0) rtt_us = 1;  // the clock's granularity
  if (srtt_us_ == 0) {          // §2.2
    srtt_us_ = rtt_us;
    rttvar_us_ = rtt_us / 2;
  } else {  // §2.3: beta 1/4, alpha 1/8; RTTVAR first, with the old SRTT
    const uint64_t diff = srtt_us_ > rtt_us ? srtt_us_ - rtt_us : rtt_us - srtt_us_;
    rttvar_us_ = (3 * rttvar_us_ + diff) / 4;
    srtt_us_ = (7 * srtt_us_ + rtt_us) / 8;
  }
  backoffs_ = 0;  // §5.7: a new sample ends the backing off
}

void RttEstimator::back_off() {
  if (rto_us() < max_rto_us_) backoffs_++;
}

uint64_t RttEstimator::rto_us() const {
  // §2.3: SRTT + max(G, K*RTTVAR), K = 4, G one microsecond.
  uint64_t rto = srtt_us_ ? srtt_us_ + std::max<uint64_t>(1, 4 * rttvar_us_) : kInitialRtoUs;
  rto = std::clamp(rto, min_rto_us_, max_rto_us_);
  for (int i = 0; i < backoffs_ && rto < max_rto_us_; i++) rto = std::min(rto * 2, max_rto_us_);
  return rto;
}

}  // namespace ss::net::tcp
