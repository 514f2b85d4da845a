// The program's exit under libvma.so's TCP: the rings' stacks end with
// the process, where Linux's TCP would go on delivering what the program
// sent, closing its connections and answering its peers' FINs. So, last
// of all (a destructor of this library: after the program's atexit
// handlers and static destructors, which may still close sockets), each
// connection the program left open closes as close() would, and the exit
// waits while the peers answer: until no closed connection waits for its
// peer (our data or FIN unacknowledged, their FIN not come), or none has
// moved (ended, or had data acknowledged) for a second or two of their
// retransmission timeouts, whichever is longer (a peer still taking what
// the program sent over a lossy path keeps the exit waiting; a dead one
// ends it), or 30 s passed in all; those left are reset, so a late FIN of
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

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "core/base/log.h"
#include "interpose/export.h"
#include "interpose/real.h"
#include "interpose/signal_count.h"
#include "vma_preload/socket_record.h"
#include "vma_preload/tcp_park.h"
#include "vma_preload/netdev_rings.h"
#include "vma_preload/tcp_offload.h"

namespace ss::vma::preload {
namespace {

using clock = std::chrono::steady_clock;
constexpr auto kQuiet = std::chrono::seconds(1), kMost = std::chrono::seconds(30);
constexpr int kLookMs = 2;  // between looks at the rings: their reply comes at once on a LAN

net::tcp::Stack::ExitWait awaiting(const std::vector<NetdevRings*>& netdevs) {
  net::tcp::Stack::ExitWait all;
  for (NetdevRings* r : netdevs) {
    r->program_look();
    r->frames->flush();
    const net::tcp::Stack::ExitWait w = r->tcp->awaiting_peer();
    all.closing += w.closing;
    all.moved |= w.moved;
    all.longest_rto_us = std::max(all.longest_rto_us, w.longest_rto_us);
  }
  return all;
}

std::atomic<bool> g_exiting{false};

void finish_connections_at_exit() {
  if (interpose::handler_over_busy() || getpid() != tcp_serving_pid()) return;
  const std::vector<NetdevRings*> netdevs = tcp_netdevs();
  if (netdevs.empty() || g_exiting.exchange(true, std::memory_order_relaxed)) return;
  parked_expire(/*all=*/true);  // closed here after a fork, untaken: the kernel's
  for_each_record([](int, const std::shared_ptr<SocketRecord>& s) {
    s->before_exit();
    return true;
  });
  for (NetdevRings* r : netdevs) r->tcp->close_at_exit();
  std::vector<pollfd> fds;
  for (NetdevRings* r : netdevs) r->poll_fds(&fds);
  const clock::time_point start = clock::now();
  clock::time_point moved = start;
  size_t last = 0;
  for (bool first = true;; first = false) {
    const net::tcp::Stack::ExitWait w = awaiting(netdevs);
    last = w.closing;
    if (w.closing == 0) return;
    if (first) SS_DEBUG("exit: %zu TCP connections closing, their peers awaited", w.closing);
    const clock::time_point now = clock::now();
    if (w.moved) moved = now;
    const auto quiet =
        std::max<clock::duration>(kQuiet, std::chrono::microseconds(2 * w.longest_rto_us));
    if (now - moved >= quiet || now - start >= kMost) break;
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
