// Start-up of the VMA preload, as libvma's. libvma reads
// its environment and prints its banner from a constructor and builds the
// rest on the first socket; so do we: start() runs once, from our
// constructor (after libc, libslipstream and libvmacompat, which are our
// dependencies) or from the first interposed call, whichever comes first
// (another library's constructor may open a socket before ours ran).
#pragma once

#include "libvmacompat/stats_publisher.h"

namespace ss::vma::preload {

// Reads the VMA_* settings, makes VMA_TRACELEVEL the log threshold and
// prints the banner. Once; cheap afterwards.
void start();

// The vmastat.<pid> publisher (VMA_STATS_SHMEM_DIR, VMA_STATS_FD_NUM;
// "" keeps the blocks in private memory), started at the first socket.
stats::Publisher* socket_stats();

}  // namespace ss::vma::preload
