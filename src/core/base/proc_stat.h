// What /proc/PID/stat says about a process that tells whether it is the
// one we knew: its state, its parent, its start time; and whether its
// main thread is exiting.
#pragma once
#include <sys/types.h>

#include <cstdint>

#include "core/base/api.h"

namespace ss {

struct ProcStat {
  char state = 0;            // field 3: 'Z' a zombie, 'X' dead
  pid_t ppid = 0;            // field 4
  unsigned flags = 0;        // field 9: the kernel's PF_* (0x4 PF_EXITING)
  uint64_t start_ticks = 0;  // field 22: clock ticks after boot
};

// False when pid's file cannot be read or parsed (the process is gone,
// or /proc is not there). Raw system calls: usable in a fork child and
// beside the preloads' own open, read and close.
SS_API bool read_proc_stat(pid_t pid, ProcStat* out);

}  // namespace ss
