#include "vma_preload/tcp_listen.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <string>

#include "core/base/deadline.h"
#include "core/base/fd_table.h"
#include "core/base/interruptible_poll.h"
#include "core/base/log.h"
#include "core/base/proc_sys.h"
#include "core/base/scoped_count.h"
#include "interpose/program_memory.h"
#include "interpose/real.h"
#include "libvmacompat/settings.h"
#include "vma_preload/socket_record.h"
#include "vma_preload/fork_join.h"
#include "vma_preload/netdev_rings.h"
#include "vma_preload/socket_flags.h"
#include "vma_preload/socketxtreme.h"
#include "vma_preload/tcp_offload.h"
#include "vma_preload/wire_addr.h"

namespace ss::vma::preload {
namespace {

using interpose::edge_wait;
using interpose::real;

}  // namespace

std::unique_ptr<TcpListen> TcpListen::open(int fd, int family, int backlog) {
  sockaddr_storage bound{};
  socklen_t blen = sizeof bound;
  if (real().getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &blen) < 0) return nullptr;
  const net::UdpAddr local = wire_addr(reinterpret_cast<sockaddr*>(&bound), blen);
  if (local.ip.empty() || local.port == 0) return nullptr;
  // An IPv6 wildcard without IPV6_V6ONLY takes IPv4 too: a listener each.
  std::vector<net::IpAddr> ips{local.ip};
  bool dual = false;
  if (family == AF_INET6 && local.ip.family == AF_INET6 && is_any(local.ip)) {
    int v6only = 0;
    socklen_t len = sizeof v6only;
    dual = real().getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &len) == 0 && !v6only;
    if (dual) ips.push_back(net::IpAddr::parse("0.0.0.0"));
  }
  net::tcp::ListenerConfig lc;
  lc.conn = tcp_config_of(fd);
  lc.backlog = accept_queue_limit(backlog);
  lc.max_syn_rate = static_cast<uint32_t>(settings::get(settings::Id::kTcpMaxSynRate));
  std::unique_ptr<TcpListen> l(new TcpListen(family));
  for (const std::string& dev : netdevs_for(local.ip, dual)) {
    NetdevRings* r = netdev_rings(dev);
    if (!r || !r->tcp) continue;
    for (const net::IpAddr& ip : ips) {
      net::tcp::Socket* s = nullptr;
      if (const int err = r->tcp->listen(ip, local.port, lc, &s); err < 0) {
        SS_WARN("listen fd %d: %s refused port %u (%s); the kernel listens there", fd, dev.c_str(),
                local.port, std::strerror(-err));
        continue;
      }
      l->legs_.push_back({r, s, ip, local.port});
      if (std::find(l->netdevs_.begin(), l->netdevs_.end(), r) == l->netdevs_.end())
        l->netdevs_.push_back(r);
      tcp_serve_netdev(r);
    }
  }
  if (l->legs_.empty()) return nullptr;
  if (family == AF_INET && socketxtreme_mode()) {  // as TcpOffload::attach
    l->xtreme_ = true;
    for (NetdevRings* r : l->rings()) xtreme_tcp_join(r, fd, l.get(), /*listener=*/true);
    for (const Leg& g : l->legs_) xtreme_tcp_watch(g.rings, l.get(), g.sock);
    l->xtreme_kernel_ = XtremeKernelMember::join(l->rings().front(), fd, /*listener=*/true);
    if (l->xtreme_kernel_) l->xtreme_key_.store(l->xtreme_kernel_->key());
  }
  SS_DEBUG("listen fd %d (tcp port %u): on %zu listener(s) of the rings", fd, local.port,
           l->legs_.size());
  return l;
}

TcpListen::~TcpListen() {
  xtreme_kernel_.reset();
  unmark_accepting();
  if (xtreme_)
    for (NetdevRings* r : rings()) xtreme_tcp_leave(r, this);
  for (const Leg& l : legs_) l.rings->tcp->close(l.sock);
  if (wait_fd_ >= 0) real().close(wait_fd_);
}

void TcpListen::mark_accepting() {
  if (active_.load(std::memory_order_acquire) || left_.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (activity_ || left_.load(std::memory_order_relaxed)) return;
  activity_ = std::make_shared<AcceptActivity>();
  for (const Leg& l : legs_) {
    if (l.rings->slot != 0) continue;  // a joined child's: its owner keeps the groups
    std::lock_guard<std::mutex> rl(l.rings->accepting_mu);
    l.rings->accepting.emplace(std::make_pair(l.ip, l.port), activity_);
  }
  active_.store(activity_.get(), std::memory_order_release);
}

void TcpListen::accepted_now() {
  if (AcceptActivity* a = active_.load(std::memory_order_acquire))
    a->last_ms.store(AcceptActivity::now_ms(), std::memory_order_relaxed);
}

void TcpListen::unmark_accepting() {
  std::shared_ptr<AcceptActivity> a;  // kept: threads still in calls use it
  {
    std::lock_guard<std::mutex> lock(mu_);
    a = activity_;
  }
  if (!a) return;
  bool owned = false;
  for (const Leg& l : legs_) {
    if (l.rings->slot != 0) continue;
    owned = true;
    std::lock_guard<std::mutex> rl(l.rings->accepting_mu);
    for (auto it = l.rings->accepting.begin(); it != l.rings->accepting.end();)
      it = it->second == a ? l.rings->accepting.erase(it) : std::next(it);
  }
  // Its slot out of the port's group now, not at the next second's look:
  // SYNs hashed to it would find no listener meanwhile.
  if (owned) wake_rings_service();
}

bool TcpListen::leave_rings() {
  left_.store(true);
  unmark_accepting();
  const bool keep = handed_out_.load() || in_accept_.load() > 0 || auto_accepting_.load();
  for (const Leg& l : legs_) l.rings->tcp->stop_listening(l.sock, keep);
  return keep && holds_completed();
}

int TcpListen::join_groups() {
  for (size_t i = 0; i < legs_.size(); i++) {
    const Leg& g = legs_[i];
    const int err = fork_join_group(g.rings->ifname, g.ip, g.port, static_cast<int>(g.rings->slot));
    if (err < 0) {
      for (size_t j = 0; j < i; j++)
        fork_join_group(legs_[j].rings->ifname, legs_[j].ip, legs_[j].port,
                        -static_cast<int>(legs_[j].rings->slot));
      return err;
    }
  }
  return 0;
}

void TcpListen::leave_groups() {
  for (const Leg& g : legs_)
    fork_join_group(g.rings->ifname, g.ip, g.port, -static_cast<int>(g.rings->slot));
}

bool TcpListen::holds_completed() {
  for (const Leg& l : legs_)
    if (l.rings->tcp->events(l.sock) & POLLIN) return true;
  return false;
}

int TcpListen::auto_accept(int fd, int* nfd, sockaddr_storage* peer, socklen_t* len) {
  auto_accepting_.store(true, std::memory_order_relaxed);
  mark_accepting();
  const int r = take(fd, 0, nfd, reinterpret_cast<sockaddr*>(peer), len);
  if (r == 0) accepted_now();
  return r;
}

void TcpListen::progress() {
  for (NetdevRings* r : netdevs_) r->program_look();
}

int TcpListen::take(int fd, int flags, int* out, sockaddr* addr, socklen_t* len) {
  std::unique_lock lock(mu_);
  const size_t n = legs_.size();
  for (size_t k = 0; k < n; k++) {
    const Leg& l = legs_[(next_leg_ + k) % n];
    if (!(l.rings->tcp->events(l.sock) & POLLIN)) continue;
    // The new descriptor first: out of descriptors, the connection stays
    // queued (as Linux's accept leaves it). A kernel socket of the
    // listener's family, never connected, recorded with the connection.
    const int nfd = real().socket(family_, SOCK_STREAM | flags, 0);
    if (nfd < 0) return -errno;
    if (!inherit_) inherit_ = options_to_inherit(fd);
    set_kept_options(nfd, *inherit_);  // getsockopt answers as on Linux's accepted socket
    net::tcp::Socket* s = nullptr;
    net::tcp::FourTuple t;
    if (l.rings->tcp->accept(l.sock, &s, &t) < 0) {  // another thread took it
      real().close(nfd);
      continue;
    }
    next_leg_ = (next_leg_ + k + 1) % n;
    lock.unlock();
    handed_out_.store(true, std::memory_order_relaxed);
    drop_stale(nfd);
    track_socket(nfd, family_, SOCK_STREAM | flags, IPPROTO_TCP);
    const auto rec = FdTable::instance().get<SocketRecord>(nfd, FdKind::kVmaSocket);
    if (!rec) {  // beyond the fd table: nothing could serve it
      l.rings->tcp->close(s, /*abort=*/true);
      real().close(nfd);
      return -EMFILE;
    }
    rec->adopt_tcp(TcpOffload::adopt(l.rings, s, family_));
    sockaddr_storage a;
    const socklen_t alen = program_addr({t.remote, t.remote_port}, family_, &a);
    if (const int err = addr ? give_name(a, alen, addr, len) : 0; err < 0) {
      close_recorded(nfd);  // the kernel drops the new file too (its connection reset)
      return err;
    }
    *out = nfd;
    return 0;
  }
  return -EAGAIN;
}

bool TcpListen::take_kernel_accepts() {
  auto_accepting_.store(true, std::memory_order_seq_cst);
  left_to_accept_.store(true, std::memory_order_seq_cst);
  if (in_accept_.load(std::memory_order_seq_cst) != 0) return false;
  left_to_accept_.store(false, std::memory_order_relaxed);
  return true;
}

void TcpListen::xtreme_kernel_published() {
  if (xtreme_kernel_) xtreme_kernel_->look_again();
}

int TcpListen::accept(int fd, sockaddr* addr, socklen_t* len, int flags) {
  if (flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) {
    errno = EINVAL;
    return -1;
  }
  // Counted before the look: socketXtreme's kernel accepts see this
  // thread, or it sees them (take_kernel_accepts). The last such thread
  // to leave wakes a program asleep on the ring for what a poll left it
  // (after the count falls: declared first).
  struct Leaving {
    TcpListen* l;
    ~Leaving() {
      if (l->left_to_accept_.load(std::memory_order_seq_cst) &&
          l->in_accept_.load(std::memory_order_seq_cst) == 0 &&
          l->left_to_accept_.exchange(false, std::memory_order_seq_cst))
        l->netdevs_.front()->xtreme_kick();
    }
  } leaving{this};
  const ScopedCount in_accept(in_accept_);
  if (auto_accepting_.load(std::memory_order_seq_cst)) {  // socketXtreme accepts for it
    SS_WARN_ONCE(
        "accept fd %d: socketxtreme_poll accepts this listener's "
        "connections (EINVAL)",
        fd);
    errno = EINVAL;
    return -1;
  }
  mark_accepting();
  // A thread waiting here counts as accepting however long it waits.
  AcceptActivity* act = active_.load(std::memory_order_acquire);
  std::optional<ScopedCount> waiting;
  if (act) waiting.emplace(act->waiting);
  using clock = std::chrono::steady_clock;
  // Read at the first miss: an accept that finds a connection makes no
  // syscall for them.
  std::optional<bool> nb;
  int timeout = -1;
  clock::time_point end;
  std::vector<pollfd> fds;
  for (;;) {
    progress();
    int nfd;
    if (const int r = take(fd, flags, &nfd, addr, len); r != -EAGAIN) {
      if (r == 0) {
        accepted_now();
        return nfd;
      }
      errno = -r;
      return -1;
    }
    if (!nb) {
      nb = nonblocking(fd, 0);
      timeout = rcv_timeout_ms(fd);  // SO_RCVTIMEO bounds accept too
      end = clock::now() + std::chrono::milliseconds(timeout);
    }
    pollfd k{fd, POLLIN, 0};
    if (real().poll(&k, 1, 0) == 1 || *nb) {
      const int nfd = real().accept4(fd, addr, len, flags);
      // Blocking: another acceptor took it (a socketXtreme poll in another
      // process, its O_NONBLOCK shared for that call): wait on.
      if (nfd >= 0 || *nb || errno != EAGAIN) return nfd;
      continue;
    }
    // Asleep on the kernel listener, the rings and the legs' kick (this thread's eventfd).
    fds.assign(1, k);
    uint64_t due = UINT64_MAX, now = 0;
    for (NetdevRings* r : netdevs_) {
      r->poll_fds(&fds);
      due = std::min(due, r->tcp->next_due());
      now = r->tcp->now();
    }
    const size_t kick_at = fds.size();
    std::deque<net::tcp::ScopedWaiter> joined;  // left however the sleep ends
    bool unkicked = false;
    for (const Leg& l : legs_) {
      const int kick = joined.emplace_back(*l.rings->tcp, l.sock).kick;
      unkicked = unkicked || kick < 0;
      if (fds.size() == kick_at && kick >= 0) fds.push_back({kick, POLLIN, 0});  // the thread's one
    }
    int ms = -1;
    if (timeout >= 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - clock::now());
      ms = static_cast<int>(std::max<int64_t>(left.count(), 0));
    }
    ms = shorter_sleep_ms(ms, ms_until(due, now));
    if (unkicked) cut_sleep_ms(&ms);  // a kick missing: look often
    // Joined, then looked again: a connection that came meanwhile kicks.
    bool ready = false;
    for (const Leg& l : legs_) ready = ready || (l.rings->tcp->events(l.sock) & POLLIN);
    int rc = 0;
    if (!ready) {
      struct Asleep {  // left however the poll ends (a cancellation too)
        TcpListen* l;
        ~Asleep() { l->leave_ring_sleep(); }
      };
      enter_ring_sleep();
      const Asleep asleep{this};
      rc = interruptible_poll(fds.data(), fds.size(), ms, timeout < 0);
    }
    const bool kicked = fds.size() > kick_at && (fds[kick_at].revents & POLLIN);
    for (net::tcp::ScopedWaiter& w : joined) w.kicked = kicked;
    if (rc == -EINTR) {
      errno = EINTR;
      return -1;
    }
    if (timeout >= 0 && clock::now() >= end) {
      errno = EAGAIN;
      return -1;
    }
  }
}

short TcpListen::readiness(int fd, short events, bool poll_rings) {
  if (poll_rings) progress();
  short ev = 0;
  for (const Leg& l : legs_) ev |= l.rings->tcp->events(l.sock) & POLLIN;
  pollfd k{fd, events, 0};
  if (real().poll(&k, 1, 0) == 1) ev |= k.revents;
  return static_cast<short>(ev & (events | POLLERR | POLLHUP));
}

uint64_t TcpListen::count_arrivals(int fd) {
  uint64_t n = 0;
  kernel_edges_.count({fd}, &n);  // unmoved without its set
  for (const Leg& l : legs_) n += l.rings->tcp->listener_counters(l.sock).handshakes;
  return n;
}

uint64_t TcpListen::arrivals(int fd) {
  progress();  // the rings read first: readiness() after the count reads none
  const uint64_t n = count_arrivals(fd);
  last_arrivals_ = n;
  return n;
}

int TcpListen::wait_set(int fd) {
  if (wait_fd_ >= 0) return wait_fd_;
  const int ep = real().epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) return -1;
  std::vector<int> members{fd};
  for (NetdevRings* r : netdevs_) members.push_back(r->wait_fd());
  for (const int m : members) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = m;
    if (m < 0 || (real().epoll_ctl(ep, EPOLL_CTL_ADD, m, &ev) < 0 && errno != EEXIST)) {
      real().close(ep);
      return -1;
    }
  }
  return wait_fd_ = ep;
}

WaitTarget TcpListen::wait_target(int fd, short events, int* sleep_ms) {
  if (readiness(fd, events)) return WaitTarget{};  // kReady
  WaitTarget t;
  t.events = events;
  // An edge wait: the rings' next connection or the kernel listener's next
  // arrival wakes it, not one waiting unaccepted.
  const bool edge = edge_wait(events);
  if (!edge && !(events & POLLIN)) {  // nothing of the rings': the kernel socket says
    t.fd = fd;
    return t;
  }
  mark_accepting();  // before mu_: it takes it
  std::lock_guard lock(mu_);
  int set = -1, edge_kick = -1;
  if (edge) {
    std::vector<pollfd> rings;
    for (NetdevRings* r : netdevs_)
      if (const int w = r->wait_fd(); w >= 0) rings.push_back({w, POLLIN, 0});
    if (rings.size() == netdevs_.size())
      set = kernel_edges_.sleep_fd({fd}, rings, &edge_kick, sleep_ms);
  } else {
    set = wait_set(fd);
  }
  if (set < 0) {  // out of descriptors: only looked at
    cut_sleep_ms(sleep_ms);
    return WaitTarget{WaitTarget::kTimeOnly};
  }
  // The legs this sleep joined, handed back to after_wait through the tag;
  // their kicks are this thread's one eventfd (kick.h), polled beside the
  // set, never in it: the set is every sleeping thread's.
  auto joined = std::make_unique<Joined>();
  joined->legs.assign(legs_.size(), false);
  joined->edges = set >= 0 && edge;
  if (edge_kick >= 0) t.kick_fd = edge_kick;
  bool unkicked = false;
  for (size_t i = 0; i < legs_.size(); i++) {
    const int kick = legs_[i].rings->tcp->join_waiters(legs_[i].sock);
    if (kick < 0) {
      unkicked = true;
      continue;
    }
    joined->legs[i] = true;
    t.kick_fd = kick;
  }
  // Joined, then looked again: a handshake completed meanwhile kicked nobody.
  bool ready = false;
  if (edge)
    ready = count_arrivals(fd) != last_arrivals_;
  else
    for (const Leg& l : legs_) ready = ready || (l.rings->tcp->events(l.sock) & POLLIN);
  if (ready) {
    leave(*joined, false);
    return WaitTarget{};
  }
  enter_ring_sleep();  // the set holds the rings' descriptors
  // A sleep for a connection counts as accepting (after_wait ends it).
  if (AcceptActivity* a = active_.load(std::memory_order_acquire)) a->waiting++;
  if (unkicked) cut_sleep_ms(sleep_ms);
  uint64_t due = UINT64_MAX, now = 0;
  for (const Leg& l : legs_) {
    due = std::min(due, l.rings->tcp->next_due());
    now = l.rings->tcp->now();
  }
  *sleep_ms = shorter_sleep_ms(*sleep_ms, ms_until(due, now));
  t.fd = set;
  t.events = POLLIN;
  t.tag = reinterpret_cast<uintptr_t>(joined.release());
  return t;
}

void TcpListen::after_wait(const WaitTarget& armed) {
  if (!armed.tag) return;  // the kernel socket's target
  std::unique_ptr<Joined> joined(reinterpret_cast<Joined*>(armed.tag));
  pollfd p{armed.kick_fd, POLLIN, 0};
  leave(*joined, p.fd >= 0 && real().poll(&p, 1, 0) == 1);
  leave_ring_sleep();  // every tag comes from a sleep that entered it
  // active_ is set before any sleep that counted, and stays.
  if (AcceptActivity* a = active_.load(std::memory_order_acquire)) a->waiting--;
}

void TcpListen::leave(const Joined& joined, bool kicked) {
  for (size_t i = 0; i < legs_.size(); i++)
    if (joined.legs[i]) legs_[i].rings->tcp->leave_waiters(legs_[i].sock, kicked);
  if (joined.edges) kernel_edges_.leave(kicked);
}

void TcpListen::enter_ring_sleep() {
  for (NetdevRings* r : netdevs_) r->turn.enter_sleep();
}

void TcpListen::leave_ring_sleep() {
  bool wake = false;
  for (NetdevRings* r : netdevs_) wake = r->turn.leave_sleep() || wake;
  if (wake) tcp_wake_service();
}

void TcpListen::options_changed() {
  std::lock_guard lock(mu_);
  inherit_.reset();  // read again at the next accept
}

void TcpListen::set_option(net::tcp::Option o, int64_t value) {
  options_changed();
  for (const Leg& l : legs_) l.rings->tcp->set_option(l.sock, o, value);
}

}  // namespace ss::vma::preload
