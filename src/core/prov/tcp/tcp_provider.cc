// The tcp provider's registration: kernel TCP reaches every peer, so it is
// auto's last choice, and its listener is the rsocket's own kernel socket,
// or, for a program's socket (off_stream), a side listener beside it that
// peers find through a UDP probe (side_probe.h).
#include <sys/socket.h>

#include <cstring>

#include "core/prov/connection.h"
#include "core/prov/registry.h"
#include "core/prov/sock_addr.h"
#include "core/prov/tcp/side_listener.h"
#include "core/prov/tcp/side_probe.h"
#include "core/prov/tcp/tcp_endpoint.h"
#include "core/prov/util/stream_listener.h"

namespace ss::prov::tcp {

namespace {

int probe(const Peer&, bool) { return 0; }

int create(const Peer& peer, std::unique_ptr<Endpoint>* out) {
  if (!peer.off_stream) {
    auto ep = TcpEndpoint::make_active(peer.sock, peer.dst, peer.len);
    if (!ep) return -EINVAL;
    *out = std::move(ep);
    return 0;
  }
  // The program's port: ask first, then dial the side port it names.
  if (peer.len > sizeof(sockaddr_storage)) return -EINVAL;
  int side = side_port_of(peer.dst, peer.len);
  if (side < 0) return side;
  sockaddr_storage dst{};
  memcpy(&dst, peer.dst, peer.len);
  const uint16_t port = port_of(dst);
  set_port(&dst, static_cast<uint16_t>(side));
  auto ep = TcpEndpoint::make_active(peer.sock, reinterpret_cast<sockaddr*>(&dst), peer.len);
  if (!ep) return -EINVAL;
  ep->show_port(port);
  *out = std::move(ep);
  return 0;
}

int listen(ListenSite* site, bool, std::unique_ptr<Listener>* out) {
  if (site->off_stream) return SideListener::create(site->sock, site->backlog, out);
  if (site->kernel_port_taken) return 0;  // no tcp-provider peers then
  if (::listen(site->sock, site->backlog) < 0) return -errno;
  return util::StreamListener::create(site->sock, kProto, &TcpEndpoint::make_passive, false, out);
}

// The stream is `fd` itself: the state names no descriptor.
int restore(int fd, const uint8_t* state, size_t len, const Renumber&,
            std::unique_ptr<Endpoint>* out) {
  *out = TcpEndpoint::make_restored(fd, state, len);
  return *out ? 0 : -EPROTO;
}

constexpr ConnectionOps kOps{.preference = 10,
                             .probe = probe,
                             .create = create,
                             .listen = listen,
                             .can_route = nullptr,
                             .listens_always = true,
                             .restore = restore};
constexpr Descriptor kDescriptor{"tcp", Family::kConnection, &kOps};
const Registration registration(kDescriptor);

}  // namespace

}  // namespace ss::prov::tcp
