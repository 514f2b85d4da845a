// The shm provider's registration: auto prefers it for a peer on this host
// (above tcp, below verbs); it is reached through the rendezvous.
#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/base/log.h"
#include "core/prov/connection.h"
#include "core/prov/registry.h"
#include "core/prov/shm/rendezvous.h"
#include "core/prov/shm/shm_endpoint.h"
#include "core/prov/sock_addr.h"
#include "core/prov/util/stream_listener.h"

namespace ss::prov::shm {

namespace {

// Named, it is tried for any peer (a remote one is refused at the dial).
int probe(const Peer& peer, bool named) {
  return named || is_local_address(peer.dst, peer.len) ? 0 : -EHOSTUNREACH;
}

// Gives the rsocket a real local name: binds its unbound kernel socket
// beside the peer, as a kernel connect would.
void bind_beside(int sock, const sockaddr* dst, socklen_t len, sockaddr_storage* local,
                 socklen_t* local_len) {
  if (::getsockname(sock, reinterpret_cast<sockaddr*>(local), local_len) || has_local_port(sock))
    return;
  sockaddr_storage b{};
  memcpy(&b, dst, len);
  if (b.ss_family == AF_INET)
    reinterpret_cast<sockaddr_in*>(&b)->sin_port = 0;
  else
    reinterpret_cast<sockaddr_in6*>(&b)->sin6_port = 0;
  if (::bind(sock, reinterpret_cast<sockaddr*>(&b), len) == 0) {
    *local_len = sizeof *local;
    ::getsockname(sock, reinterpret_cast<sockaddr*>(local), local_len);
  }
}

int create(const Peer& peer, std::unique_ptr<Endpoint>* out) {
  int ufd = -1;
  int rc = dial_rendezvous(peer.dst, peer.len, &ufd);
  if (rc) return rc;
  sockaddr_storage local{};
  socklen_t local_len = sizeof local;
  bind_beside(peer.sock, peer.dst, peer.len, &local, &local_len);
  auto ep = ShmEndpoint::make_active(ufd, local, local_len, peer.dst, peer.len);
  if (!ep) return -EINVAL;  // an address too long; the endpoint it dropped closed ufd
  *out = std::move(ep);
  return 0;
}

// Without a rendezvous the rsocket still listens on the other providers.
int listen(ListenSite* site, bool, std::unique_ptr<Listener>* out) {
  int ufd = -1;
  int rc = open_rendezvous(site->sock, site->backlog, &ufd);
  if (!rc &&
      (rc = util::StreamListener::create(ufd, kProto, &ShmEndpoint::make_passive, true, out)))
    ::close(ufd);  // the listener owns it only once made
  if (rc) SS_INFO("shm rendezvous for listener fd %d unavailable (%s)", site->sock, strerror(-rc));
  return 0;
}

// The stream's socket is in the state (the rsocket's descriptor is the
// program's TCP socket on the connecting side).
int restore(int, const uint8_t* state, size_t len, const Renumber& renumber,
            std::unique_ptr<Endpoint>* out) {
  *out = ShmEndpoint::make_restored(state, len, renumber);
  return *out ? 0 : -EPROTO;
}

constexpr ConnectionOps kOps{.preference = 20,
                             .probe = probe,
                             .create = create,
                             .listen = listen,
                             .can_route = nullptr,
                             .listens_always = false,
                             .restore = restore};
constexpr Descriptor kDescriptor{"shm", Family::kConnection, &kOps};
const Registration registration(kDescriptor);

}  // namespace

}  // namespace ss::prov::shm
