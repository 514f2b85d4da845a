// Congestion control (RFC 5681), its window in bytes, behind one interface
// so a connection holds whichever VMA_TCP_CC_ALGO names: 0 NewReno (RFC
// 5681/6582 growth; libvma's lwIP default), 1 CUBIC (RFC 9438), 2 none (no
// congestion window: the receiver's window alone). Loss detection and the
// retransmissions of recovery (SACK, RACK) are the caller's: it tells the
// controller when recovery starts and ends and when the RTO fires.
#pragma once
#include <cstdint>
#include <memory>

namespace ss::net::tcp {

enum class CcAlgo : uint8_t { kNewReno = 0, kCubic = 1, kNone = 2 };

class CongestionControl {
 public:
  virtual ~CongestionControl() = default;
  // Bytes newly acknowledged (not in recovery), with the time and the
  // smoothed RTT (0: none yet) for algorithms that grow by time.
  virtual void on_ack(uint32_t acked, uint64_t now_us, uint64_t srtt_us) = 0;
  // A loss found by duplicate ACKs, SACK or RACK, with `flight` bytes
  // outstanding: ssthresh falls and cwnd to it (RFC 6675 §5 step 4.2);
  // the caller recovers.
  virtual void on_recovery_start(uint32_t flight, uint64_t now_us) = 0;
  // Recovery ended (the recovery point acknowledged): cwnd = ssthresh.
  virtual void on_recovery_end() = 0;
  // The retransmission timer expired with `flight` outstanding (RFC 5681
  // §3.1: ssthresh from the flight, cwnd one segment).
  virtual void on_rto(uint32_t flight, uint64_t now_us) = 0;
  // Another RTO within a recovery: back to one segment, ssthresh kept.
  void restart_from_loss_window() { cwnd_ = mss_; }
  uint32_t cwnd() const { return cwnd_; }
  uint32_t ssthresh() const { return ssthresh_; }
  bool in_slow_start() const { return cwnd_ < ssthresh_; }

 protected:
  explicit CongestionControl(uint32_t mss);
  // RFC 5681 §3.1 with RFC 3465's byte counting (L = 2 segments): slow
  // start grows by what was acknowledged, congestion avoidance by one
  // segment per window acknowledged. Returns the bytes slow start left
  // over once cwnd reached ssthresh.
  uint32_t slow_start(uint32_t acked);
  void reno_avoidance(uint32_t acked);
  void loss_ssthresh(uint32_t flight);  // max(flight / 2, 2 segments)
  uint32_t mss_;
  uint32_t cwnd_, ssthresh_ = UINT32_MAX;
  uint32_t acked_in_window_ = 0;  // congestion avoidance's byte count
};

// RFC 6928: min(10 segments, max(2 segments, 14600 bytes)).
uint32_t initial_window(uint32_t mss);

std::unique_ptr<CongestionControl> make_congestion_control(CcAlgo algo, uint32_t mss);

}  // namespace ss::net::tcp
