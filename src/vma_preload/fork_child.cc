// fork() under libvma.so. The parent keeps everything: its rings, the
// XDP program, its offloaded sockets. A child of a process that had rings
// gets its sockets served by their kernel sockets (in_fork_child()): the
// rings are single-producer/single-consumer queues the parent keeps
// using, and the steering program sends the port's frames to the
// parent's rings, so the child's inherited socket sends through the
// kernel and receives what reaches its kernel socket: its first call asks
// the parent to lend the port to the kernel socket while the child lives
// (fork_share.h), after which both receive there, as from a kernel socket
// shared by fork; and everything once no process holds the port on rings
// (the parent closed the socket or exited). The child closes its copies of the
// descriptors that keep the rings and the program alive, so they go with
// the parent; it keeps a reference to every inherited record, whose
// destructor would take the port's steering away from the parent and
// give lent frames to the parent's fill rings. Its new sockets are the
// kernel's (the child makes no rings), and it takes none of the locks a
// parent's thread may have held at fork (the rings' registry, a socket's
// offload and multicast locks): those paths end first in a child. The
// rings' memory is not in the child (MADV_DONTFORK, netdev_rings.cc; their
// mappings too, xsk_kernel.h): pinned, fork would copy it whole. Only the
// frames the program holds then follow, as the child's own copies
// (ring_frames_before_fork). A
// child of a process without rings is a process like any other. A child
// whose parent made the rings and exited takes them over
// (take_over_before_fork). vfork is fork here, as libvma makes it: a
// vfork child shares its parent's memory, so its calls under the preload
// (a close of an offloaded socket before exec) would change the parent's
// records.
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <vector>

#include "core/base/errno_guard.h"
#include "core/base/fd_table.h"
#include "core/base/log.h"
#include "interpose/export.h"
#include "interpose/real.h"
#include "interpose/signal_count.h"
#include "vma_preload/fork_share.h"
#include "vma_preload/netdev_rings.h"
#include "vma_preload/socket_record.h"
#include "vma_preload/port_holds.h"
#include "vma_preload/tcp_park.h"
#include "vma_preload/tcp_service.h"

namespace ss::vma::preload {

std::atomic<bool> g_fork_child{false};
std::atomic<pid_t> g_pid{::getpid()};
std::atomic<uint64_t> g_forks{0};

namespace {

// Every inherited record, never released (the child's copy of memory;
// allocation is safe in a fork handler under glibc). Each asks the
// rings' owner to share it at its first use here (fork_share.h).
void keep_inherited_records() {
  static auto* kept = new std::vector<std::shared_ptr<SocketRecord>>;
  for_each_record([](int, const std::shared_ptr<SocketRecord>& s) {
    s->start_in_fork_child();
    kept->push_back(s);
    return true;
  });
}

void in_child() {
  ring_frames_after_fork(true);  // first: the program may read them from here on
  g_pid.store(::getpid(), std::memory_order_relaxed);
  fork_share_fork_child();
  close_port_holds_in_fork_child();
  parked_fork_child();
  const bool had_rings = close_rings_in_fork_child();
  tcp_service_fork_child();
  records_fork_child();
  if (!had_rings && !in_fork_child()) return;
  g_fork_child.store(true, std::memory_order_relaxed);
  try {
    keep_inherited_records();
  } catch (...) {
    // Out of memory in a fresh child: a record closed later may still
    // unsteer its port for the parent. Said once.
    SS_WARN("fork child: could not keep the inherited sockets' records");
  }
}

// A fork child whose parent owned the rings and is gone (a daemon's first
// process exits after its fork) takes its inherited listeners onto rings
// of its own before it forks in turn: its children (the daemon's workers)
// then join it, as a parent that made the rings. Its first look at such
// a listener does the same (SocketRecord::join_in_child). Before fork
// itself, not in a prepare handler: other libraries' handlers (the pools'
// registry) hold their locks from theirs on.
void take_over_before_fork() {
  // Not from a signal handler (it may have interrupted malloc or a lock):
  // the first look at the listener does it then.
  if (!in_fork_child() || interpose::in_handler()) return;
  const ErrnoGuard keep;
  std::vector<std::shared_ptr<SocketRecord>> listeners;
  for_each_record([&](int, const std::shared_ptr<SocketRecord>& s) {
    if (s->inherited_listener()) listeners.push_back(s);
    return true;
  });
  // Only a process with such listeners looks at (and waits for) its parent.
  if (listeners.empty() || !fork_share_parent_gone()) return;
  for (const auto& s : listeners) (void)s->listening();
}

// Registered after the fd table's (urcu's) handlers: the child's runs
// after theirs, so its table lookups work.
__attribute__((constructor)) void watch_fork() {
  FdTable::instance();
  pthread_atfork(
      [] {
        // In a signal handler (it may have interrupted a ring's lock or
        // malloc) nothing is copied: a child forked there cannot read the
        // frames.
        ring_frames_before_fork(!interpose::in_handler());
        fork_share_prepare();
      },
      [] {
        ring_frames_after_fork(false);
        g_forks.fetch_add(1, std::memory_order_relaxed);
      },
      in_child);
}

}  // namespace

}  // namespace ss::vma::preload

SS_PRELOAD_EXPORT pid_t fork() {
  ss::vma::preload::take_over_before_fork();
  return ss::interpose::real().fork();
}
SS_PRELOAD_EXPORT pid_t vfork() { return fork(); }
