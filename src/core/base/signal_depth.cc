#include "core/base/signal_depth.h"

namespace ss {

namespace {
[[gnu::tls_model("initial-exec")]] thread_local int t_running = 0;
}  // namespace

namespace detail {
std::atomic<void (*)()> g_quiet_enter{nullptr}, g_quiet_leave{nullptr};
}  // namespace detail

int& signal_handlers_running() noexcept { return t_running; }

void set_quiet_sleep_hooks(void (*enter)(), void (*leave)()) noexcept {
  detail::g_quiet_leave.store(leave, std::memory_order_release);
  detail::g_quiet_enter.store(enter, std::memory_order_release);
}

}  // namespace ss
