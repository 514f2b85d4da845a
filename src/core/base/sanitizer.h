// Which sanitizer this is built with (gcc says __SANITIZE_*__, clang
// __has_feature): SS_ASAN and SS_TSAN are 1 or undefined, for code and
// tests whose behaviour a sanitizer's runtime changes; and what an
// AddressSanitizer build must be told that its runtime cannot see (the
// helper below is empty elsewhere).
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define SS_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define SS_TSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) && !defined(SS_ASAN)
#define SS_ASAN 1
#endif
#if __has_feature(thread_sanitizer) && !defined(SS_TSAN)
#define SS_TSAN 1
#endif
#endif

#ifdef SS_ASAN
#include <pthread.h>
#include <sanitizer/asan_interface.h>

#include <cstddef>
#endif

namespace ss {

// Call in a catch of abi::__forced_unwind (pthread_cancel, pthread_exit),
// before the rethrow. ASan clears dead frames' redzones on the throws and
// longjmps it intercepts; a forced unwind starts and ends inside libc, so
// the frames it passes stay poisoned and the thread's exit handlers, which
// run on that stack later, are reported. __asan_handle_no_return clears
// this frame and those above (and the fake stack) but only a page below:
// the frames already unwound below are cleared here.
inline void asan_forced_unwind() noexcept {
#ifdef SS_ASAN
  __asan_handle_no_return();
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  void* lo = nullptr;
  size_t size = 0;
  char* here = static_cast<char*>(__builtin_frame_address(0));
  if (pthread_attr_getstack(&attr, &lo, &size) == 0 && here > static_cast<char*>(lo) &&
      here <= static_cast<char*>(lo) + size)
    __asan_unpoison_memory_region(lo, static_cast<size_t>(here - static_cast<char*>(lo)));
  pthread_attr_destroy(&attr);
#endif
}

}  // namespace ss
