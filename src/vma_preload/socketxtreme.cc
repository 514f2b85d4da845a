#include "vma_preload/socketxtreme.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <vector>

#include "core/base/fd_table.h"
#include "core/base/log.h"
#include "libvmacompat/settings.h"
#include "libvmacompat/xtreme_buffs.h"
#include "interpose/edge.h"
#include "interpose/signal_count.h"
#include "vma_preload/socket_record.h"
#include "vma_preload/netdev_rings.h"
#include "vma_preload/rx_extras.h"
#include "vma_preload/tcp_listen.h"
#include "vma_preload/tcp_offload.h"
#include "vma_preload/xtreme_kernel.h"

namespace ss::vma::preload {
namespace {

namespace vs = vma::settings;

// Off: one warning per entry, then -1/EOPNOTSUPP, as libvma's stubs.
template <const char* kName>
bool refused_off() {
  if (socketxtreme_mode()) return false;
  SS_WARN_ONCE("VMA Extra API: %s needs VMA_SOCKETXTREME=1 (EOPNOTSUPP)", kName);
  errno = EOPNOTSUPP;
  return true;
}

// In a fork child (fork_child.cc) the rings and their frames are the
// parent's: none is the child's to poll, hold or free.
bool refused_in_child(int err) {
  if (!in_fork_child()) return false;
  errno = err;
  return true;
}

constexpr char kPoll[] = "socketxtreme_poll";
constexpr char kFreePackets[] = "socketxtreme_free_vma_packets";
constexpr char kRef[] = "socketxtreme_ref_vma_buff";
constexpr char kFree[] = "socketxtreme_free_vma_buff";

// socketxtreme_poll's looks at UDP members whose callbacks took every slot.
constexpr int kUdpPasses = 4;

// -1/errno for a negative result.
int result(int r) {
  if (r >= 0) return r;
  errno = -r;
  return -1;
}

// A lender the rings stop watching (its reference let go).
void drop_lender(std::pair<const void*, LentOwner*>& l) {
  l.second->unwatch();
  l.second->unref();
}

// Counts `packets` datagrams of `bytes` received offloaded on s's vmastat
// block; by fd, its record looked up (the member keeps only the fd).
void count_rx(SocketRecord& s, uint64_t packets, uint64_t bytes) {
  s.stats.add(stats::kRxPackets, packets);
  s.stats.add(stats::kRxBytes, bytes);
}
void count_rx(int fd, uint64_t packets, uint64_t bytes) {
  if (const auto s = FdTable::instance().get<SocketRecord>(fd, FdKind::kVmaSocket))
    count_rx(*s, packets, bytes);
}

// d as completion c of member x: its frame lent, one buffer. False when
// no frame could be had for it (the datagram is dropped).
bool complete(const NetdevRings::XtremeMember& x, net::Datagram&& d, vma_completion_t* c) {
  const net::UdpAddr src = d.src;
  vma_buff_t* b = nullptr;
  if (const int err = xtreme_buffs().lend(d, &b); err < 0) {
    SS_DEBUG("socketxtreme_poll: fd %d: a datagram dropped (%s)", x.fd, std::strerror(-err));
    return false;
  }
  std::memset(c, 0, sizeof *c);
  c->packet.num_bufs = 1;
  c->packet.total_len = b->len;
  c->packet.buff_lst = b;
  c->events = static_cast<uint64_t>(VMA_SOCKETXTREME_PACKET) | EPOLLIN;
  c->user_data = x.extras->user_data(x.fd);
  c->src.sin_family = AF_INET;
  c->src.sin_port = htons(src.port);
  std::memcpy(&c->src.sin_addr, src.ip.bytes, sizeof c->src.sin_addr);
  return true;
}

// A datagram a member with a receive callback took: who took it, to
// where, what its socket held besides.
struct ForCallback {
  NetdevRings::XtremeMember x;
  net::UdpAddr local;
  uint32_t queued;
  net::Datagram d;
};

// Each datagram through its socket's receive callback, as libvma's: DROP
// frees it, HOLD keeps it for free_packets, RECV makes it a completion
// (from comps[*got] on). A member closed since its take (its record gone
// or another's) loses them. One record lookup a run of one member's.
void pass_callbacks(std::vector<ForCallback>* taken, vma_completion_t* comps, unsigned int* got) {
  std::shared_ptr<SocketRecord> s;
  uint64_t packets = 0, bytes = 0;
  auto count = [&] {
    if (s && packets) count_rx(*s, packets, bytes);
    packets = bytes = 0;
  };
  for (ForCallback& t : *taken) {
    if (!s || s->fd != t.x.fd) {
      count();
      s = FdTable::instance().get<SocketRecord>(t.x.fd, FdKind::kVmaSocket);
    }
    if (!s || &s->rx_extras != t.x.extras) continue;  // closed: the frame recycles
    RxExtras& e = s->rx_extras;
    if (e.callback.pass(t.x.fd, &t.d, t.local, t.queued, 0, &e.held) != VMA_PACKET_RECV) continue;
    if (complete(t.x, std::move(t.d), &comps[*got])) {
      packets++;
      bytes += comps[(*got)++].packet.total_len;
    }
  }
  count();
  taken->clear();
}

// An IPv4 peer into a completion's src (libvma's is a sockaddr_in).
void set_src(vma_completion_t* c, const net::IpAddr& ip, uint16_t port) {
  if (ip.family != AF_INET) return;
  c->src.sin_family = AF_INET;
  c->src.sin_port = htons(port);
  std::memcpy(&c->src.sin_addr, ip.bytes, sizeof c->src.sin_addr);
}

// A listener's connections, accepted, as completions from *got on.
void accept_for(SocketRecord& s, TcpListen& l, vma_completion_t* comps, unsigned int n,
                unsigned int* got) {
  while (*got < n) {
    int nfd;
    sockaddr_storage peer;
    socklen_t plen = sizeof peer;
    if (l.auto_accept(s.fd, &nfd, &peer, &plen) < 0) return;
    vma_completion_t* c = &comps[(*got)++];
    std::memset(c, 0, sizeof *c);
    c->events = static_cast<uint64_t>(VMA_SOCKETXTREME_NEW_CONNECTION_ACCEPTED);
    c->user_data = static_cast<uint64_t>(nfd);  // the new socket's SO_VMA_USER_DATA: its fd
    c->listen_fd = s.fd;
    if (peer.ss_family == AF_INET) std::memcpy(&c->src, &peer, sizeof c->src);
  }
}

// A connection's data and events as one completion, when it has either.
// Its views are lent as a buffer chain; one no frame could be had for
// waits for the next poll (TCP loses no byte). *more: the connection may
// hold more than one completion took.
bool report(SocketRecord& s, TcpOffload& t, vma_completion_t* c, bool* more) {
  std::vector<mem::Buffer> views;
  // Before the take: an end seen now comes after every byte it finds.
  short now = t.xtreme_events();
  t.xtreme_take(kXtremeMostBufs, &views);
  std::memset(c, 0, sizeof *c);
  vma_buff_t* last = nullptr;
  size_t i = 0;
  for (; i < views.size(); i++) {
    if (c->packet.total_len + views[i].size() > UINT16_MAX) break;  // total_len's bound
    net::Datagram d{std::move(views[i]), {}};
    vma_buff_t* b = nullptr;
    if (xtreme_buffs().lend(d, &b, t.lent_owner()) < 0) {
      views[i] = std::move(d.buf);
      break;
    }
    (last ? last->next : c->packet.buff_lst) = b;
    last = b;
    c->packet.num_bufs++;
    c->packet.total_len = static_cast<uint16_t>(c->packet.total_len + b->len);
  }
  *more = i < views.size() || views.size() >= kXtremeMostBufs;
  t.xtreme_keep(std::vector<mem::Buffer>(std::make_move_iterator(views.begin() + i),
                                         std::make_move_iterator(views.end())));
  t.wake_at_free_if_shut();
  if (*more) now &= ~(POLLRDHUP | POLLHUP);  // the end after the last byte
  const short edges = t.xtreme_edges(now);
  if (!c->packet.num_bufs && !edges) return false;
  if (c->packet.num_bufs) {
    c->events = static_cast<uint64_t>(VMA_SOCKETXTREME_PACKET) | EPOLLIN;
    count_rx(s, c->packet.num_bufs, c->packet.total_len);
  }
  c->events |= static_cast<uint64_t>(edges & (POLLOUT | POLLRDHUP | POLLHUP | POLLERR));
  c->user_data = s.rx_extras.user_data(s.fd);
  const net::tcp::FourTuple tu = t.tuple();
  set_src(c, tu.remote, tu.remote_port);
  return true;
}

// Whether lender l stays watched: still a member with buffers out or
// bytes owed (unwatched, then watched again when another poll lent after
// the look).
bool lender_stays(NetdevRings* r, const std::pair<const void*, LentOwner*>& l) {
  LentOwner* o = l.second;
  if (!r->xtreme_tcp.count(l.first)) return false;  // left: nobody collects
  if (!o->quiet()) return true;
  o->unwatch();
  return !o->quiet() && o->watch_once();
}

// The members to look at, each once: the listeners (each poll accepts for
// every leg of theirs), those the last poll left with more, those whose
// program freed lent bytes (their window reopens at the look), and those
// the stack changed; with their descriptors.
void members_to_look(NetdevRings* r,
                     std::vector<std::pair<const void*, NetdevRings::XtremeTcp>>* out) {
  thread_local std::vector<const void*> look;
  look.clear();
  {
    std::lock_guard<std::mutex> lock(r->xtreme_mu);
    look = r->xtreme_tcp_listeners;
    look.insert(look.end(), r->xtreme_tcp_again.begin(), r->xtreme_tcp_again.end());
    r->xtreme_tcp_again.clear();
    std::erase_if(r->xtreme_tcp_lending, [&](auto& l) {
      if (l.second->owed()) look.push_back(l.first);
      if (lender_stays(r, l)) return false;
      drop_lender(l);
      return true;
    });
  }
  r->tcp->take_ready(&look);
  std::lock_guard<std::mutex> lock(r->xtreme_mu);
  const uint64_t poll = ++r->xtreme_tcp_polls;
  for (const void* who : look) {
    auto it = r->xtreme_tcp.find(who);
    if (it == r->xtreme_tcp.end() || it->second.looked == poll) continue;
    it->second.looked = poll;
    out->push_back({who, it->second});
  }
}

// Connection `who`, with buffers lent out (o), watched until they are all
// back: its look when the program frees some.
void watch_lender(NetdevRings* r, const void* who, LentOwner* o) {
  if (o->quiet() || !o->watch_once()) return;
  std::lock_guard<std::mutex> lock(r->xtreme_mu);
  try {
    r->xtreme_tcp_lending.push_back({who, o});
  } catch (...) {
    o->unwatch();
    throw;
  }
  o->ref();
}

// The TCP members' completions, from *got on: looked up by descriptor
// outside xtreme_mu (an accept records a socket, which joins; a record
// let go leaves). A member left with more kicks the ring descriptor, so
// a program that sleeps on it once a poll came short still comes back.
void poll_tcp(NetdevRings* r, vma_completion_t* comps, unsigned int n, unsigned int* got) {
  // A receive callback that polls (one thread per ring, libvma says):
  // the outer poll reports; its lists are this thread's.
  thread_local bool polling = false;
  // A signal handler inside the offload sees no member (SocketRecord::tcp):
  // the lists wait for the call it interrupted.
  if (polling || interpose::handler_over_busy()) return;
  polling = true;
  const struct Done {
    ~Done() { polling = false; }
  } done;
  thread_local std::vector<std::pair<const void*, NetdevRings::XtremeTcp>> members;
  thread_local std::vector<const void*> again;
  members.clear();
  again.clear();
  members_to_look(r, &members);
  size_t k = 0;
  for (; k < members.size() && *got < n; k++) {
    const auto& [who, m] = members[k];
    const auto s = record_acting_at(m.fd);
    if (!s) continue;
    if (m.listener) {
      if (TcpListen* l = s->listening(); l == who) {
        accept_for(*s, *l, comps, n, got);
        s->after_accept();
        if (*got >= n) again.push_back(who);  // it may hold more: a sleeper comes back
      }
    } else if (TcpOffload* t = s->tcp(); t == who) {
      bool more = false;
      if (report(*s, *t, &comps[*got], &more)) ++*got;
      if (more) again.push_back(who);
      if (LentOwner* o = t->lent_owner_if_made()) watch_lender(r, who, o);
    }
  }
  for (; k < members.size(); k++) again.push_back(members[k].first);  // not reached
  if (again.empty()) return;
  {
    std::lock_guard<std::mutex> lock(r->xtreme_mu);
    r->xtreme_tcp_again.insert(r->xtreme_tcp_again.end(), again.begin(), again.end());
  }
  r->xtreme_kick();
}

// The UDP members' completions, from *got on, the rings read first when
// read_rings (up to the room left), never after: a member's own read
// would queue what came meanwhile on members looked at already, leaving
// the ring's descriptor unreadable over it. True when receive callbacks
// took every slot and gave no completion back (more may wait).
bool poll_udp(NetdevRings* r, bool read_rings, vma_completion_t* comps, unsigned int n,
              unsigned int* got_out) {
  unsigned int got = *got_out;
  // Each member's take, counted after the lock: a socket's record may be
  // its last reference, and dropping it leaves xtreme_mu's list.
  struct Taken {
    int fd;
    uint64_t packets, bytes;
  };
  std::vector<Taken> taken;
  // The datagrams of members with a receive callback, passed to it after
  // the lock: the program's code may close a member, or poll again (so
  // not a thread's list either).
  std::vector<ForCallback> for_callback;
  bool full = false;
  {
    std::lock_guard<std::mutex> lock(r->xtreme_mu);
    const size_t m = r->xtreme.size();
    // Without members, the other sockets' datagrams still leave the rings.
    if (read_rings)
      for (size_t read = 0, want = std::max<size_t>(n - got, 1); read < want;) {
        const int k = r->stack->poll_rx(static_cast<int>(want - read));
        if (k <= 0) break;
        read += static_cast<size_t>(k);
      }
    if (m == 0) {
      *got_out = got;
      return false;
    }
    const size_t first = r->xtreme_next % m;
    size_t room = n - got;  // completions this poll may still give
    for (size_t i = 0; i < m && room > 0; i++) {
      const NetdevRings::XtremeMember& x = r->xtreme[(first + i) % m];
      net::Datagram d;
      if (x.extras->callback.active()) {
        while (room > 0 && x.ep->recv_zcopy(&d, /*poll_rings=*/false) == 1) {
          for_callback.push_back(
              {x, x.ep->local(), static_cast<uint32_t>(x.ep->queued()), std::move(d)});
          room--;
        }
        continue;
      }
      Taken t{x.fd, 0, 0};
      while (room > 0 && x.ep->recv_zcopy(&d, /*poll_rings=*/false) == 1)
        if (complete(x, std::move(d), &comps[got])) {
          t.packets++;
          t.bytes += comps[got++].packet.total_len;
          room--;
        }
      if (t.packets) taken.push_back(t);
    }
    r->xtreme_next = first + 1;  // the next poll starts at the next socket
    full = room == 0;
  }
  if (full) r->xtreme_member_ready();  // what is left: XtremeLook kicks for it
  for (const Taken& t : taken) count_rx(t.fd, t.packets, t.bytes);
  const unsigned int before = got;
  const bool called = !for_callback.empty();
  pass_callbacks(&for_callback, comps, &got);
  *got_out = got;
  return full && called && got == before;
}

int socketxtreme_poll(int ring_fd, vma_completion_t* comps, unsigned int n, int /*flags*/) {
  if (refused_off<kPoll>() || refused_in_child(EBADFD)) return -1;
  NetdevRings* r = netdev_rings_of_ring_fd(ring_fd);
  if (!r) {
    errno = EBADFD;  // as libvma: not one of the rings' fds
    return -1;
  }
  if (n == 0) return 0;
  if (!comps) {
    errno = EINVAL;
    return -1;
  }
  unsigned int got = 0;
  const NetdevRings::XtremeLook look(r);
  r->xtreme_drain();  // whoever kicked: the kernel's members too
  // The rings' members and the kernel's go first in turn: neither starves
  // the other when the completions run out.
  thread_local unsigned int turn = 0;
  const bool kernel_first = (++turn & 1) != 0;
  if (kernel_first) xtreme_kernel_poll(r, comps, n, &got);
  const bool tcp = r->xtreme_tcp_count.load(std::memory_order_acquire) != 0;
  if (tcp) {
    // The TCP segments into the stack, its timers fired.
    r->program_look();
    poll_tcp(r, comps, n, &got);
  }
  if (!kernel_first) xtreme_kernel_poll(r, comps, n, &got);
  // The TCP look read the rings when it ran. Datagrams receive callbacks
  // took leave no completion: while they take every slot, the members'
  // queues (the ring's descriptor may no longer show them) are looked at
  // again, a bounded number of times, the rings not read again.
  for (int pass = 0; pass < kUdpPasses && poll_udp(r, !tcp && pass == 0, comps, n, &got); pass++) {
  }
  return static_cast<int>(got);
}

int free_vma_packets(vma_packet_desc_t* pkts, int num) {
  if (refused_off<kFreePackets>() || refused_in_child(ENOENT)) return -1;
  return result(xtreme_buffs().free_packets(pkts, num));
}

int ref_vma_buff(vma_buff_t* b) {
  if (refused_off<kRef>() || refused_in_child(ENOENT)) return -1;
  return result(xtreme_buffs().ref(b));
}

int free_vma_buff(vma_buff_t* b) {
  if (refused_off<kFree>() || refused_in_child(ENOENT)) return -1;
  return result(xtreme_buffs().unref(b));
}

// The entries as the table holds them: -1/errno, never an exception.
int entry_poll(int fd, vma_completion_t* comps, unsigned int n, int flags) {
  return interpose::edge_call([&] { return socketxtreme_poll(fd, comps, n, flags); });
}
int entry_free_vma_packets(vma_packet_desc_t* pkts, int num) {
  return interpose::edge_call([&] { return free_vma_packets(pkts, num); });
}
int entry_ref_vma_buff(vma_buff_t* b) {
  return interpose::edge_call([&] { return ref_vma_buff(b); });
}
int entry_free_vma_buff(vma_buff_t* b) {
  return interpose::edge_call([&] { return free_vma_buff(b); });
}

}  // namespace

XtremeBuffs& xtreme_buffs() {
  static XtremeBuffs* b = new XtremeBuffs;  // never freed: a program may free a buffer at exit
  return *b;
}

bool socketxtreme_mode() { return vs::get(vs::Id::kSocketXtreme) != 0; }

void xtreme_join(NetdevRings* rings, int fd, net::UdpEndpoint* ep, const RxExtras* extras) {
  std::lock_guard<std::mutex> lock(rings->xtreme_mu);
  rings->xtreme.push_back({fd, ep, extras});
  ep->watch(true);  // another thread's read of its datagram wakes the ring fd
  // One queued between its bind and now woke nobody.
  if (ep->queued()) rings->xtreme_kick();
}

void xtreme_leave(NetdevRings* rings, net::UdpEndpoint* ep) {
  std::lock_guard<std::mutex> lock(rings->xtreme_mu);
  ep->watch(false);
  auto& v = rings->xtreme;
  v.erase(std::remove_if(v.begin(), v.end(), [&](const auto& x) { return x.ep == ep; }), v.end());
}

void xtreme_tcp_join(NetdevRings* rings, int fd, const void* who, bool listener) {
  std::lock_guard<std::mutex> lock(rings->xtreme_mu);
  if (!rings->xtreme_tcp.emplace(who, NetdevRings::XtremeTcp{fd, listener}).second) return;
  if (listener) rings->xtreme_tcp_listeners.push_back(who);
  rings->xtreme_tcp_count.store(rings->xtreme_tcp.size(), std::memory_order_release);
}

void xtreme_tcp_watch(NetdevRings* rings, const void* who, net::tcp::Socket* sock) {
  rings->tcp->watch_ready(sock, who);  // listed: a program asleep on the ring learns of it
}

void xtreme_tcp_leave(NetdevRings* rings, const void* who) {
  std::lock_guard<std::mutex> lock(rings->xtreme_mu);
  rings->xtreme_tcp.erase(who);
  rings->xtreme_tcp_count.store(rings->xtreme_tcp.size(), std::memory_order_release);
  std::erase(rings->xtreme_tcp_listeners, who);
  std::erase(rings->xtreme_tcp_again, who);
  std::erase_if(rings->xtreme_tcp_lending, [who](auto& l) {
    if (l.first != who) return false;
    drop_lender(l);
    return true;
  });
}

void add_xtreme_entries(vma_api_t* given) {
  given->socketxtreme_poll = entry_poll;
  given->socketxtreme_free_vma_packets = entry_free_vma_packets;
  given->socketxtreme_ref_vma_buff = entry_ref_vma_buff;
  given->socketxtreme_free_vma_buff = entry_free_vma_buff;
}

}  // namespace ss::vma::preload
