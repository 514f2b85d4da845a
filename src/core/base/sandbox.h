// A process that locked itself in: a seccomp filter (OpenSSH's
// privilege-separated child, systemd's SystemCallFilter=, a browser's
// network service) kills it, or fails the call, at any system call outside
// its list. What such lists allow is reads, writes and waits on what the
// process holds; so once a filter is known the library makes no new
// descriptor or thread and moves its connections with read, write, poll
// and futex alone (fd_passing.h, kick.h, yield_cpu).
//
// Known: at load, from /proc/self/status (a filter inherited across exec);
// afterwards from the program's own prctl(PR_SET_SECCOMP) or seccomp(2)
// through libc's syscall(), which the preloads interpose
// (interpose/sandbox_calls.cc). A program on librsocket alone that
// installs a filter later is not seen.
#pragma once
#include <atomic>

#include "core/base/api.h"

namespace ss::sandbox {

namespace detail {
SS_API extern std::atomic<bool> g_locked_in;
}  // namespace detail

// A filter is in force: only reads, writes and waits from now on.
inline bool locked_in() { return detail::g_locked_in.load(std::memory_order_relaxed); }
// The program installed a filter.
SS_API void enter();

// Gives the CPU away while spinning: sched_yield, or nothing once locked
// in (no filter we know of allows it).
SS_API void yield_cpu();

}  // namespace ss::sandbox
