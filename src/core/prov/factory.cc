#include "core/prov/factory.h"

#include <netinet/in.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/base/config.h"
#include "core/base/log.h"
#include "core/prov/listener_set.h"
#include "core/prov/shm/shm_endpoint.h"
#include "core/prov/soft/listener.h"
#include "core/prov/soft/stream_endpoint.h"
#include "core/prov/verbs/verbs_endpoint.h"
#include "core/prov/verbs/verbs_listener.h"
#include "core/res/netdev_map.h"
#include "core/res/verbs_manager.h"

namespace ss::prov {

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kAuto: return "auto";
    case Kind::kShm: return "shm";
    case Kind::kTcp: return "tcp";
    case Kind::kVerbs: return "verbs";
  }
  return "?";
}

bool has_local_port(int sock) {
  sockaddr_storage name{};
  socklen_t len = sizeof name;
  if (::getsockname(sock, reinterpret_cast<sockaddr*>(&name), &len)) return false;
  return name.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&name)->sin6_port != 0
                                    : reinterpret_cast<sockaddr_in*>(&name)->sin_port != 0;
}

bool is_local_address(const sockaddr* dst, socklen_t len) {
  if (len < sizeof(sa_family_t) || len > sizeof(sockaddr_storage)) return false;
  // Binding succeeds only for an address this namespace owns.
  sockaddr_storage ss{};
  memcpy(&ss, dst, len);
  if (ss.ss_family == AF_INET)
    reinterpret_cast<sockaddr_in*>(&ss)->sin_port = 0;
  else if (ss.ss_family == AF_INET6)
    reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port = 0;
  else
    return false;
  int fd = ::socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  bool local = ::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) == 0;
  ::close(fd);
  return local;
}

namespace {
Kind configured() { return static_cast<Kind>(config::get_int(config::Id::kProvider)); }

// Without RDMA: shm for a peer on this host, tcp otherwise.
Kind software_kind(const sockaddr* dst, socklen_t len) {
  return is_local_address(dst, len) ? Kind::kShm : Kind::kTcp;
}

// The kernel socket (tcp provider, when `with_tcp`) and the shm rendezvous;
// *out stays empty when the configuration wants neither.
int create_soft_listener(int sock, bool with_tcp, std::unique_ptr<Listener>* out);

// listen(2) picks an ephemeral port for an unbound socket; the rdma_cm
// listener, made first, needs that port already.
int bind_if_unbound(int sock) {
  if (has_local_port(sock)) return 0;
  // getsockname of an unbound socket is the wildcard of its family, port 0.
  sockaddr_storage name{};
  socklen_t len = sizeof name;
  if (::getsockname(sock, reinterpret_cast<sockaddr*>(&name), &len)) return -errno;
  return ::bind(sock, reinterpret_cast<sockaddr*>(&name), len) ? -errno : 0;
}

// Connects a unix socket to the shm rendezvous of `dst`, trying the exact
// address, then the wildcard of its family; only a rendezvous of our own
// user (or root) is taken.
int dial_rendezvous(const sockaddr* dst, socklen_t len, int* out) {
  sockaddr_storage wild{};
  memcpy(&wild, dst, len);
  if (wild.ss_family == AF_INET)
    reinterpret_cast<sockaddr_in*>(&wild)->sin_addr.s_addr = htonl(INADDR_ANY);
  else
    reinterpret_cast<sockaddr_in6*>(&wild)->sin6_addr = in6addr_any;
  int rc = -ECONNREFUSED;
  for (const sockaddr* a : {dst, reinterpret_cast<const sockaddr*>(&wild)}) {
    sockaddr_un un;
    socklen_t un_len;
    if ((rc = shm::rendezvous_name(a, len, &un, &un_len))) return rc;
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&un), un_len) == 0) {
      // Before a byte goes to it; another user's name is passed over.
      if (shm::peer_trusted(fd, false)) {
        *out = fd;
        return 0;
      }
      rc = -ECONNREFUSED;
    } else {
      rc = errno == EAGAIN ? -ECONNREFUSED : -errno;  // backlog full: as a refused TCP SYN
    }
    ::close(fd);
  }
  return rc;
}

int create_shm_active(int sock, const sockaddr* dst, socklen_t len,
                      std::unique_ptr<Endpoint>* out) {
  int ufd = -1;
  int rc = dial_rendezvous(dst, len, &ufd);
  if (rc) return rc;
  // Give the rsocket a real local name: bind its kernel socket beside the peer.
  sockaddr_storage local{};
  socklen_t local_len = sizeof local;
  if (::getsockname(sock, reinterpret_cast<sockaddr*>(&local), &local_len) == 0) {
    bool unbound = local.ss_family == AF_INET
                       ? reinterpret_cast<sockaddr_in*>(&local)->sin_port == 0
                       : reinterpret_cast<sockaddr_in6*>(&local)->sin6_port == 0;
    if (unbound) {
      sockaddr_storage b{};
      memcpy(&b, dst, len);
      if (b.ss_family == AF_INET)
        reinterpret_cast<sockaddr_in*>(&b)->sin_port = 0;
      else
        reinterpret_cast<sockaddr_in6*>(&b)->sin6_port = 0;
      if (::bind(sock, reinterpret_cast<sockaddr*>(&b), len) == 0) {
        local_len = sizeof local;
        ::getsockname(sock, reinterpret_cast<sockaddr*>(&local), &local_len);
      }
    }
  }
  auto ep = shm::ShmEndpoint::make_active(ufd, local, local_len, dst, len);
  if (!ep) return errno == EMFILE || errno == ENFILE ? -errno : -ENOMEM;  // it closed ufd
  *out = std::move(ep);
  return 0;
}

std::unique_ptr<Endpoint> make_shm_passive(int fd, const uint8_t* pdata, size_t len) {
  return shm::ShmEndpoint::make_passive(fd, pdata, len);
}
}  // namespace

int choose_kind(const sockaddr* dst, socklen_t len, Kind* kind) {
  switch (configured()) {
    case Kind::kTcp:
      *kind = Kind::kTcp;
      return 0;
    case Kind::kShm:
      *kind = Kind::kShm;
      return 0;
    case Kind::kVerbs:
      if (res::device_count() > 0) {
        *kind = Kind::kVerbs;
        return 0;
      }
      SS_WARN("SLIPSTREAM_PROVIDER=verbs, but this host has no RDMA device");
      return -ENODEV;
    case Kind::kAuto:
      break;
  }
  // auto: verbs when the interface that carries traffic to dst has an
  // RDMA device (create_active still falls back if rdma_cm refuses at once).
  *kind = res::rdma_serves(dst, len) ? Kind::kVerbs : software_kind(dst, len);
  return 0;
}

bool can_route() {
  Kind k = configured();
  return (k == Kind::kAuto || k == Kind::kVerbs) && res::device_count() > 0;
}

int create_active(Kind kind, int sock, const sockaddr* dst, socklen_t len,
                  std::unique_ptr<Endpoint>* out, const void* route, size_t route_len) {
  if (kind == Kind::kVerbs) {
    int rc = verbs::VerbsEndpoint::make_active(sock, dst, len, route, route_len, out);
    if (rc == 0 || configured() == Kind::kVerbs) return rc;
    SS_DEBUG("verbs unavailable for this peer (%s); using the software providers",
             strerror(-rc));
    kind = software_kind(dst, len);
  }
  if (kind == Kind::kShm) {
    int rc = create_shm_active(sock, dst, len, out);
    // auto: a local peer without a rendezvous (e.g. not a Slipstream
    // listener of ours, or another user's) is tried over tcp.
    if (rc == 0 || configured() == Kind::kShm) return rc;
    SS_DEBUG("shm rendezvous unavailable (%s); using tcp", strerror(-rc));
    kind = Kind::kTcp;
  }
  if (kind != Kind::kTcp) return -ENOTSUP;
  auto ep = soft::StreamEndpoint::make_active(kind, sock, dst, len);
  if (!ep) return -EINVAL;
  *out = std::move(ep);
  return 0;
}

int create_listener(int sock, std::unique_ptr<Listener>* out, int backlog) {
  if (int rc = bind_if_unbound(sock)) return rc;
  Kind want = configured();
  std::unique_ptr<Listener> rdma;
  bool rdma_has_tcp_port = false;
  if (want == Kind::kAuto || want == Kind::kVerbs) {
    // Before the kernel socket listens: an iWARP device needs the port.
    int rc = verbs::VerbsListener::create(sock, backlog, &rdma, &rdma_has_tcp_port);
    if (rc && want == Kind::kVerbs) {
      SS_WARN("SLIPSTREAM_PROVIDER=verbs: cannot listen over rdma_cm: %s", strerror(-rc));
      return rc;
    }
    if (rc && rc != -ENODEV) SS_INFO("rdma_cm listener unavailable (%s)", strerror(-rc));
  }
  if (!rdma_has_tcp_port) {
    if (::listen(sock, backlog) < 0) return -errno;
  } else if (want == Kind::kAuto) {
    SS_INFO("an iWARP device holds this listener's port in TCP's port space: "
            "no tcp-provider peers, verbs and shm only");
  }
  std::unique_ptr<Listener> soft;
  if (int rc = create_soft_listener(sock, !rdma_has_tcp_port, &soft)) return rc;
  if (!rdma || !soft) {
    *out = rdma ? std::move(rdma) : std::move(soft);
    return 0;
  }
  std::unique_ptr<ListenerSet> set;
  int rc;
  if ((rc = ListenerSet::create(&set)) || (rc = set->add(std::move(soft))) ||
      (rc = set->add(std::move(rdma))))
    return rc;
  *out = std::move(set);
  return 0;
}

namespace {
int create_soft_listener(int sock, bool with_tcp, std::unique_ptr<Listener>* out) {
  Kind want = configured();
  if (!with_tcp && want != Kind::kAuto && want != Kind::kShm) return 0;
  std::unique_ptr<soft::StreamListener> l;
  int rc = soft::StreamListener::create(with_tcp ? sock : -1, Kind::kTcp, &l);
  if (rc) return rc;
  if (want == Kind::kAuto || want == Kind::kShm) {
    // The shm rendezvous: an abstract unix socket named after our address.
    sockaddr_storage name{};
    socklen_t name_len = sizeof name;
    sockaddr_un un;
    socklen_t un_len;
    int ufd = -1;
    if (::getsockname(sock, reinterpret_cast<sockaddr*>(&name), &name_len) == 0 &&
        shm::rendezvous_name(reinterpret_cast<sockaddr*>(&name), name_len, &un, &un_len) == 0 &&
        (ufd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) >= 0 &&
        ::bind(ufd, reinterpret_cast<sockaddr*>(&un), un_len) == 0 && ::listen(ufd, 128) == 0) {
      rc = l->add_socket(ufd, Kind::kShm, &make_shm_passive, true);
      if (rc) ::close(ufd);
    } else {
      SS_INFO("shm rendezvous for listener fd %d unavailable (errno %d); tcp only", sock, errno);
      if (ufd >= 0) ::close(ufd);
    }
  }
  *out = std::move(l);
  return 0;
}

}  // namespace

}  // namespace ss::prov
