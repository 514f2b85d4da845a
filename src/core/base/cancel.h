// Thread cancellation at the C ABI edges. pthread_cancel of a thread
// blocked in a cancellation point (accept, connect, recv, send, read,
// write, poll, select, epoll_wait, close: glibc declares them without
// __THROW) unwinds it with glibc's forced unwind, which no catch may
// swallow (glibc aborts: "exception not rethrown"). An edge that is such a
// call lets it go on (our destructors run on the way); any other edge
// ends the program as its noexcept would, or, when its call may wait
// (sendfile), holds off cancellation meanwhile, as the kernel's call is
// no cancellation point.
#pragma once
#include <pthread.h>

#include <cxxabi.h>
#include <exception>

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

// No cancellation from construction to destruction (a pending one acts
// at the thread's next cancellation point after).
class NoCancelScope {
 public:
  NoCancelScope() { pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old_); }
  ~NoCancelScope() { pthread_setcancelstate(old_, nullptr); }
  NoCancelScope(const NoCancelScope&) = delete;
  NoCancelScope& operator=(const NoCancelScope&) = delete;

 private:
  int old_ = PTHREAD_CANCEL_ENABLE;
};

}  // namespace ss
