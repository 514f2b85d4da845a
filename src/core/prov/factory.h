// Provider selection and construction: the one place that knows which
// providers exist. SLIPSTREAM_PROVIDER=auto picks shm for a peer on this
// host, tcp otherwise, and verbs first where an RDMA device routes to the peer.
#pragma once
#include "core/prov/provider.h"

namespace ss::prov {

// The provider for a connection to `dst` (-ENOTSUP/-ENODEV when the
// configured provider cannot serve it).
int choose_kind(const sockaddr* dst, socklen_t len, Kind* kind);
// True when the kernel socket `sock` is bound to a port.
bool has_local_port(int sock);
// True when `dst` names an address of this host (in this network namespace).
bool is_local_address(const sockaddr* dst, socklen_t len);

// True when the configured providers can follow path records (RDMA_ROUTE):
// verbs, on a host with an RDMA device.
bool can_route();

// Active endpoint for the rsocket whose kernel stream socket is `sock`
// (non-blocking; possibly bound). `route` (RDMA_ROUTE path records) is
// used by verbs instead of route resolution.
int create_active(Kind kind, int sock, const sockaddr* dst, socklen_t len,
                  std::unique_ptr<Endpoint>* out, const void* route = nullptr,
                  size_t route_len = 0);
// Listener serving every provider this host can accept on, for the
// rsocket whose kernel socket `sock` is not listening yet: it listens
// (with `backlog`) unless an iWARP device holds its port (rdma_cm only).
int create_listener(int sock, std::unique_ptr<Listener>* out, int backlog = 128);

}  // namespace ss::prov
