// What the hardware allows in this run, measured next to the transports so
// that the shm rows' absolute figures can be read against it: a cache line
// bounced between two processes (the floor of any shared-memory round
// trip), the stream server's work done by one core alone (copy out of
// the receive ring, checksum), and the same work on bytes another process
// keeps writing into a shared ring: the copies any shared-memory stream
// between two cores makes, with no transport around them.
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace ssdemo {

// The cache-line ping-pong. Its helper process is forked once, before any
// rsocket exists, and sleeps between measurements: the floor can then be
// measured right next to the rows it is read against (on a shared host the
// two vCPUs' placement, and with it the floor, changes between seconds).
class LineProbe {
 public:
  LineProbe() = default;
  ~LineProbe();
  LineProbe(const LineProbe&) = delete;
  LineProbe& operator=(const LineProbe&) = delete;

  bool start();
  // Median over batches of half a round trip, in us; 0 if it could not
  // measure (no helper, or the helper did not answer).
  double one_way_us(size_t round_trips);
  // A shm stream without a transport, in GB/s (0 if it could not measure): the helper
  // copies pieces into a shared 1 MiB ring (at most half of it per piece,
  // as rsockets publishes its receive buffer in halves), this process
  // copies each `msg` bytes out and checksums them, as the stream server.
  double ring_gbps(size_t msg);

  struct Shared;  // the memory shared with the helper (demo_floor.cc)

 private:
  Shared* sh_ = nullptr;
  pid_t pid_ = -1;
  int cmd_fd_ = -1;  // a byte per session to the helper; 'q' ends it
  uint64_t n_ = 0;   // last ping value, continued across sessions
};

struct Floor {
  bool ok = false;
  double line_one_way_us = 0;     // at the start of the run
  double line_before_shm_us = 0;  // right before the shm rows (0: not measured)
  double line_after_shm_us = 0;   // right after them
  double receive64k_gbps = 0;     // 64 KiB pieces out of a 1 MiB ring, copied and checksummed
  double receive1m_gbps = 0;      // 1 MiB pieces, likewise
  // The two-core ring (LineProbe::ring_gbps) at the start and right after
  // the shm rows (0: not measured).
  double ring64k_gbps = 0, ring1m_gbps = 0;
  double ring64k_after_shm_gbps = 0, ring1m_after_shm_gbps = 0;
};

// The start-of-run figures (the probe must be started). Never fails the
// run: ok=false if the ping-pong could not be measured.
Floor measure_floor(LineProbe* probe, size_t round_trips);

}  // namespace ssdemo
