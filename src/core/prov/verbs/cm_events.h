// rdma_cm helpers of the verbs provider: errno for failure events, path
// records as struct ibv_path_data.
#pragma once
#include <infiniband/sa.h>
#include <rdma/rdma_cma.h>

#include <cstddef>

namespace ss::prov::verbs {

// Positive errno for a failed connection event.
int cm_event_errno(const rdma_cm_event* ev);

// The route of `id` as ibv_path_data entries (the RDMA_ROUTE format):
// 0 and *len = bytes written, -ENOENT (no route) or -EINVAL (buffer too
// small for one entry).
int export_route(const rdma_cm_id* id, void* buf, size_t* len);

// Sets a non-blocking flag on fd; 0 or -errno.
int set_nonblocking(int fd);

}  // namespace ss::prov::verbs
