// Signal handlers running on this thread, counted by the preloads'
// trampoline (interpose/signal_count.h). Core's own work asks before it
// waits for anything the work a handler interrupted may hold (fd_table's
// grace periods).
#pragma once
#include "core/base/api.h"

namespace ss {

// This thread's count (static TLS: read and written inside handlers).
SS_API int& signal_handlers_running() noexcept;

}  // namespace ss
