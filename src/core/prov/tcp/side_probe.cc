#include "core/prov/tcp/side_probe.h"

#include <endian.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/random.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>

#include "core/base/config_core.h"
#include "core/base/deadline.h"
#include "core/base/log.h"

namespace ss::prov::tcp {

namespace {

constexpr uint8_t kMagic[4] = {'S', 'S', 'X', 'P'};

void put_header(uint8_t* out, uint8_t kind, uint64_t nonce) {
  memcpy(out, kMagic, 4);
  out[4] = kSideVersion;
  out[5] = kind;
  out[6] = out[7] = 0;
  const uint64_t be = htobe64(nonce);
  memcpy(out + 8, &be, 8);
}

bool header_is(const uint8_t* in, uint8_t kind) {
  return memcmp(in, kMagic, 4) == 0 && in[4] == kSideVersion && in[5] == kind && in[6] == 0 &&
         in[7] == 0;
}

uint64_t nonce_of(const uint8_t* in) {
  uint64_t be;
  memcpy(&be, in + 8, 8);
  return be64toh(be);
}

uint64_t fresh_nonce() {
  uint64_t n = 0;
  if (getrandom(&n, sizeof n, GRND_NONBLOCK) != sizeof n)  // early boot: still unique enough
    n = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
        (static_cast<uint64_t>(getpid()) << 40);
  return n;
}

// Peers that did not answer, by address and port, until their entry ends.
class Unanswered {
 public:
  bool holds(const sockaddr* dst, socklen_t len) {
    Key k;
    if (!key_of(dst, len, &k)) return false;
    std::lock_guard<std::mutex> g(mu_);
    const auto now = std::chrono::steady_clock::now();
    for (const Entry& e : entries_)
      if (e.until > now && e.key == k) return true;
    return false;
  }
  void lock() { mu_.lock(); }
  void unlock() { mu_.unlock(); }
  void note(const sockaddr* dst, socklen_t len, std::chrono::milliseconds for_how_long) {
    Key k;
    if (!key_of(dst, len, &k) || for_how_long.count() <= 0) return;
    std::lock_guard<std::mutex> g(mu_);
    entries_[next_] = {k, std::chrono::steady_clock::now() + for_how_long};
    next_ = (next_ + 1) % entries_.size();
  }

 private:
  using Key = std::array<uint8_t, 19>;  // family, port (2), address (16)
  struct Entry {
    Key key{};
    std::chrono::steady_clock::time_point until{};
  };
  static bool key_of(const sockaddr* dst, socklen_t len, Key* k) {
    k->fill(0);
    (*k)[0] = static_cast<uint8_t>(dst->sa_family);
    if (dst->sa_family == AF_INET && len >= sizeof(sockaddr_in)) {
      auto* in = reinterpret_cast<const sockaddr_in*>(dst);
      memcpy(k->data() + 1, &in->sin_port, 2);
      memcpy(k->data() + 3, &in->sin_addr, 4);
      return true;
    }
    if (dst->sa_family == AF_INET6 && len >= sizeof(sockaddr_in6)) {
      auto* in6 = reinterpret_cast<const sockaddr_in6*>(dst);
      memcpy(k->data() + 1, &in6->sin6_port, 2);
      memcpy(k->data() + 3, &in6->sin6_addr, 16);
      return true;
    }
    return false;
  }
  std::mutex mu_;
  std::array<Entry, 64> entries_{};
  size_t next_ = 0;
};

Unanswered* const g_unanswered = new Unanswered;  // never destroyed under a late caller
Unanswered& unanswered() { return *g_unanswered; }
// A connecting thread holds the lock for one look at the table, never
// while waiting: taken around fork (at load, as the side listeners'
// registry), so a child never inherits it held.
__attribute__((constructor)) void unanswered_across_fork() {
  pthread_atfork([] { g_unanswered->lock(); }, [] { g_unanswered->unlock(); },
                 [] { g_unanswered->unlock(); });
}

}  // namespace

void encode_probe(uint8_t (&out)[kProbeSize], uint64_t nonce) {
  put_header(out, kKindProbe, nonce);
}

bool decode_probe(const uint8_t* in, size_t len, uint64_t* nonce) {
  if (len != kProbeSize || !header_is(in, kKindProbe)) return false;
  *nonce = nonce_of(in);
  return true;
}

void encode_answer(uint8_t (&out)[kAnswerSize], uint64_t nonce, uint16_t port) {
  put_header(out, kKindAnswer, nonce);
  const uint16_t be = htons(port);
  memcpy(out + 16, &be, 2);
  out[18] = out[19] = 0;
}

bool decode_answer(const uint8_t* in, size_t len, uint64_t nonce, uint16_t* port) {
  if (len != kAnswerSize || !header_is(in, kKindAnswer) || nonce_of(in) != nonce || in[18] ||
      in[19])
    return false;
  uint16_t be;
  memcpy(&be, in + 16, 2);
  *port = ntohs(be);
  return *port != 0;
}

int probe_side_port(const sockaddr* dst, socklen_t len, int timeout_ms) {
  if (dst->sa_family != AF_INET && dst->sa_family != AF_INET6) return -EAFNOSUPPORT;
  // Connected, so only dst can answer and its ICMP port unreachable comes
  // back as ECONNREFUSED: a plain server costs one round trip.
  int fd = ::socket(dst->sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  const uint64_t nonce = fresh_nonce();
  uint8_t probe[kProbeSize];
  encode_probe(probe, nonce);
  int rc = -ETIMEDOUT;
  if (::connect(fd, dst, len) < 0 || ::send(fd, probe, sizeof probe, MSG_NOSIGNAL) < 0) {
    rc = -errno;
  } else {
    const Deadline until = deadline_after_us(int64_t{timeout_ms} * 1000);
    while (std::chrono::steady_clock::now() < until) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, sleep_ms_until(until, timeout_ms)) < 0 && errno != EINTR) {
        rc = -errno;
        break;
      }
      uint8_t in[kAnswerSize + 1];
      ssize_t n = ::recv(fd, in, sizeof in, 0);
      if (n < 0 && errno != EAGAIN && errno != EINTR) {
        rc = -errno;
        break;
      }
      uint16_t port;
      if (n > 0 && decode_answer(in, static_cast<size_t>(n), nonce, &port)) {
        rc = port;
        break;
      }
    }
  }
  ::close(fd);
  return rc;
}

int side_port_of(const sockaddr* dst, socklen_t len) {
  using config::core::Id;
  const int timeout_ms = static_cast<int>(config::core::table.get_int(Id::kSideProbeTimeout));
  if (timeout_ms <= 0) return -ENOTSUP;
  if (unanswered().holds(dst, len)) return -ECONNREFUSED;
  int rc = probe_side_port(dst, len, timeout_ms);
  if (rc == -ECONNREFUSED || rc == -ETIMEDOUT) {
    unanswered().note(dst, len,
                      std::chrono::milliseconds(config::core::table.get_int(Id::kSideProbeMemory)));
    SS_DEBUG("tcp: no side listener answers at the peer (%s)", strerror(-rc));
  }
  return rc;
}

}  // namespace ss::prov::tcp
