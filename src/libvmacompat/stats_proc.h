// Which process a vmastat file belongs to: a pid alone can be reused after
// its process died, so the publisher records the process's start time too,
// and a file whose pid is gone, or now names another process, is stale.
#pragma once

#include <cstdint>
#include <string>

namespace ss::vma::stats {

// The start time of process `pid` in clock ticks since boot (field 22 of
// /proc/PID/stat); 0 when there is no such process or it cannot be read.
uint64_t process_start_ticks(int pid);

enum class Liveness { kLive, kGone, kReused };
// kLive: `pid` runs and started at `start_ticks`; kReused: `pid` runs but
// is another process; kGone: no process `pid`.
Liveness liveness(int pid, uint64_t start_ticks);

// DIR/vmastat.PID, the file of process `pid`.
std::string stats_path(const std::string& dir, int pid);

}  // namespace ss::vma::stats
