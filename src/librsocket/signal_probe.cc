#include "librsocket/signal_probe.h"

#include "librsocket/preload_hooks.h"

extern "C" __attribute__((visibility("default"))) void ss_rspreload_signal_probe(
    uint64_t (*ran)(void), int (*interrupted)(uint64_t* seen, int restartable)) {
  using namespace ss::rs::signal_probe::detail;
  g_interrupted.store(interrupted, std::memory_order_release);
  g_ran.store(ran, std::memory_order_release);
}
