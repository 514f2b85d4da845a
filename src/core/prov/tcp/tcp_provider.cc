// The tcp provider's registration: kernel TCP reaches every peer, so it is
// auto's last choice, and its listener is the rsocket's own kernel socket.
#include <sys/socket.h>

#include "core/prov/connection.h"
#include "core/prov/registry.h"
#include "core/prov/tcp/tcp_endpoint.h"
#include "core/prov/util/stream_listener.h"

namespace ss::prov::tcp {

namespace {

int probe(const Peer&, bool) { return 0; }

int create(const Peer& peer, std::unique_ptr<Endpoint>* out) {
  auto ep = TcpEndpoint::make_active(peer.sock, peer.dst, peer.len);
  if (!ep) return -EINVAL;
  *out = std::move(ep);
  return 0;
}

int listen(ListenSite* site, bool, std::unique_ptr<Listener>* out) {
  if (site->kernel_port_taken) return 0;  // no tcp-provider peers then
  if (::listen(site->sock, site->backlog) < 0) return -errno;
  return util::StreamListener::create(site->sock, kProto, &TcpEndpoint::make_passive, false, out);
}

constexpr ConnectionOps kOps{
    .preference = 10, .probe = probe, .create = create, .listen = listen, .can_route = nullptr,
    .listens_always = true};
constexpr Descriptor kDescriptor{"tcp", Family::kConnection, &kOps};
const Registration registration(kDescriptor);

}  // namespace

}  // namespace ss::prov::tcp
