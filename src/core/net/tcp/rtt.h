// The retransmission timeout (RFC 6298) in microseconds: smoothed RTT and
// its variance from samples the caller takes (Karn's rule is the
// caller's: no sample from a retransmitted segment unless timestamps
// tell which copy was acknowledged), the timeout bounded by a minimum and
// a maximum (settings), doubled on each expiry and reset by a new sample.
#pragma once
#include <cstdint>

namespace ss::net::tcp {

class RttEstimator {
 public:
  // RFC 6298 §2.1: 1 s before any sample; Linux bounds it 200 ms..120 s.
  static constexpr uint64_t kInitialRtoUs = 1'000'000;
  RttEstimator(uint64_t min_rto_us, uint64_t max_rto_us)
      : min_rto_us_(min_rto_us), max_rto_us_(max_rto_us < min_rto_us ? min_rto_us : max_rto_us) {}

  // One round-trip sample (> 0).
  void sample(uint64_t rtt_us);
  // The timer expired: the timeout doubles, up to the maximum (§5.5).
  void back_off();
  uint64_t rto_us() const;
  bool has_sample() const { return srtt_us_ != 0; }
  uint64_t srtt_us() const { return srtt_us_; }
  uint64_t rttvar_us() const { return rttvar_us_; }
  int backoffs() const { return backoffs_; }

 private:
  uint64_t min_rto_us_, max_rto_us_;
  uint64_t srtt_us_ = 0, rttvar_us_ = 0;
  int backoffs_ = 0;
};

}  // namespace ss::net::tcp
