#include "libvmacompat/stats_process.h"

#include <pthread.h>
#include <stdlib.h>

#include <atomic>
#include <mutex>

namespace ss::vma::stats {

namespace {

std::atomic<Publisher*> g_publisher{nullptr};

void remove_at_exit() {
  if (Publisher* p = g_publisher.load(std::memory_order_acquire)) p->remove_file();
}

void detach_in_child() {
  if (Publisher* p = g_publisher.load(std::memory_order_acquire)) p->detach_after_fork();
}

}  // namespace

Publisher* start_process_stats(const std::string& dir, uint32_t fd_blocks) {
  static std::once_flag once;
  std::call_once(once, [&] {
    std::unique_ptr<Publisher> p = Publisher::create(dir, fd_blocks);
    if (!p) p = Publisher::create("", fd_blocks);  // as libvma: private memory (already logged)
    if (!p) return;
    // Never destroyed: handles may be used until the process ends.
    g_publisher.store(p.release(), std::memory_order_release);
    atexit(remove_at_exit);
    pthread_atfork(nullptr, nullptr, detach_in_child);
  });
  return g_publisher.load(std::memory_order_acquire);
}

Publisher* process_stats() { return g_publisher.load(std::memory_order_acquire); }

}  // namespace ss::vma::stats
