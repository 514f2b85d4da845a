#include "core/net/tcp/congestion.h"

#include <algorithm>
#include <cmath>

namespace ss::net::tcp {

uint32_t initial_window(uint32_t mss) {
  return std::min(10 * mss, std::max(2 * mss, uint32_t{14600}));
}

CongestionControl::CongestionControl(uint32_t mss)
    : mss_(mss ? mss : 1), cwnd_(initial_window(mss_)) {}

uint32_t CongestionControl::slow_start(uint32_t acked) {
  const uint32_t room = ssthresh_ - cwnd_;  // in slow start: cwnd < ssthresh
  const uint32_t grow = std::min({acked, 2 * mss_, room});
  cwnd_ += grow;
  return acked > grow ? acked - grow : 0;
}

void CongestionControl::reno_avoidance(uint32_t acked) {
  acked_in_window_ += acked;
  if (acked_in_window_ >= cwnd_) {
    acked_in_window_ -= cwnd_;
    if (cwnd_ <= UINT32_MAX - mss_) cwnd_ += mss_;
  }
}

void CongestionControl::loss_ssthresh(uint32_t flight) {
  ssthresh_ = std::max(flight / 2, 2 * mss_);
  acked_in_window_ = 0;
}

namespace {

class NewReno final : public CongestionControl {
 public:
  explicit NewReno(uint32_t mss) : CongestionControl(mss) {}
  void on_ack(uint32_t acked, uint64_t, uint64_t) override {
    if (in_slow_start()) acked = slow_start(acked);
    if (acked && !in_slow_start()) reno_avoidance(acked);
  }
  void on_recovery_start(uint32_t flight, uint64_t) override {
    loss_ssthresh(flight);
    cwnd_ = ssthresh_;
  }
  void on_recovery_end() override { cwnd_ = ssthresh_; }
  void on_rto(uint32_t flight, uint64_t) override {
    loss_ssthresh(flight);
    cwnd_ = mss_;  // the loss window
  }
};

// RFC 9438 with its constants (C 0.4, beta 0.7), fast convergence and the
// Reno-friendly region; windows kept in segments as doubles, time in
// seconds.
class Cubic final : public CongestionControl {
 public:
  explicit Cubic(uint32_t mss) : CongestionControl(mss) {}
  void on_ack(uint32_t acked, uint64_t now_us, uint64_t srtt_us) override {
    if (in_slow_start()) acked = slow_start(acked);
    if (!acked || in_slow_start()) return;
    const double seg = mss_;
    const double cwnd = cwnd_ / seg;
    if (!in_epoch_) {  // §4.2: the first ACK of congestion avoidance
      in_epoch_ = true;
      epoch_us_ = now_us;
      if (w_max_ < cwnd) {  // no loss yet, or grown past it: the curve starts here
        w_max_ = cwnd;
        k_ = 0;
      } else {
        k_ = std::cbrt((w_max_ - cwnd) / kC);  // §4.2 eq. 2, cwnd the window at the epoch
      }
      w_est_ = cwnd;
    }
    const double t = (now_us - epoch_us_) / 1e6;
    const double rtt = srtt_us / 1e6;
    // §4.2: the target one RTT ahead, within [cwnd, 1.5 cwnd].
    double target = kC * std::pow(t + rtt - k_, 3) + w_max_;
    target = std::clamp(target, cwnd, 1.5 * cwnd);
    // §4.3: the Reno-friendly estimate, alpha = 3 (1 - beta) / (1 + beta).
    const double segs_acked = acked / seg;
    w_est_ += kAlpha * segs_acked / cwnd;
    double next;
    if (w_est_ > target && w_est_ > cwnd)
      next = w_est_;
    else
      next =
          cwnd + (target - cwnd) * segs_acked / cwnd;  // §4.4: (target - cwnd) / cwnd per segment
    const double bytes = std::min(next * seg, double{UINT32_MAX});
    cwnd_ = std::max(cwnd_, static_cast<uint32_t>(bytes));
  }
  // CUBIC reduces from the window, not the flight (§4.6).
  void on_recovery_start(uint32_t, uint64_t) override {
    reduce();
    cwnd_ = ssthresh_;
  }
  void on_recovery_end() override { cwnd_ = ssthresh_; }
  void on_rto(uint32_t, uint64_t) override {
    reduce();
    cwnd_ = mss_;
  }

 private:
  static constexpr double kC = 0.4, kBeta = 0.7, kAlpha = 3 * (1 - kBeta) / (1 + kBeta);
  // §4.6 and §4.7: W_max from the window at the loss (lower with fast
  // convergence), ssthresh beta of it; a new epoch starts at the next ACK.
  void reduce() {
    const double cwnd = cwnd_ / double(mss_);
    w_max_ = cwnd < w_last_max_ ? cwnd * (1 + kBeta) / 2 : cwnd;
    w_last_max_ = cwnd;
    const uint32_t by_beta = static_cast<uint32_t>(cwnd_ * kBeta);
    ssthresh_ = std::max(by_beta, 2 * mss_);
    acked_in_window_ = 0;
    in_epoch_ = false;
  }
  double w_max_ = 0, w_last_max_ = 0, k_ = 0, w_est_ = 0;
  bool in_epoch_ = false;
  uint64_t epoch_us_ = 0;
};

// No congestion window: the receiver's window alone limits the sender.
class NoCc final : public CongestionControl {
 public:
  explicit NoCc(uint32_t mss) : CongestionControl(mss) { cwnd_ = UINT32_MAX; }
  void on_ack(uint32_t, uint64_t, uint64_t) override {}
  void on_recovery_start(uint32_t, uint64_t) override {}
  void on_recovery_end() override {}
  void on_rto(uint32_t, uint64_t) override {}
};

}  // namespace

std::unique_ptr<CongestionControl> make_congestion_control(CcAlgo algo, uint32_t mss) {
  switch (algo) {
    case CcAlgo::kCubic:
      return std::make_unique<Cubic>(mss);
    case CcAlgo::kNone:
      return std::make_unique<NoCc>(mss);
    case CcAlgo::kNewReno:
      break;
  }
  return std::make_unique<NewReno>(mss);
}

}  // namespace ss::net::tcp
