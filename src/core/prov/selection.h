// Choosing and building connection providers. SLIPSTREAM_PROVIDER names one
// (a lookup in the registry) or is auto: the registered providers are
// walked from the highest preference down and each probe decides for
// itself (verbs where an RDMA device leads to the peer, shm for a peer on
// this host, tcp for any peer), so no list of providers is written here.
#pragma once
#include <memory>

#include "core/base/api.h"
#include "core/prov/connection.h"

namespace ss::prov {

// An active endpoint for `peer`: the named provider's, or auto's first
// that accepts the peer and creates one (-ENODEV/-ENOTSUP/-errno otherwise).
SS_API int create_active(const Peer& peer, std::unique_ptr<Endpoint>* out);

// A listener serving every provider that listens for the rsocket whose
// kernel socket `sock` is not listening yet (binding it first if unbound):
// the named provider, or all under auto, plus those that always listen.
// `off_stream`: providers leave `sock`'s stream alone (the preload's
// kernel socket listens for plain TCP clients itself; tcp listens beside
// it, side_listener.h); -ENOTSUP when none listens.
SS_API int create_listener(int sock, std::unique_ptr<Listener>* out, int backlog = 128,
                           bool off_stream = false);

// True when a connection could follow path records (RDMA_ROUTE) with the
// configured providers on this host.
SS_API bool can_route();

}  // namespace ss::prov
