// Signal handlers running on this thread, counted by the preloads'
// trampoline (interpose/signal_count.h). Core's own work asks before it
// waits for anything the work a handler interrupted may hold (fd_table's
// grace periods).
#pragma once
#include <atomic>

#include "core/base/api.h"

namespace ss {

// This thread's count (static TLS: read and written inside handlers).
SS_API int& signal_handlers_running() noexcept;

namespace detail {
SS_API extern std::atomic<void (*)()> g_quiet_enter, g_quiet_leave;
}  // namespace detail

// The preloads' marks of a quiet sleep (QuietSleep), set once the program
// installs a handler: `leave` is stored first, so a sleep that sees
// `enter` leaves too.
SS_API void set_quiet_sleep_hooks(void (*enter)(), void (*leave)()) noexcept;

// A blocking call's sleep in poll(2) that holds none of the library's
// locks (a send or receive waiting with its connection's lock released:
// only its own turn taken). A handler that interrupts it is served by
// the library as a thread outside it would be (interpose/signal_count.h);
// elsewhere the library may be held under a handler, which it then
// keeps away from. Open only around the poll; nothing without a preload,
// or with `on` false.
class QuietSleep {
 public:
  explicit QuietSleep(bool on) noexcept {
    if (!on) return;
    if (void (*enter)() = detail::g_quiet_enter.load(std::memory_order_acquire)) {
      leave_ = detail::g_quiet_leave.load(std::memory_order_acquire);
      enter();
    }
  }
  ~QuietSleep() {
    if (leave_) leave_();
  }
  QuietSleep(const QuietSleep&) = delete;
  QuietSleep& operator=(const QuietSleep&) = delete;

 private:
  void (*leave_)() = nullptr;
};

}  // namespace ss
