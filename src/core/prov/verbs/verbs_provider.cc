// The verbs provider's registration: auto's first choice wherever an RDMA
// device leads to the peer. Its listener comes first, before the kernel
// socket listens, because an iWARP device must claim the port.
#include <cerrno>
#include <cstring>

#include "core/base/log.h"
#include "core/prov/connection.h"
#include "core/prov/registry.h"
#include "core/prov/verbs/verbs_endpoint.h"
#include "core/prov/verbs/verbs_listener.h"
#include "core/res/netdev_map.h"
#include "core/res/verbs_manager.h"

namespace ss::prov::verbs {

namespace {

bool has_device() { return res::device_count() > 0; }

int probe(const Peer& peer, bool named) {
  if (!named) return res::rdma_serves(peer.dst, peer.len) && !res::usable_here() ? 0 : -ENETUNREACH;
  if (int rc = res::usable_here()) return rc;
  int n = res::device_count();
  if (n > 0) return 0;
  if (n < 0) return n;  // out of descriptors: as the call that needed one
  SS_WARN("SLIPSTREAM_PROVIDER=verbs, but this host has no RDMA device");
  return -ENODEV;
}

// auto goes on to the next provider if rdma_cm refuses at once.
int create(const Peer& peer, std::unique_ptr<Endpoint>* out) {
  return VerbsEndpoint::make_active(peer.sock, peer.dst, peer.len, peer.route, peer.route_len,
                                    peer.off_stream, out);
}

int listen(ListenSite* site, bool named, std::unique_ptr<Listener>* out) {
  bool tcp_port = false;
  int rc = VerbsListener::create(site->sock, site->backlog, out, &tcp_port);
  if (rc && named) {
    SS_WARN("SLIPSTREAM_PROVIDER=verbs: cannot listen over rdma_cm: %s", strerror(-rc));
    return rc;
  }
  if (rc) {
    if (rc != -ENODEV) SS_INFO("rdma_cm listener unavailable (%s)", strerror(-rc));
    return 0;
  }
  if (tcp_port) {
    site->kernel_port_taken = true;
    if (!named)
      SS_INFO(
          "an iWARP device holds this listener's port in TCP's port space: "
          "no tcp-provider peers, verbs and shm only");
  }
  return 0;
}

constexpr ConnectionOps kOps{.preference = 30,
                             .probe = probe,
                             .create = create,
                             .listen = listen,
                             .can_route = has_device,
                             .listens_always = false};
constexpr Descriptor kDescriptor{"verbs", Family::kConnection, &kOps};
const Registration registration(kDescriptor);

}  // namespace

}  // namespace ss::prov::verbs
