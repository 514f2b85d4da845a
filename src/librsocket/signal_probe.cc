#include "librsocket/signal_probe.h"

#include <atomic>

#include "librsocket/preload_hooks.h"

namespace ss::rs::signal_probe {
namespace {
std::atomic<uint64_t (*)()> g_ran{nullptr};
std::atomic<int (*)(uint64_t*, int)> g_interrupted{nullptr};
}  // namespace

uint64_t seen() {
  const auto ran = g_ran.load(std::memory_order_acquire);
  return ran ? ran() : 0;
}

bool interrupted(uint64_t* seen, bool restartable) {
  const auto f = g_interrupted.load(std::memory_order_acquire);
  return f && f(seen, restartable);
}

uint64_t (*count())() { return g_ran.load(std::memory_order_acquire); }

}  // namespace ss::rs::signal_probe

extern "C" __attribute__((visibility("default"))) void ss_rspreload_signal_probe(
    uint64_t (*ran)(void), int (*interrupted)(uint64_t* seen, int restartable)) {
  ss::rs::signal_probe::g_interrupted.store(interrupted, std::memory_order_release);
  ss::rs::signal_probe::g_ran.store(ran, std::memory_order_release);
}
