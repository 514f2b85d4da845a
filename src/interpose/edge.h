// No exception crosses the C ABI (core/base/exception_errno.h; librsocket's
// edge() is the same for its -errno internals): a preload's own work either
// fails its call with -1/errno or, beside a libc call that already
// succeeded, is given up with one warning, the socket left to the kernel
// unrecorded. Inside each, cancellation acts only where the call sleeps
// (core/base/cancel.h) and goes on through them: the libc calls they stand
// in for that wait are cancellation points.
#pragma once
#include <cerrno>

#include "core/base/cancel.h"
#include "core/base/exception_errno.h"
#include "core/base/log.h"
#include "interpose/signal_count.h"

namespace ss::interpose {

// f's result (a count, or -1 and errno), or -1 with the errno of what f threw.
template <class F>
auto edge(F&& f) -> decltype(f()) {
  const NoCancelScope no_cancel;
  try {
    return f();
  } catch (abi::__forced_unwind&) {
    forced_unwind_onward<Cancel::kPoint>();
  } catch (...) {
    errno = current_exception_errno();
  }
  return -1;
}

// edge() inside a BusyScope: a handler interrupting f is served by the
// kernel (the offloaded data paths, libvma's Extra API entries and the
// calls that keep its state), never by the locks held there.
template <class F>
auto edge_call(F&& f) -> decltype(f()) {
  BusyScope busy;
  return edge(f);
}

// Bookkeeping after libc's call: errno kept, failures warned and dropped
// (a cancellation in a sleep goes on: connect's wait, close's linger).
template <class F>
void edge_quiet(const char* what, int fd, F&& f) {
  const int saved = errno;
  const NoCancelScope no_cancel;
  try {
    f();
  } catch (abi::__forced_unwind&) {
    forced_unwind_onward<Cancel::kPoint>();
  } catch (...) {
    SS_WARN("%s fd %d: the preload could not record it (out of memory); the kernel serves it", what,
            fd);
  }
  errno = saved;
}

}  // namespace ss::interpose
