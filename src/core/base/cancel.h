// Thread cancellation at the C ABI edges. pthread_cancel of a thread
// blocked in a cancellation point (accept, connect, recv, send, read,
// write, poll, select, epoll_wait, close: glibc declares them without
// __THROW) unwinds it with glibc's forced unwind, which no catch may
// swallow (glibc aborts: "exception not rethrown"). An edge that is such a
// call lets it go on (our destructors run on the way); any other edge
// ends the program as its noexcept would.
//
// Inside an edge, cancellation is held off (NoCancelScope) and acts only
// where the call sleeps (CancelPoint, in interruptible_poll), as glibc's
// own calls use non-cancelling internals: a log line's write, a kick's
// read or a destructor's sendmmsg never unwind a call half-way. A call
// that waits and is no cancellation point (sendfile) holds it off
// throughout (NoCancelScope with `sleeps` false).
#pragma once
#include <cxxabi.h>
#include <exception>

#include "core/base/api.h"
#include "core/base/sanitizer.h"

namespace ss {

enum class Cancel : bool { kNo = false, kPoint = true };

// Inside `catch (abi::__forced_unwind&)`: a cancellation point rethrows,
// anything else terminates.
template <Cancel C>
[[noreturn]] void forced_unwind_onward() {
  if constexpr (C == Cancel::kPoint) {
#ifdef SS_ASAN
    asan_forced_unwind();  // ASan does not see its unwind
#endif
    throw;
  }
  std::terminate();
}

// Cancellation held off from construction to destruction, the thread's
// state restored after (a pending request acts at its next cancellation
// point). `sleeps`: the call's sleeps are cancellation points (as the
// program's state allows); false: none is.
class NoCancelScope {
 public:
  SS_API explicit NoCancelScope(bool sleeps = true);
  SS_API ~NoCancelScope();
  NoCancelScope(const NoCancelScope&) = delete;
  NoCancelScope& operator=(const NoCancelScope&) = delete;

 private:
  int old_state_;
  bool old_sleeps_;
};

// A sleep inside an edge: cancellation acts here when the outermost
// NoCancelScope allows it and the program had it enabled. Outside any
// edge it changes nothing. Core's own (interruptible_poll).
class CancelPoint {
 public:
  CancelPoint();
  ~CancelPoint();
  CancelPoint(const CancelPoint&) = delete;
  CancelPoint& operator=(const CancelPoint&) = delete;

 private:
  int old_state_ = -1;  // -1: left as it was
};

}  // namespace ss
