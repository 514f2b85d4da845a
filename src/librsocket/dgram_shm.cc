#include "librsocket/dgram_shm.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <utility>

#include "core/base/config.h"
#include "core/base/fd_passing.h"
#include "core/base/log.h"
#include "core/prov/sock_addr.h"

namespace ss::rs {

namespace {
constexpr char kAnswer[4] = {'S', 'S', 'D', 'R'};
constexpr auto kRetry = std::chrono::milliseconds(200);

bool dgram_shm_setting() {
  std::string p = dgram_provider_setting();
  return p == "auto" || p == "shm";
}

// `slipstream/dgram/<addr>/<port>` in the abstract namespace.
int rendezvous(const sockaddr* a, sockaddr_un* un, socklen_t* len) {
  char host[INET6_ADDRSTRLEN];
  unsigned port;
  if (a->sa_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(a);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
  } else if (a->sa_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(a);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    port = ntohs(in6->sin6_port);
  } else {
    return -EAFNOSUPPORT;
  }
  *un = {};
  un->sun_family = AF_UNIX;
  int n = snprintf(un->sun_path + 1, sizeof un->sun_path - 1, "slipstream/dgram/%s/%u", host, port);
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
  return 0;
}

// Our user or root at the other end (an abstract name is anyone's).
bool trusted(int ufd, pid_t* pid) {
  ucred c{};
  socklen_t l = sizeof c;
  if (getsockopt(ufd, SOL_SOCKET, SO_PEERCRED, &c, &l) < 0) return false;
  if (pid) *pid = c.pid;
  return c.uid == geteuid() || c.uid == 0;
}

// Loopback, or an address of this host (one it can bind).
bool local(const sockaddr* a, socklen_t len) {
  sockaddr_storage t{};
  memcpy(&t, a, std::min<size_t>(len, sizeof t));
  if (t.ss_family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&t);
    if ((ntohl(in->sin_addr.s_addr) >> 24) == 127) return true;
    in->sin_port = 0;
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&t);
    if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) return true;
    in6->sin6_port = 0;
  }
  int s = socket(t.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  bool ok = s >= 0 && bind(s, reinterpret_cast<sockaddr*>(&t), len) == 0;
  if (s >= 0) close(s);
  return ok;
}

// An eventfd, made non-blocking: an owner handing anything else (a full
// pipe) could hang our wake-up write, under our lock.
bool take_event_fd(int fd) {
  char what[32];
  char path[32];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(path, what, sizeof what);
  static constexpr char kEventFd[] = "anon_inode:[eventfd]";
  return n == sizeof kEventFd - 1 && memcmp(what, kEventFd, sizeof kEventFd - 1) == 0 &&
         fcntl(fd, F_SETFL, O_NONBLOCK) == 0;
}

std::string key_of(const sockaddr* a, socklen_t len) {
  return std::string(reinterpret_cast<const char*>(a), len);
}
}  // namespace

bool dgram_shm_enabled() { return dgram_shm_setting(); }

std::string dgram_provider_setting() {
  config::Component* core = config::find_component("core");
  int row = core ? core->find("provider") : -1;
  return row < 0 ? "auto" : core->get_string(row);
}

// --- the owner ---------------------------------------------------------------

DgramShmReceiver::~DgramShmReceiver() {
  close_ring();
  if (ring_) munmap(ring_, bytes_);
  for (int fd : {listen_fd_, memfd_, event_fd_})
    if (fd >= 0) ::close(fd);
}

int DgramShmReceiver::open(int udp_fd, uint32_t slots) {
  sockaddr_storage name;
  socklen_t nlen = sizeof name;
  if (getsockname(udp_fd, reinterpret_cast<sockaddr*>(&name), &nlen) < 0) return -errno;
  sockaddr_un un;
  socklen_t ulen;
  if (int rc = rendezvous(reinterpret_cast<sockaddr*>(&name), &un, &ulen)) return rc;
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  if (bind(fd, reinterpret_cast<sockaddr*>(&un), ulen) < 0 || listen(fd, 128) < 0) {
    int err = errno;
    ::close(fd);
    return -err;
  }
  listen_fd_ = fd;
  slots_ = slots;
  return 0;
}

int DgramShmReceiver::make_ring() {
  bytes_ = dgram_ring_bytes(slots_);
  int fd = memfd_create("slipstream-dgram-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -errno;
  void* p = MAP_FAILED;
  if (ftruncate(fd, static_cast<off_t>(bytes_)) == 0 &&
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0)
    p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int efd = p == MAP_FAILED ? -1 : eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (efd < 0) {
    int err = errno;
    if (p != MAP_FAILED) munmap(p, bytes_);
    ::close(fd);
    return -err;
  }
  dgram_ring_init(p, slots_);
  ring_ = p;
  memfd_ = fd;
  event_fd_ = efd;
  return 0;
}

void DgramShmReceiver::serve() {
  if (listen_fd_ < 0) return;
  for (;;) {
    int c = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c < 0) return;
    if (trusted(c, nullptr) && (ring_ || make_ring() == 0)) {
      iovec iov{const_cast<char*>(kAnswer), sizeof kAnswer};
      const int fds[2] = {memfd_, event_fd_};
      (void)send_with_fds(c, &iov, 1, fds, 2, MSG_DONTWAIT);
    }
    ::close(c);
  }
}

void DgramShmReceiver::close_ring() {
  if (ring_ && !forked_copy_)
    static_cast<DgramRingHeader*>(ring_)->closed.store(1, std::memory_order_release);
}

uint64_t DgramShmReceiver::overflow() const {
  return ring_ ? static_cast<DgramRingHeader*>(ring_)->overflow.load(std::memory_order_relaxed) : 0;
}

void DgramShmReceiver::set_sleeping(bool on) {
  if (!ring_) return;
  static_cast<DgramRingHeader*>(ring_)->sleepers.store(on ? 1 : 0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // before looking at the ring again
}

// --- the senders -------------------------------------------------------------

DgramShmSender::~DgramShmSender() {
  for (auto& [k, d] : dests_) forget(&d);
}

void DgramShmSender::forget(Dest* d) {
  if (d->ufd >= 0) ::close(d->ufd);
  if (d->ring) munmap(d->ring, d->bytes);
  if (d->event_fd >= 0) ::close(d->event_fd);
  *d = Dest{};
  d->retry_at = std::chrono::steady_clock::now() + kRetry;
}

void DgramShmSender::dial(const sockaddr* dst, socklen_t len, Dest* d) {
  const sockaddr_storage wild = prov::wildcard_of(dst, len);
  // Another host's address is never a rendezvous of ours; an address
  // seldom becomes local, and a later local owner is found by the next
  // socket.
  if (!local(dst, len)) {
    d->remote = true;
    return;
  }
  for (const sockaddr* a : {dst, reinterpret_cast<const sockaddr*>(&wild)}) {
    sockaddr_un un;
    socklen_t ulen;
    if (rendezvous(a, &un, &ulen)) break;
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) break;
    if (connect(fd, reinterpret_cast<sockaddr*>(&un), ulen) == 0 && trusted(fd, &d->owner)) {
      d->ufd = fd;
      return;
    }
    ::close(fd);
  }
  d->retry_at = std::chrono::steady_clock::now() + kRetry;
}

void DgramShmSender::take_answer(Dest* d) {
  char buf[8];
  iovec iov{buf, sizeof buf};
  int fds[2], nfds = 0;
  ssize_t n = recv_with_fds(d->ufd, &iov, 1, fds, 2, &nfds, MSG_DONTWAIT);
  if (n == -EAGAIN) return;  // not answered yet
  ::close(d->ufd);
  d->ufd = -1;
  bool ok = n == sizeof kAnswer && memcmp(buf, kAnswer, sizeof kAnswer) == 0 && nfds == 2;
  struct stat st {};
  const int want = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
  ok = ok && fstat(fds[0], &st) == 0 && (fcntl(fds[0], F_GET_SEALS) & want) == want &&
       take_event_fd(fds[1]);
  uint32_t slots = ok ? dgram_ring_slots(static_cast<size_t>(st.st_size)) : 0;
  void* p =
      slots ? mmap(nullptr, dgram_ring_bytes(slots), PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0)
            : MAP_FAILED;
  for (int i = 0; i < nfds; i++)
    if (i != 1 || p == MAP_FAILED) ::close(fds[i]);
  if (p == MAP_FAILED) {
    // An answer that came (with more descriptors than a ring and its
    // eventfd: EPROTO) was refused; a failed read, or no descriptor slot
    // left here (EMFILE), is no answer.
    if (n >= 0 || n == -EPROTO) {
      refused_++;
      if (!warned_) SS_WARN("rsocket: a datagram peer's ring answer was refused; using UDP");
      warned_ = true;
    }
    forget(d);
    return;
  }
  d->ring = p;
  d->bytes = dgram_ring_bytes(slots);
  d->slots = slots;
  d->event_fd = fds[1];
}

// A new destination past the bound first drops those holding no ring
// (other hosts', owners not answering): one sending to many addresses
// keeps a bounded map, and at worst dials some of them again.
DgramShmSender::Dest& DgramShmSender::dest_of(const sockaddr* dst, socklen_t len) {
  constexpr size_t kMaxIdle = 256;
  if (last_ && last_len_ == len && memcmp(&last_dst_, dst, len) == 0) return *last_;
  std::string key = key_of(dst, len);
  auto it = dests_.find(key);
  Dest* d;
  if (it != dests_.end()) {
    d = &it->second;
  } else {
    if (dests_.size() >= kMaxIdle) {
      last_ = nullptr;  // may be erased below
      for (auto i = dests_.begin(); i != dests_.end();)
        i = i->second.ring || i->second.ufd >= 0 ? std::next(i) : dests_.erase(i);
    }
    d = &dests_[std::move(key)];
  }
  if (size_t(len) <= sizeof last_dst_) {
    memcpy(&last_dst_, dst, len);
    last_len_ = len;
    last_ = d;
  }
  return *d;
}

int DgramShmSender::send(const sockaddr* dst, socklen_t dst_len, const sockaddr* src,
                         const iovec* iov, size_t iovcnt, size_t len) {
  std::lock_guard<std::mutex> g(mu_);
  Dest& d = dest_of(dst, dst_len);
  if (d.remote) return 0;
  if (!d.ring) {
    if (d.ufd < 0) {
      if (std::chrono::steady_clock::now() < d.retry_at) return 0;
      dial(dst, dst_len, &d);
      if (d.ufd < 0) return 0;
    }
    take_answer(&d);
    if (!d.ring) return 0;
  }
  auto* h = static_cast<DgramRingHeader*>(d.ring);
  // A closed owner, or (now and then) one that is gone: the datagram goes
  // over UDP, as to whoever holds the port now.
  if (h->closed.load(std::memory_order_acquire) ||
      ((++d.pushes & 1023) == 0 && kill(d.owner, 0) < 0 && errno == ESRCH)) {
    forget(&d);
    return 0;
  }
  uint8_t addr[16] = {};
  uint8_t version;
  uint16_t port;
  // Our address as the receiver would see it: our bound one, or the
  // destination's (a same-host peer is reached from it) when we are bound
  // to the wildcard.
  const sockaddr* a = src;
  if (src->sa_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(src);
    port = in->sin_port;
    if (in->sin_addr.s_addr == htonl(INADDR_ANY)) a = dst;
  } else {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(src);
    port = in6->sin6_port;
    if (IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr)) a = dst;
  }
  version = dgram_ip_version(a);
  if (a->sa_family == AF_INET) {
    memcpy(addr, &reinterpret_cast<const sockaddr_in*>(a)->sin_addr, 4);
  } else {
    auto& ip6 = reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr;
    memcpy(addr, version == 4 ? ip6.s6_addr + 12 : ip6.s6_addr, version == 4 ? 4 : 16);
  }
  bool wake = false;
  dgram_ring_push(d.ring, d.slots, addr, version, port, iov, iovcnt, len, &wake);
  if (wake) {
    uint64_t one = 1;
    if (write(d.event_fd, &one, sizeof one) < 0) {
      // EAGAIN: the counter is full, the owner is being woken anyway.
    }
  }
  return 1;
}

}  // namespace ss::rs
