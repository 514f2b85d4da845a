#include "core/prov/factory.h"

#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/base/config.h"
#include "core/base/log.h"
#include "core/prov/soft/listener.h"
#include "core/prov/soft/stream_endpoint.h"

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

int choose_kind(const sockaddr* dst, socklen_t len, Kind* kind) {
  auto wanted = static_cast<Kind>(config::get_int(config::Id::kProvider));
  switch (wanted) {
    case Kind::kTcp:
      *kind = Kind::kTcp;
      return 0;
    case Kind::kShm:
      SS_WARN("provider shm is not available yet (SLIPSTREAM_PROVIDER=shm)");
      return -ENOTSUP;
    case Kind::kVerbs:
      SS_WARN("provider verbs is not available yet (SLIPSTREAM_PROVIDER=verbs)");
      return -ENODEV;
    case Kind::kAuto:
      break;
  }
  (void)dst;
  (void)len;
  *kind = Kind::kTcp;
  return 0;
}

int create_active(Kind kind, int sock, const sockaddr* dst, socklen_t len,
                  std::unique_ptr<Endpoint>* out) {
  if (kind != Kind::kTcp) return -ENOTSUP;
  auto ep = soft::StreamEndpoint::make_active(kind, sock, dst, len);
  if (!ep) return -EINVAL;
  *out = std::move(ep);
  return 0;
}

int create_listener(int sock, std::unique_ptr<Listener>* out) {
  std::unique_ptr<soft::StreamListener> l;
  int rc = soft::StreamListener::create(sock, Kind::kTcp, &l);
  if (rc) return rc;
  *out = std::move(l);
  return 0;
}

}  // namespace ss::prov
