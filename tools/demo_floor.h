// What the hardware allows in this run, measured next to the transports so
// that the shm rows' absolute figures can be read against it: a cache line
// bounced between two processes (the floor of any shared-memory round
// trip) and the stream server's work done by one core alone (copy out of
// the receive ring, checksum), the ceiling of a stream it receives.
#pragma once
#include <cstddef>

namespace ssdemo {

struct Floor {
  bool ok = false;
  double line_one_way_us = 0;  // median over batches: half a cache-line round trip
  double receive64k_gbps = 0;  // 64 KiB pieces out of a 1 MiB ring, copied and checksummed
  double receive1m_gbps = 0;   // 1 MiB pieces, likewise
};

// Forks one helper process (call before any rsocket exists); `round_trips`
// sets the ping-pong's length. Never fails the run: ok=false if it could
// not measure.
Floor measure_floor(size_t round_trips);

}  // namespace ssdemo
