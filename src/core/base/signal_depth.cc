#include "core/base/signal_depth.h"

namespace ss {

namespace {
[[gnu::tls_model("initial-exec")]] thread_local int t_running = 0;
}  // namespace

int& signal_handlers_running() noexcept { return t_running; }

}  // namespace ss
