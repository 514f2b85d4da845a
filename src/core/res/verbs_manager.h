// The verbs resource manager: one per process, shared by every face. It owns
// what must exist once per device (the protection domain, the async-event
// watcher) and answers "is there RDMA here at all" without flooding logs.
// Device contexts themselves are opened once by librdmacm, which every
// connection goes through; the manager keys its state on them.
#pragma once
#include <infiniband/verbs.h>

namespace ss::res {

class MrCache;

// Number of RDMA devices usable through rdma_cm (0: none, logged once at
// info level), or -EMFILE/-ENFILE when the process has no descriptor left
// to look (nothing is settled then: the next call looks again). Cheap once
// settled.
int device_count();
// True when one of them is an iWARP device (whose rdma_cm listeners take
// ports in the kernel's own TCP port space).
bool any_iwarp_device();

// 0 when this process may use verbs; -EOPNOTSUPP in a fork child of the
// process that opened the devices (logged once per process): librdmacm
// keeps the device contexts it opened, for good, and the kernel refuses
// write() on a uverbs or rdma_cm file to any other process (EACCES), so
// neither the parent's connections nor new ones can work there.
int usable_here();

// The process-wide protection domain of `ctx` (allocated on first use,
// kept for the life of the process), or nullptr with errno set.
ibv_pd* pd_for(ibv_context* ctx);

// The MR cache of the process (registrations by address range).
MrCache& mr_cache();

// Async events (port changes, QP/CQ faults) are read by a watcher thread
// that runs while at least one connection holds a reference, so an idle
// process has no verbs threads. Each ref names the device it uses. 0, or
// -errno when the thread cannot be started (the events then go unread);
// every hold, failed or not, is matched by one release.
int hold_async_events(ibv_context* ctx);
void release_async_events();

// True when libibverbs runs in fork-safe mode (RDMAV_FORK_SAFE or
// IBV_FORK_SAFE set, which the manager honours before any registration).
bool fork_safe();

}  // namespace ss::res
