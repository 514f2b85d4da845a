#include "vma_preload/fork_join.h"

#include <poll.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/base/errno_guard.h"
#include "core/base/fd_passing.h"
#include "core/base/log.h"
#include "vma_preload/fork_share.h"
#include "vma_preload/tcp_park.h"
#include "vma_preload/netdev_rings.h"
#if SS_VMA_XDP
#include "core/prov/xdp/steer_abi.h"
#endif

namespace ss::vma::preload {
namespace {

constexpr int kAnswerMs = 1000;
constexpr uint32_t kMagic = 0x4a4f494e;  // "JOIN": not fork_share's one-byte wake-up

enum Kind : uint32_t { kJoin = 1, kGroup = 2, kTake = 3 };

struct Request {
  uint32_t magic = kMagic;
  uint32_t kind = 0;
  uint64_t nonce = 0;
  char ifname[16] = {};
  int32_t slot = 0;
  sa_family_t family = AF_UNSPEC;
  uint8_t ip[16] = {};
  uint16_t port = 0;  // host order
  uint64_t id = 0;    // kTake: the parent's record
};

// The answer's first message; a join's queues follow (QueueAnswer).
struct Answer {
  uint32_t magic = kMagic;
  uint64_t nonce = 0;
  int32_t err = 0;
  uint32_t queues = 0;
};

// A take's answer: the connection's netdev and the size of its state,
// which comes in a memfd passed with it.
struct TakeAnswer {
  Answer head;
  char ifname[16] = {};
  uint64_t size = 0;
};

#if SS_VMA_XDP
// A join's first message passes the device's descriptors and the packet
// socket; its queues follow, up to kQueuesPerMessage a message (three
// descriptors each), as the owner's QueueShare (its descriptor numbers
// are the owner's: the child's come with the message). Up to 14 messages
// for 64 queues: the child's socket, connected to the owner's, takes
// them past a datagram queue's limit (10 in a new network namespace).
constexpr int kDeviceFds = 6;
constexpr uint32_t kQueueFds = 3;
constexpr uint32_t kQueuesPerMessage = kMaxPassedFds / kQueueFds;
constexpr uint32_t kMaxQueues = SS_MAX_QUEUES;
struct QueueAnswer {
  uint32_t magic = kMagic;
  uint64_t nonce = 0;
  uint32_t count = 0;
  prov::xdp::QueueShare queues[kQueuesPerMessage];
};
#endif

ssize_t send_to(int sock, const sockaddr_un& to, socklen_t to_len, const void* msg, size_t len,
                const int* fds, int nfds) {
  const iovec iov{const_cast<void*>(msg), len};
  return send_with_fds_to(sock, reinterpret_cast<const sockaddr*>(&to), to_len, &iov, 1, fds, nfds,
                          MSG_DONTWAIT);
}

// A socket of this child's with an address the owner can answer to
// (autobound), connected to the owner (so only the owner's datagrams
// reach it), and the request sent: the socket, or -errno.
int ask(const Request& req) {
  sockaddr_un owner{};
  socklen_t owner_len = 0;
  if (!fork_share_owner(&owner, &owner_len)) return -ENOENT;
  const int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -errno;
  const sockaddr_un any{AF_UNIX, {}};
  if (bind(s, reinterpret_cast<const sockaddr*>(&any), sizeof(sa_family_t)) < 0 ||
      connect(s, reinterpret_cast<const sockaddr*>(&owner), owner_len) < 0 ||
      send(s, &req, sizeof req, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof req)) {
    const int err = errno == ECONNREFUSED ? -ENOENT : -errno;
    close(s);
    return err;
  }
  return s;
}

using Clock = std::chrono::steady_clock;

// The next answer message for `nonce` into msg (len bytes), up to
// max_fds descriptors into fds, before `until`: 0 or -errno.
int receive(int s, uint64_t nonce, Clock::time_point until, void* msg, size_t len, int* fds,
            int max_fds, int* got) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    pollfd p{s, POLLIN, 0};
    if (left <= 0 || poll(&p, 1, static_cast<int>(left)) != 1) return -ETIMEDOUT;
    iovec iov{msg, len};
    const ssize_t n = recv_with_fds(s, &iov, 1, fds, max_fds, got, MSG_DONTWAIT);
    if (n < 0) return static_cast<int>(n);
    uint32_t magic;
    uint64_t seen;
    memcpy(&magic, msg, sizeof magic);
    memcpy(&seen, static_cast<char*>(msg) + offsetof(Answer, nonce), sizeof seen);
    if (static_cast<size_t>(n) == len && magic == kMagic && seen == nonce) return 0;
    for (int i = 0; i < *got; i++) close(fds[i]);  // a stale answer's
    *got = 0;
  }
}

Request request(uint32_t kind, const std::string& ifname) {
  Request r;
  r.kind = kind;
  if (getrandom(&r.nonce, sizeof r.nonce, GRND_NONBLOCK) != sizeof r.nonce)
    r.nonce = (static_cast<uint64_t>(getpid()) << 32) ^ static_cast<uint64_t>(time(nullptr));
  memcpy(r.ifname, ifname.data(), std::min(ifname.size(), sizeof r.ifname - 1));
  return r;
}

}  // namespace

#if SS_VMA_XDP
int fork_join_ask(const std::string& ifname, JoinShare* out) {
  ErrnoGuard keep;
  const Request req = request(kJoin, ifname);
  const int s = ask(req);
  if (s < 0) return s;
  const Clock::time_point until = Clock::now() + std::chrono::milliseconds(kAnswerMs);
  Answer a;
  int fds[kMaxPassedFds];
  int got = 0;
  int err = receive(s, req.nonce, until, &a, sizeof a, fds, kDeviceFds, &got);
  if (err == 0) {
    out->fds.assign(fds, fds + got);
    err = a.err;
  }
  if (err == 0 && (got != kDeviceFds || a.queues == 0 || a.queues > kMaxQueues)) err = -EPROTO;
  if (err == 0) {
    out->device = {fds[0], fds[1], fds[2], fds[3], fds[4]};
    out->packet = fds[5];
  }
  while (err == 0 && out->queues.size() < a.queues) {
    QueueAnswer qa;
    got = 0;
    err = receive(s, req.nonce, until, &qa, sizeof qa, fds, kMaxPassedFds, &got);
    if (err == 0) out->fds.insert(out->fds.end(), fds, fds + got);
    if (err == 0 &&
        (qa.count == 0 || qa.count > kQueuesPerMessage ||
         got != static_cast<int>(kQueueFds * qa.count) || out->queues.size() + qa.count > a.queues))
      err = -EPROTO;
    for (uint32_t i = 0; err == 0 && i < qa.count; i++) {
      prov::xdp::QueueShare qs = qa.queues[i];
      qs.xsk = fds[kQueueFds * i];
      qs.umem = fds[kQueueFds * i + 1];
      qs.own = fds[kQueueFds * i + 2];
      out->queues.push_back(qs);
    }
  }
  close(s);
  if (err) out->queues.clear();  // what came is closed with *out
  return err;
}
#endif

int fork_join_group(const std::string& ifname, const net::IpAddr& ip, uint16_t port, int slot) {
  ErrnoGuard keep;
  Request req = request(kGroup, ifname);
  req.slot = slot;
  req.family = ip.family;
  memcpy(req.ip, ip.bytes, sizeof req.ip);
  req.port = port;
  const int s = ask(req);
  if (s < 0) return s;
  Answer a;
  int got = 0;
  const int err = receive(s, req.nonce, Clock::now() + std::chrono::milliseconds(kAnswerMs), &a,
                          sizeof a, nullptr, 0, &got);
  close(s);
  return err ? err : a.err;
}

int fork_join_take(uint64_t id, std::string* ifname, std::vector<uint8_t>* bytes) {
  ErrnoGuard keep;
  Request req = request(kTake, "");
  req.id = id;
  const int s = ask(req);
  if (s < 0) return s;
  TakeAnswer a;
  int fd = -1, got = 0;
  int err = receive(s, req.nonce, Clock::now() + std::chrono::milliseconds(kAnswerMs), &a, sizeof a,
                    &fd, 1, &got);
  close(s);
  if (err == 0) err = a.head.err;
  if (err == 0 && (got != 1 || a.size > (256u << 20))) err = -EPROTO;
  if (err == 0) {
    bytes->resize(a.size);
    a.ifname[sizeof a.ifname - 1] = 0;
    *ifname = a.ifname;
    if (pread(fd, bytes->data(), a.size, 0) != static_cast<ssize_t>(a.size)) err = -EPROTO;
  }
  if (got == 1) close(fd);
  return err;
}

bool fork_join_serve(int sock, const void* msg, size_t len, const sockaddr_un& from,
                     socklen_t from_len, pid_t asker, bool ours) {
  Request req;
  if (len != sizeof req) return false;
  memcpy(&req, msg, sizeof req);
  if (req.magic != kMagic) return false;
  req.ifname[sizeof req.ifname - 1] = 0;
  Answer a;
  a.nonce = req.nonce;
  if (!ours) {  // not a child of ours: told so at once, nothing given
    a.err = -EPERM;
    send_to(sock, from, from_len, &a, sizeof a, nullptr, 0);
    return true;
  }
  if (req.kind == kGroup) {
    net::IpAddr ip;
    ip.family = req.family;
    memcpy(ip.bytes, req.ip, sizeof ip.bytes);
    a.err = rings_group_add(req.ifname, ip, req.port, req.slot, asker);
    send_to(sock, from, from_len, &a, sizeof a, nullptr, 0);
    return true;
  }
  if (req.kind == kTake) {
    TakeAnswer ta;
    ta.head = a;
    std::string ifname;
    std::vector<uint8_t> bytes;
    ta.head.err = parked_give(req.id, &ifname, &bytes);
    int fd = -1;
    if (ta.head.err == 0 && (fd = memfd_create("ss-tcp-take", MFD_CLOEXEC)) < 0)
      ta.head.err = -errno;
    if (ta.head.err == 0 &&
        write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size()))
      ta.head.err = -EIO;
    memcpy(ta.ifname, ifname.data(), std::min(ifname.size(), sizeof ta.ifname - 1));
    ta.size = bytes.size();
    if (send_to(sock, from, from_len, &ta, sizeof ta, &fd, ta.head.err == 0 ? 1 : 0) < 0 &&
        ta.head.err == 0)
      SS_WARN("fork child %d: the connection given could not be sent (%s): it is lost", asker,
              std::strerror(errno));
    if (fd >= 0) close(fd);
    return true;
  }
  if (req.kind != kJoin) return true;  // ours, but unknown: no answer
#if SS_VMA_XDP
  JoinShare js;
  a.err = rings_share(req.ifname, &js);
  const std::vector<prov::xdp::QueueShare>& qs = js.queues;
  if (a.err == 0 && qs.size() > kMaxQueues) a.err = -E2BIG;
  a.queues = a.err ? 0 : static_cast<uint32_t>(qs.size());
  const prov::xdp::DeviceShare& ds = js.device;
  const int dev_fds[kDeviceFds] = {ds.family,   ds.xsks,  ds.conn_owners,
                                   ds.counters, ds.flows, js.packet};
  if (send_to(sock, from, from_len, &a, sizeof a, dev_fds, a.err ? 0 : kDeviceFds) < 0 || a.err)
    return true;
  for (size_t first = 0; first < qs.size(); first += kQueuesPerMessage) {
    QueueAnswer qa;
    qa.nonce = req.nonce;
    int fds[kMaxPassedFds];
    for (size_t q = first; q < qs.size() && qa.count < kQueuesPerMessage; q++, qa.count++) {
      qa.queues[qa.count] = qs[q];
      fds[kQueueFds * qa.count] = qs[q].xsk;
      fds[kQueueFds * qa.count + 1] = qs[q].umem;
      fds[kQueueFds * qa.count + 2] = qs[q].own;
    }
    const int nfds = static_cast<int>(kQueueFds * qa.count);
    if (send_to(sock, from, from_len, &qa, sizeof qa, fds, nfds) < 0) break;
  }
#else
  a.err = -EOPNOTSUPP;
  send_to(sock, from, from_len, &a, sizeof a, nullptr, 0);
#endif
  return true;
}

}  // namespace ss::vma::preload
