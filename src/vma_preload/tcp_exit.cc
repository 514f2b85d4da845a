// The program's exit under libvma.so's TCP: the rings' stacks end with
// the process, where Linux's TCP would go on delivering what the program
// sent, closing its connections and answering its peers' FINs. So, last
// of all (a destructor of this library: after the program's atexit
// handlers and static destructors, which may still close sockets), each
// connection the program left open closes as close() would, and the exit
// waits while the peers answer: until no closed connection waits for its
// peer (our FIN unacknowledged, theirs not come), one second passes with
// none finishing, or five in all; those left are reset, so a late FIN of
// the peer does not meet the kernel's RST instead. A connection opened
// before a fork goes to its kernel socket first (a child may hold it). A
// fork child, or a child of a raw clone (no fork handler ran: another
// pid), leaves the parent's connections alone, and an exit from a signal
// handler that interrupted the preload's own locks does nothing. Threads
// still running then get EPIPE from a send, never SIGPIPE. An exit by
// `_exit` or `_Exit`, which run no destructor, does the same first (only
// an exit_group system call of the program's own skips it).
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "core/base/log.h"
#include "interpose/export.h"
#include "interpose/real.h"
#include "interpose/signal_count.h"
#include "vma_preload/socket_record.h"
#include "vma_preload/netdev_rings.h"
#include "vma_preload/tcp_offload.h"

namespace ss::vma::preload {
namespace {

using clock = std::chrono::steady_clock;
constexpr auto kQuiet = std::chrono::seconds(1), kMost = std::chrono::seconds(5);
constexpr int kLookMs = 2;  // between looks at the rings: their reply comes at once on a LAN

size_t awaiting(const std::vector<NetdevRings*>& netdevs) {
  size_t n = 0;
  for (NetdevRings* r : netdevs) {
    r->program_look();
    r->frames->flush();
    n += r->tcp->awaiting_peer();
  }
  return n;
}

std::atomic<bool> g_exiting{false};

void finish_connections_at_exit() {
  if (interpose::handler_over_busy() || getpid() != tcp_serving_pid()) return;
  const std::vector<NetdevRings*> netdevs = tcp_netdevs();
  if (netdevs.empty() || g_exiting.exchange(true, std::memory_order_relaxed)) return;
  for_each_record([](int, const std::shared_ptr<SocketRecord>& s) {
    s->before_exit();
    return true;
  });
  for (NetdevRings* r : netdevs) r->tcp->close_at_exit();
  std::vector<pollfd> fds;
  for (NetdevRings* r : netdevs) r->poll_fds(&fds);
  const clock::time_point start = clock::now();
  clock::time_point moved = start;
  size_t last = SIZE_MAX;
  for (;;) {
    const size_t n = awaiting(netdevs);
    if (n == 0) return;
    const clock::time_point now = clock::now();
    if (n < last) {
      if (last == SIZE_MAX) SS_DEBUG("exit: %zu TCP connections closing, their peers awaited", n);
      last = n;
      moved = now;
    }
    if (now - moved >= kQuiet || now - start >= kMost) break;
    interpose::real().poll(fds.data(), fds.size(), kLookMs);
  }
  SS_INFO("exit: %zu TCP connections reset, their peers still closing after %lld ms", last,
          static_cast<long long>(
              std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - start).count()));
  for (NetdevRings* r : netdevs) {
    r->tcp->reset_awaiting_peer();
    r->frames->flush();
  }
}

__attribute__((destructor)) void at_exit() { finish_connections_at_exit(); }

}  // namespace

bool tcp_exiting() { return g_exiting.load(std::memory_order_relaxed); }

}  // namespace ss::vma::preload

SS_PRELOAD_EXPORT void _exit(int status) {
  ss::vma::preload::finish_connections_at_exit();
  ss::interpose::real()._exit(status);
  __builtin_unreachable();
}

SS_PRELOAD_EXPORT void _Exit(int status) { _exit(status); }
