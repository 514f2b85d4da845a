// The process's one Publisher, for the VMA face: started once with the
// face's settings (VMA_STATS_SHMEM_DIR, VMA_STATS_FD_NUM). Its file is
// removed at exit by an atexit handler, but the object and its mapping
// live until the process ends: a socket closed by a later destructor or
// atexit handler still writes into valid memory. A forked child's copy is
// detached from its parent's file (Publisher::detach_after_fork).
#pragma once
#include "core/base/api.h"

#include <cstdint>
#include <string>

#include "libvmacompat/stats_publisher.h"

namespace ss::vma::stats {

// Creates the publisher (the first call only; later calls return it).
// Falls back to private memory when the file cannot be made, so it is
// never nullptr.
SS_API Publisher* start_process_stats(const std::string& dir, uint32_t fd_blocks);
// The publisher once started, else nullptr.
SS_API Publisher* process_stats();

}  // namespace ss::vma::stats
