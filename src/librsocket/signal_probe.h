// librspreload's count of the program's signal handlers
// (interpose/signal_count.h), handed over by ss_rspreload_signal_probe
// (preload_hooks.h) when the program installs one: a blocking call's busy
// phase, and its time between two sleeps, is in no system call a signal
// could interrupt, so it asks the count whether a handler ran, as its
// sleep asks poll(2). Unset (librsocket.so on its own, or no handler
// installed), nothing is asked. Inline: every blocking call asks, most
// of them with nothing set.
#pragma once
#include <atomic>
#include <cstdint>

namespace ss::rs::signal_probe {

namespace detail {
inline std::atomic<uint64_t (*)()> g_ran{nullptr};
inline std::atomic<int (*)(uint64_t*, int)> g_interrupted{nullptr};
}  // namespace detail

// The count's function for PollTiming::handlers_ran, or null.
inline uint64_t (*count())() { return detail::g_ran.load(std::memory_order_acquire); }

// The count now (0 when unset): where a blocking call starts.
inline uint64_t seen() {
  const auto ran = count();
  return ran ? ran() : 0;
}

// Whether a handler ran since *seen (then moved on) and the call must
// fail with EINTR (signal_count.h's spin_interrupted).
inline bool interrupted(uint64_t* seen, bool restartable) {
  const auto f = detail::g_interrupted.load(std::memory_order_acquire);
  return f && f(seen, restartable);
}

}  // namespace ss::rs::signal_probe
