// No exception crosses the C ABI (the project's rule; librsocket's edge()
// is the same idea): the preload's own work either fails its call with
// -1/errno or, beside a libc call that already succeeded, is given up
// with one warning, the socket left to the kernel unrecorded.
#pragma once
#include <cerrno>
#include <new>

#include "core/base/log.h"
#include "interpose/signal_count.h"

namespace ss::vma::preload {

// An Extra API entry: f's result, or -1 with ENOMEM (EIO for anything else).
// Inside a BusyScope: a handler interrupting it is served by the kernel.
template <class F>
int edge_call(F&& f) noexcept {
  interpose::BusyScope busy;
  try {
    return f();
  } catch (const std::bad_alloc&) {
    errno = ENOMEM;
  } catch (...) {
    errno = EIO;
  }
  return -1;
}

// Bookkeeping after libc's call: errno kept, failures warned and dropped.
template <class F>
void edge_quiet(const char* what, int fd, F&& f) noexcept {
  const int saved = errno;
  try {
    f();
  } catch (...) {
    SS_WARN("%s fd %d: the preload could not record it (out of memory); the kernel serves it", what,
            fd);
  }
  errno = saved;
}

}  // namespace ss::vma::preload
