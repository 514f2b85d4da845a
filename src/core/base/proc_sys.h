// A kernel tunable read from /proc/sys, where the system's TCP settings
// live (tcp_keepalive_time, tcp_wmem, tcp_timestamps, somaxconn, ...).
#pragma once
#include <cstddef>

#include "core/base/api.h"

namespace ss {

// The field'th number (0: the first) of the /proc/sys file at `path`
// ("net/ipv4/tcp_wmem"), or `dflt` when the file or the field cannot be
// read.
SS_API long proc_sys_number(const char* path, int field, long dflt);

// The most connections Linux's accept queue holds for listen(fd,
// backlog): the backlog capped by net.core.somaxconn (a negative one is
// the cap), plus one (the queue is full only past the backlog).
SS_API size_t accept_queue_limit(int backlog);

}  // namespace ss
