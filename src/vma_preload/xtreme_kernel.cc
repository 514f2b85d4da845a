#include "vma_preload/xtreme_kernel.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/base/fd_table.h"
#include "core/base/log.h"
#include "interpose/real.h"
#include "interpose/signal_count.h"
#include "libvmacompat/xtreme_buffs.h"
#include "vma_preload/netdev_rings.h"
#include "vma_preload/socket_record.h"
#include "vma_preload/socketxtreme.h"
#include "vma_preload/tcp_listen.h"

namespace ss::vma::preload {

using interpose::real;

struct XtremeKernelSet {
  struct Member {
    int fd;
    bool listener;
    sockaddr_in peer;        // a connection's (zero unless IPv4)
    short seen = 0;          // the ends its completions reported (POLLRDHUP, POLLHUP, POLLERR)
    bool room_rose = false;  // out_ep saw room come back, not reported yet
    bool eof = false, failed = false;  // read no more
    // Its lent frames: while the program holds `most` of them (its
    // SO_RCVBUF's worth: a frame per read, however short) nothing more is
    // read, so the kernel's window shuts on the peer as the rings' would.
    LentOwner* owner = nullptr;
    size_t most = 0;
  };
  // All members' lent frames: at most half the rings' pool, so the rings'
  // own receive keeps frames however many connections hold theirs.
  LentOwner::Share held;
  size_t most_held = 1;
  // ep: the members' reads and ends, and out_ep (key kRoomKey); out_ep:
  // the connections' rises of room (EPOLLOUT alone: only the kernel's
  // wake-ups for room trigger it). Members are edge-triggered in both.
  int ep = -1, out_ep = -1;
  // The members, and each one's handling by a poll: a close on another
  // thread waits for it, before its number can be given out again.
  // Recursive: a poll's accept records the new socket, which joins.
  std::recursive_mutex mu;
  std::unordered_map<uint64_t, Member> members;  // by epoll key
  std::vector<uint64_t> again;                   // left with more by a poll: the next looks
  std::vector<uint64_t> blocked;                 // stopped at their `most`: looked at once below
  uint64_t next_key = 1;
  uint64_t turn = 0;  // where a poll starts among what it looks at
  std::atomic<size_t> count{0};
  std::atomic<bool> waiting{false};               // again or blocked hold some
  size_t conns = 0;                               // members that are connections
  uint64_t last_call_us = 0, quiet_until_us = 0;  // the TCP stack's clock
};

namespace {

constexpr uint64_t kRoomKey = 0;  // out_ep's key in ep (members' keys start at 1)
// With listeners alone as members, a program spinning on the ring (polls
// closer than kSpinUs: a sleep and its wake-up take longer) looks at them
// every kQuietUs while the looks find nothing, and pays no epoll_wait in
// between; any other poll looks (a sleeper must not miss a wake-up), and
// every poll of a program that watches the ring edge-triggered (the edge
// it took for a peer may be its last).
constexpr uint64_t kQuietUs = 50, kSpinUs = 5;
constexpr size_t kLeastHeld = 64 << 10;  // a connection may hold this much at least

void wake_rings(void* r) { static_cast<NetdevRings*>(r)->xtreme_kick(); }

int add(int ep, int fd, uint32_t events, uint64_t key) {
  epoll_event e{};
  e.events = events;
  e.data.u64 = key;
  return real().epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
}

// r's set, made at its first member (kept, as the rings are): its two
// epoll sets inside r's ring descriptor's. Null when it cannot be made.
XtremeKernelSet* set_of(NetdevRings* r) {
  if (XtremeKernelSet* k = r->xtreme_kernel.load(std::memory_order_acquire)) return k;
  const int ring = r->xtreme_fd();
  if (ring < 0) return nullptr;
  std::lock_guard<std::mutex> lock(r->xtreme_mu);
  if (XtremeKernelSet* k = r->xtreme_kernel.load(std::memory_order_acquire)) return k;
  const int ep = real().epoll_create1(EPOLL_CLOEXEC), out_ep = real().epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0 || out_ep < 0 || add(ep, out_ep, EPOLLIN, kRoomKey) < 0 ||
      add(ring, ep, EPOLLIN, 0) < 0) {
    if (ep >= 0) real().close(ep);
    if (out_ep >= 0) real().close(out_ep);
    return nullptr;
  }
  auto* k = new XtremeKernelSet;
  k->ep = ep;
  k->out_ep = out_ep;
  const mem::Pool& pool = *r->queues.front().pool;
  k->most_held = std::max<size_t>(pool.max_chunks() * pool.frames_per_chunk() / 2, 1);
  r->xtreme_kernel.store(k, std::memory_order_release);
  return k;
}

// The accepted connection nfd recorded and made a member; false when it
// cannot be.
bool adopt(NetdevRings* r, int nfd, const sockaddr_storage& peer) {
  drop_stale(nfd);
  track_socket(nfd, peer.ss_family, SOCK_STREAM, IPPROTO_TCP);
  const auto s = FdTable::instance().get<SocketRecord>(nfd, FdKind::kVmaSocket);
  return s && s->join_xtreme_kernel(r, peer);
}

// What a member's look left: nothing, more (looked at by the next poll,
// a program asleep woken for it), or a want of frames or descriptors
// (looked at by the next poll only: a wake-up would spin until they come).
enum class Left { kNothing, kMore, kWanting };

// accept4 that cannot block: a blocking listener is non-blocking for the
// call (a fork child accepting on the same socket meanwhile would see
// EAGAIN, as for a connection another accept took).
int accept_now(int fd, sockaddr_storage* peer) {
  socklen_t len = sizeof *peer;
  const int flags = real().fcntl(fd, F_GETFL);
  const bool toggle = flags >= 0 && !(flags & O_NONBLOCK);
  if (toggle) real().fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  const int nfd = real().accept4(fd, reinterpret_cast<sockaddr*>(peer), &len, 0);
  const int err = errno;
  if (toggle) real().fcntl(fd, F_SETFL, flags);
  errno = err;
  return nfd;
}

// Listener l's (descriptor fd) kernel connections accepted as completions
// from *got on, unless a thread of the program is inside accept (it takes
// them).
Left accept_all(NetdevRings* r, TcpListen& l, int fd, vma_completion_t* comps, unsigned int n,
                unsigned int* got) {
  // The edge is taken: looked at again by the next poll (that thread
  // may be leaving with EINVAL, or time out).
  if (!l.take_kernel_accepts()) return Left::kWanting;
  while (*got < n) {
    sockaddr_storage peer{};
    const int nfd = accept_now(fd, &peer);
    if (nfd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Left::kNothing;
      if (errno == EINTR || errno == ECONNABORTED) continue;
      SS_WARN_ONCE(
          "socketxtreme_poll: listen fd %d: accepting a peer of the kernel's listener failed (%s); "
          "it waits there",
          fd, std::strerror(errno));
      return Left::kWanting;
    }
    if (!adopt(r, nfd, peer)) {
      SS_WARN(
          "socketxtreme_poll: listen fd %d: a peer of the kernel's listener could not be served "
          "(fd %d); closed",
          fd, nfd);
      close_recorded(nfd);
      continue;
    }
    vma_completion_t* c = &comps[(*got)++];
    std::memset(c, 0, sizeof *c);
    c->events = static_cast<uint64_t>(VMA_SOCKETXTREME_NEW_CONNECTION_ACCEPTED);
    c->user_data = static_cast<uint64_t>(nfd);
    c->listen_fd = fd;
    if (peer.ss_family == AF_INET) std::memcpy(&c->src, &peer, sizeof c->src);
    SS_DEBUG("socketxtreme_poll: listen fd %d: fd %d accepted from the kernel's listener", fd, nfd);
  }
  return Left::kMore;
}

// Whether m may take no more frames now: it, or all members, hold their most.
bool holds_its_most(const XtremeKernelSet* k, const XtremeKernelSet::Member& m) {
  return m.owner->buffers_out() >= m.most ||
         k->held.out.load(std::memory_order_seq_cst) >= k->most_held;
}

// holds_its_most, with the next free of its frames or of any member's
// armed to wake a poller asleep on the ring when it does (armed, then
// looked again: the free sees the arm, or the look sees the free). Armed
// at every look, as a free may have taken an arm for another member.
bool stays_held(XtremeKernelSet* k, XtremeKernelSet::Member& m) {
  if (!holds_its_most(k, m)) return false;
  m.owner->arm_wake();
  k->held.armed.store(true, std::memory_order_seq_cst);
  return holds_its_most(k, m);
}

// recv(2) into a lent frame: the bytes, 0 at the end, or -errno.
ssize_t read_some(int fd, void* to, size_t room) {
  ssize_t x;
  do x = real().recv(fd, to, room, MSG_DONTWAIT);
  while (x < 0 && errno == EINTR);
  return x < 0 ? -errno : x;
}

// Connection m's (key `key`) data, a chain of at most kXtremeMostBufs
// frames and 65535 bytes within the frames it may hold, and its events'
// rising edges as completion *c, when it has either; k->mu held. *left:
// what it may hold beyond this one (its ends wait until that is read).
bool report(NetdevRings* r, XtremeKernelSet* k, uint64_t key, XtremeKernelSet::Member& m,
            SocketRecord& s, vma_completion_t* c, Left* left) {
  std::memset(c, 0, sizeof *c);
  vma_buff_t* last = nullptr;
  size_t total = 0;
  while (!m.eof && !m.failed) {
    if (stays_held(k, m)) {
      if (std::find(k->blocked.begin(), k->blocked.end(), key) == k->blocked.end())
        k->blocked.push_back(key);
      break;
    }
    if (c->packet.num_bufs == kXtremeMostBufs || total == UINT16_MAX) {
      *left = Left::kMore;
      break;
    }
    vma_buff_t* b = nullptr;
    const ssize_t got = xtreme_buffs().lend_read(
        r->queues.front().pool.get(), UINT16_MAX - total,
        [&](void* to, size_t room) { return read_some(m.fd, to, room); }, &b, m.owner);
    if (got > 0) {
      (last ? last->next : c->packet.buff_lst) = b;
      last = b;
      c->packet.num_bufs++;
      total += static_cast<size_t>(got);
    } else if (got == 0) {
      m.eof = true;
    } else if (got == -ENOBUFS) {  // no frame now: the next poll
      *left = Left::kWanting;
      break;
    } else if (got == -EAGAIN || got == -EWOULDBLOCK) {
      break;
    } else {
      m.failed = true;
    }
  }
  short now = 0;
  if (m.eof) now |= POLLRDHUP;
  if (m.failed) now |= POLLERR | POLLHUP;
  if (*left != Left::kNothing) now = 0;  // the end after the last byte
  short edges = static_cast<short>(now & ~m.seen);
  m.seen |= now;
  if (m.room_rose) edges |= POLLOUT;
  m.room_rose = false;
  if (!c->packet.num_bufs && !edges) return false;
  if (c->packet.num_bufs) {
    c->events = static_cast<uint64_t>(VMA_SOCKETXTREME_PACKET) | EPOLLIN;
    c->packet.total_len = static_cast<uint16_t>(total);
    s.stats.add(stats::kRxOsPackets, c->packet.num_bufs);
    s.stats.add(stats::kRxOsBytes, total);
  }
  c->events |= static_cast<uint64_t>(edges & (POLLOUT | POLLRDHUP | POLLHUP | POLLERR));
  c->user_data = s.rx_extras.user_data(m.fd);
  c->src = m.peer;
  return true;
}

// The keys a poll looks at into *look, k->mu held: those the last poll
// left, the blocked ones their program freed frames of, and what the
// epoll sets report (unless kQuietUs skips them). Whether some may be
// left in them (a full read).
bool keys_to_look(NetdevRings* r, XtremeKernelSet* k, std::vector<uint64_t>* look) {
  look->swap(k->again);
  std::erase_if(k->blocked, [&](uint64_t key) {
    const auto it = k->members.find(key);
    if (it == k->members.end()) return true;
    if (stays_held(k, it->second)) return false;
    look->push_back(key);
    return true;
  });
  const uint64_t now = r->tcp->now();
  const bool spinning = now - k->last_call_us < kSpinUs;
  k->last_call_us = now;
  if (look->empty() && k->conns == 0 && spinning && now < k->quiet_until_us &&
      !r->xtreme_edge_watched.load(std::memory_order_relaxed))
    return false;
  epoll_event ev[16];
  const int ready = real().epoll_wait(k->ep, ev, 16, 0);
  bool full = ready == 16;
  for (int i = 0; i < ready; i++) {
    if (ev[i].data.u64 != kRoomKey) {
      look->push_back(ev[i].data.u64);
      continue;
    }
    epoll_event room[64];
    const int rose = real().epoll_wait(k->out_ep, room, 64, 0);
    full = full || rose == 64;  // the rest: out_ep stays readable in ep
    for (int j = 0; j < rose; j++) {
      // An error or a hang-up wakes this set too: ep reports those.
      if (!(room[j].events & EPOLLOUT) || (room[j].events & (EPOLLERR | EPOLLHUP))) continue;
      const auto it = k->members.find(room[j].data.u64);
      if (it == k->members.end()) continue;
      it->second.room_rose = true;
      look->push_back(room[j].data.u64);
    }
  }
  k->quiet_until_us = look->empty() ? now + kQuietUs : 0;
  return full;
}

}  // namespace

std::unique_ptr<XtremeKernelMember> XtremeKernelMember::join(NetdevRings* r, int fd, bool listener,
                                                             const sockaddr_storage* peer) {
  if (in_fork_child()) return nullptr;  // the epoll sets are the parent's
  XtremeKernelSet* k = set_of(r);
  if (!k) {
    SS_WARN(
        "socketXtreme: fd %d: no ring descriptor for its kernel socket (%s); a peer that "
        "reaches it there is not reported",
        fd, std::strerror(errno));
    return nullptr;
  }
  XtremeKernelSet::Member m{fd, listener, {}};
  if (peer && peer->ss_family == AF_INET) std::memcpy(&m.peer, peer, sizeof m.peer);
  if (!listener) {
    int rcvbuf = 0;
    socklen_t len = sizeof rcvbuf;
    real().getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, &len);
    const size_t bytes = std::max<size_t>(static_cast<size_t>(std::max(rcvbuf, 0)), kLeastHeld);
    m.most = std::max<size_t>(bytes / r->queues.front().pool->frame_size(), 1);
    m.owner = LentOwner::make();
    m.owner->set_wake(wake_rings, r);
    m.owner->set_share(&k->held);
  }
  interpose::BusyScope busy;
  std::lock_guard<std::recursive_mutex> lock(k->mu);
  const uint64_t key = k->next_key++;
  // Edge-triggered, so a registration reports what is already there too.
  const bool in_ep = add(k->ep, fd, EPOLLIN | EPOLLRDHUP | EPOLLET, key) == 0;
  if (!in_ep || (!listener && add(k->out_ep, fd, EPOLLOUT | EPOLLET, key) < 0)) {
    SS_WARN("socketXtreme: fd %d: its kernel socket joins no ring descriptor (%s)", fd,
            std::strerror(errno));
    if (in_ep) real().epoll_ctl(k->ep, EPOLL_CTL_DEL, fd, nullptr);
    if (m.owner) m.owner->unref();
    return nullptr;
  }
  k->members.emplace(key, m);
  k->count.fetch_add(1, std::memory_order_relaxed);
  if (!listener) k->conns++;
  return std::unique_ptr<XtremeKernelMember>(new XtremeKernelMember(r, k, key, fd));
}

void XtremeKernelMember::look_again() {
  {
    interpose::BusyScope busy;
    std::lock_guard<std::recursive_mutex> lock(set_->mu);
    set_->again.push_back(key_);
    set_->waiting.store(true, std::memory_order_relaxed);
  }
  r_->xtreme_kick();
}

XtremeKernelMember::~XtremeKernelMember() {
  // A fork child shares its parent's epoll sets and nobody polls there; a
  // signal handler may have interrupted this thread's poll (its member
  // then stays, stale: its socket's key no longer matches).
  if (in_fork_child() || interpose::handler_over_busy()) return;
  interpose::BusyScope busy;  // a handler here must not take the lists
  std::lock_guard<std::recursive_mutex> lock(set_->mu);
  if (const auto it = set_->members.find(key_); it != set_->members.end()) {
    if (!it->second.listener) set_->conns--;
    if (it->second.owner) it->second.owner->unref();  // buffers still out keep it
    set_->members.erase(it);
  }
  std::erase(set_->again, key_);
  std::erase(set_->blocked, key_);
  set_->count.fetch_sub(1, std::memory_order_relaxed);
  real().epoll_ctl(set_->ep, EPOLL_CTL_DEL, fd_, nullptr);
  real().epoll_ctl(set_->out_ep, EPOLL_CTL_DEL, fd_, nullptr);
}

void xtreme_kernel_poll(NetdevRings* r, vma_completion_t* comps, unsigned int n,
                        unsigned int* got) {
  XtremeKernelSet* k = r->xtreme_kernel.load(std::memory_order_acquire);
  if (!k || k->count.load(std::memory_order_relaxed) == 0) return;
  if (*got >= n) {  // no room this time: a program asleep comes back for what waits
    if (k->waiting.load(std::memory_order_relaxed)) r->xtreme_kick();
    return;
  }
  if (interpose::handler_over_busy()) return;  // the interrupted poll holds the lists
  interpose::BusyScope busy;
  std::lock_guard<std::recursive_mutex> lock(k->mu);
  thread_local std::vector<uint64_t> look;
  look.clear();
  bool kick = keys_to_look(r, k, &look);
  std::sort(look.begin(), look.end());
  look.erase(std::unique(look.begin(), look.end()), look.end());
  if (!look.empty())  // none starves when completions run out
    std::rotate(look.begin(), look.begin() + static_cast<ptrdiff_t>(k->turn++ % look.size()),
                look.end());
  auto leave = [&](uint64_t key, Left left) {
    if (left == Left::kNothing) return;
    k->again.push_back(key);
    kick = kick || left == Left::kMore;
  };
  for (const uint64_t key : look) {
    const auto it = k->members.find(key);
    if (it == k->members.end()) continue;  // left: a stale event
    if (*got >= n) {
      leave(key, Left::kMore);
      continue;
    }
    const int fd = it->second.fd;
    // Its record must still be the member's (the number not given out again).
    const auto s = record_acting_at(fd);
    if (!s) continue;
    if (it->second.listener) {
      TcpListen* l = s->listening();
      if (l && l->xtreme_kernel_key() == key)
        leave(key, accept_all(r, *l, fd, comps, n, got));  // may add members: `it` is stale
      continue;
    }
    if (s->xtreme_kernel_key() != key) continue;
    Left left = Left::kNothing;
    if (report(r, k, key, it->second, *s, &comps[*got], &left)) ++*got;
    leave(key, left);
  }
  k->waiting.store(!k->again.empty() || !k->blocked.empty(), std::memory_order_relaxed);
  if (kick) r->xtreme_kick();  // a program asleep on the ring comes back for them
}

}  // namespace ss::vma::preload
