// Destroying a connection's rdma_cm objects, now or on a service thread.
// Why later: for an active id whose connect still awaits its reply, the
// kernel's iWARP connection manager blocks rdma_disconnect and
// rdma_destroy_id (iw_cm_connect's CONNECT_WAIT) and siw's queue pair
// destroy (the connect holds a reference to it) until that reply, which
// from a stopped or overloaded listener comes only at the device's own
// MPA timeout. A connect that ran out of time (connect_timeout) leaves
// that wait to the thread instead of the closing caller.
#pragma once
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

namespace ss::prov::verbs {

struct CmObjects {
  rdma_cm_id* id = nullptr;
  bool qp = false;  // id's queue pair was created
  ibv_cq* cq = nullptr;
  ibv_comp_channel* comp = nullptr;
  rdma_event_channel* ch = nullptr;
};

// Acknowledges every completion event waiting on `comp` for `cq` (both
// may be null): a completion queue with events not acknowledged cannot be
// destroyed (ibv_destroy_cq waits for them).
void ack_cq_events(ibv_comp_channel* comp, ibv_cq* cq);

// Destroys them in order: queue pair, then (its last events acknowledged)
// completion queue and channel, id, event channel.
void destroy_cm_objects(const CmObjects& o);

// The same on the service thread "ss-verbs-reap", or here when that
// thread cannot start.
void destroy_cm_objects_later(const CmObjects& o);

}  // namespace ss::prov::verbs
