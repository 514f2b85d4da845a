#include "vma_preload/extra_api.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "core/base/fd_table.h"
#include "core/base/log.h"
#include "libvmacompat/conf_file.h"
#include "libvmacompat/extra_table.h"
#include "libvmacompat/stats_format.h"
#include "vma_preload/decision.h"
#include "interpose/edge.h"
#include "vma_preload/socket_record.h"
#include "vma_preload/ring_fds.h"
#include "vma_preload/socketxtreme.h"
#include "vma_preload/zcopy.h"

namespace ss::vma::preload {
namespace {

constexpr const char* kFrame = "==================================================";

// The socket's record, then its counters as vma_stats -v 3 shows them.
void dump_one(log::Level level, int fd) {
  const auto s = FdTable::instance().get<SocketRecord>(fd, FdKind::kVmaSocket);
  if (!s) return;  // as libvma: a socket it has no object for prints nothing
  log::write(level, "==================== SOCKET FD ===================");
  log::write(level, "Fd number : %d", fd);
  log::write(level, "Protocol : %s", s->protocol == IPPROTO_UDP ? "PROTO_UDP" : "PROTO_TCP");
  log::write(level, "Family : %s", s->family == AF_INET6 ? "AF_INET6" : "AF_INET");
  const Decision d = s->decision();
  if (UdpOffload* o = s->offload_quiet())
    log::write(level, "Is offloaded : true (%zu netdev(s))", o->legs());
  else if (s->tcp_on_rings())
    log::write(level, "Is offloaded : true (our TCP on the rings)");
  else
    log::write(level, "Is offloaded : false (kernel: %s)", d.why);
  log::write(level, "VMA decision : %s", transport_name(d.wanted));
  log::write(level, "Ring allocation logic : rx %d, tx %d (every logic shares the netdev's rings)",
             s->ring_logic.rx().logic, s->ring_logic.tx().logic);
  stats::SocketBlock b;
  if (!s->stats.snapshot(&b)) {
    log::write(level, "Stats block : none free");
  } else {
    char* text = nullptr;
    size_t size = 0;
    if (FILE* f = open_memstream(&text, &size)) {
      stats::print_socket_full(f, b);
      fclose(f);
      for (char *line = text, *end; line && *line; line = end ? end + 1 : nullptr) {
        end = std::strchr(line, '\n');
        if (end) *end = 0;
        if (*line) log::write(level, "%s", line);
      }
      free(text);
    }
  }
  log::write(level, "%s", kFrame);
}

// The entries as the table holds them: -1/errno, never an exception.
int entry_add_conf_rule(const char* rule) {
  return interpose::edge_call([&] { return add_conf_rule(rule); });
}
int entry_thread_offload(int offload, pthread_t tid) {
  return interpose::edge_call([&] { return thread_offload(offload, tid); });
}
int entry_dump_fd_stats(int fd, int level) {
  return interpose::edge_call([&] { return dump_fd_stats(fd, level); });
}

}  // namespace

int dump_fd_stats(int fd, int level) {
  if (level < 0) return 0;  // VLOG_NONE
  if (level > 8) level = 8;
  const auto lv = static_cast<log::Level>(level);
  if (!log::enabled(lv)) return 0;
  log::write(lv, "%s", kFrame);
  if (fd) {
    log::write(lv, "============ DUMPING FD %d STATISTICS ============", fd);
    dump_one(lv, fd);
  } else {
    log::write(lv, "======= DUMPING STATISTICS FOR ALL OPEN FDS ======");
    for (int i = 0, n = highest_tracked_fd(); i <= n; ++i) dump_one(lv, i);
  }
  log::write(lv, "%s", kFrame);
  return 0;
}

vma_api_t* extra_api() {
  static vma_api_t table = [] {
    vma_api_t given{};
    given.add_conf_rule = entry_add_conf_rule;
    given.thread_offload = entry_thread_offload;
    given.dump_fd_stats = entry_dump_fd_stats;
    add_rx_entries(&given);
    add_ring_entries(&given);
    add_xtreme_entries(&given);
    return build_extra_table(given);
  }();
  return &table;
}

}  // namespace ss::vma::preload
