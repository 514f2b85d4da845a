// vma_stats's views of a Snapshot (vma_stats(8)), in libvma's
// wording and columns: 1 basic (per fd: offloaded pkt, Kbyte, eagain,
// error, poll%, then the OS's pkt, Kbyte, eagain, error), 2 the same with
// the receive queue (cur/max/drop), 3 full (per fd, then rings, buffer
// pools, iomux), 5 netstat-like. Every field printed is bounded: a
// snapshot of a garbled file prints garbage figures, never out of bounds.
#pragma once
#include "core/base/api.h"

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "libvmacompat/stats_reader.h"

namespace ss::vma::stats {

struct ViewOptions {
  int level = 1;                               // 1, 2, 3 or 5
  std::vector<std::pair<int, int>> fd_ranges;  // empty: every fd
  bool per_second = false;                     // says so in the title
};

// `now`'s counters as rates over the `seconds` since `before` (vma_stats
// -d 2); gauges and maxima as they are; blocks not in `before` with the
// same sequence (opened since) left out.
Snapshot per_second(const Snapshot& before, const Snapshot& now, double seconds);

// "3", "1,4-7": false on anything else (for `vma_stats -s`).
bool parse_fd_list(const std::string& text, std::vector<std::pair<int, int>>* ranges);

void print_view(FILE* out, const Snapshot& s, const ViewOptions& v);

// One socket's block as view 3 shows it (also the preload's dump_fd_stats
// and VMA_STATS_FILE).
SS_API void print_socket_full(FILE* out, const SocketBlock& b);
// The socket sent, received or polled for anything, offloaded or through
// the kernel (what VMA_STATS_FILE reports).
SS_API bool socket_active(const SocketBlock& b);

}  // namespace ss::vma::stats
