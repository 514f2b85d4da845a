// Threads the library starts for itself (service threads, a provider's
// progress thread) mark themselves, so a preload that stands in for
// libc's names sends their calls straight to libc: they act on the
// library's own descriptors, never on the program's behalf.
#pragma once
#include "core/base/api.h"

namespace ss {

SS_API void mark_library_thread();  // first thing in each such thread
SS_API bool in_library_thread();    // this thread is one of them

}  // namespace ss
