// librspreload's count of the program's signal handlers
// (interpose/signal_count.h), handed over by ss_rspreload_signal_probe
// (preload_hooks.h) when the program installs one: a blocking call's busy
// phase, and its time between two sleeps, is in no system call a signal
// could interrupt, so it asks the count whether a handler ran, as its
// sleep asks poll(2). Unset (librsocket.so on its own, or no handler
// installed), nothing is asked.
#pragma once
#include <cstdint>

namespace ss::rs::signal_probe {

// The count now (0 when unset): where a blocking call starts.
uint64_t seen();
// Whether a handler ran since *seen (then moved on) and the call must
// fail with EINTR (signal_count.h's spin_interrupted).
bool interrupted(uint64_t* seen, bool restartable);
// The count's function for PollTiming::handlers_ran, or null.
uint64_t (*count())();

}  // namespace ss::rs::signal_probe
