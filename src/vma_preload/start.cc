#include "vma_preload/start.h"

#include <pthread.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "core/base/log.h"
#include "libvmacompat/settings.h"
#include "libvmacompat/stats_process.h"
#include "vma_preload/banner.h"
#include "vma_preload/inert_settings.h"
#include "vma_preload/stats_file.h"

namespace ss::vma::preload {
namespace {

pthread_once_t g_once = PTHREAD_ONCE_INIT;

void start_once() {
  // The face's logs follow the face's own setting, as libvma's do.
  try {
    log::set_threshold(static_cast<int>(settings::trace_level()));
    // VMA_LOG_FILE: a file that cannot be opened is named on stderr, once.
    if (const std::string file = settings::path_with_pid(settings::Id::kLogFile, getpid());
        !file.empty()) {
      if (const int err = log::set_file(file.c_str()))
        SS_WARN("VMA_LOG_FILE %s: %s; logging to stderr", file.c_str(), strerror(-err));
    }
    open_stats_file();
    print_banner();
    warn_inert_settings();
  } catch (...) {  // never through pthread_once or a constructor
    SS_WARN("libvma.so: start-up ran out of memory; the banner is incomplete");
  }
}

__attribute__((constructor)) void at_load() { start(); }

}  // namespace

void start() { pthread_once(&g_once, start_once); }

stats::Publisher* socket_stats() {
  if (stats::Publisher* p = stats::process_stats()) return p;
  return stats::start_process_stats(
      settings::get_string(settings::Id::kStatsShmemDir),
      static_cast<uint32_t>(settings::get(settings::Id::kStatsFdNum)));
}

}  // namespace ss::vma::preload
