// What the hardware allows in this run, measured next to the transports so
// that the shm rows' absolute figures can be read against it: a cache line
// bounced between two processes (the floor of any shared-memory round
// trip) and one core's memcpy (each side of an shm stream copies once).
#pragma once
#include <cstddef>

namespace ssdemo {

struct Floor {
  bool ok = false;
  double line_one_way_us = 0;  // median over batches: half a cache-line round trip
  double copy64k_gbps = 0;     // 64 KiB copies into a 1 MiB ring (the shm receive buffer)
  double copy1m_gbps = 0;      // 1 MiB copies into the same ring
};

// Forks one helper process (call before any rsocket exists); `round_trips`
// sets the ping-pong's length. Never fails the run: ok=false if it could
// not measure.
Floor measure_floor(size_t round_trips);

}  // namespace ssdemo
