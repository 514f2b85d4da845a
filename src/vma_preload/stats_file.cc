#include "vma_preload/stats_file.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/base/append_file.h"
#include "core/base/log.h"
#include "libvmacompat/settings.h"
#include "libvmacompat/stats_format.h"
#include "vma_preload/socket_record.h"

namespace ss::vma::preload {
namespace {

constinit AppendFile g_stats_file;

// The sockets still open when the process exits: libvma destroys its
// sockets then, and writes theirs.
void write_open_sockets() {
  for_each_record([](int, const std::shared_ptr<SocketRecord>& s) {
    write_socket_stats(*s);
    return true;
  });
}

}  // namespace

void open_stats_file() {
  const std::string path = settings::path_with_pid(settings::Id::kStatsFile, getpid());
  if (path.empty()) return;
  if (const int err = g_stats_file.set(path.c_str())) {
    SS_WARN("VMA_STATS_FILE %s: %s; no socket statistics are written", path.c_str(),
            strerror(-err));
    return;
  }
  atexit(write_open_sockets);
}

void write_socket_stats(SocketRecord& s) noexcept {
  // A fork child's blocks start as copies of its parent's counters, and the
  // file is named by the parent's pid: the parent's reports only.
  if (!g_stats_file.is_set() || in_fork_child()) return;
  stats::SocketBlock b;
  if (!s.stats.snapshot(&b) || !stats::socket_active(b)) return;
  if (s.stats_written.exchange(true, std::memory_order_relaxed)) return;
  char* text = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&text, &size);
  if (!f) return;
  stats::print_socket_full(f, b);
  fclose(f);
  // One write: reports of sockets closing in other threads stay whole.
  if (!g_stats_file.append(text, size))
    SS_DEBUG("VMA_STATS_FILE: fd %d's statistics could not be written", s.fd);
  free(text);
}

}  // namespace ss::vma::preload
