#include "vma_preload/netdev_rings.h"
#include "vma_preload/tcp_park.h"

#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#include "core/base/log.h"
#include "core/base/service_thread.h"
#include "core/mem/fork_frames.h"
#include "core/mem/region.h"
#include "core/net/netlink_view.h"
#include "core/net/packet_tx.h"
#include "core/net/steered_flow.h"
#include "core/net/udp_route.h"
#include "interpose/program_memory.h"
#include "interpose/real.h"
#include "interpose/signal_count.h"
#include "libvmacompat/ring_depth.h"
#include "libvmacompat/settings.h"
#include "libvmacompat/stats_layout.h"
#include "vma_preload/fork_join.h"
#include "vma_preload/fork_share.h"
#include "vma_preload/socket_record.h"
#include "vma_preload/start.h"
#include "vma_preload/tcp_offload.h"
#include "vma_preload/wire_addr.h"
#if SS_VMA_XDP
#include <linux/bpf.h>  // XDP_PACKET_HEADROOM

#include "core/prov/xdp/xdp_device.h"
#include "core/prov/xdp/xdp_family.h"
#include "core/prov/xdp/xdp_join.h"
#include "core/prov/xdp/xdp_queue.h"
#include "core/prov/xdp/xdp_steering.h"
#endif

namespace ss::vma::preload {
namespace {

constexpr int64_t kMemAllocHugepages = 2;  // VMA_MEM_ALLOC_TYPE: 0 anonymous, 1 contiguous

std::mutex g_mu;
std::atomic<bool> g_xtreme_fds{false};  // some netdev made its ring descriptor
// Null: refused, never asked again. Never destroyed: the service thread
// publishes from it while exit runs the destructors.
std::map<std::string, NetdevRings*>* g_rings_p = new std::map<std::string, NetdevRings*>;
std::map<std::string, NetdevRings*>& rings_map() { return *g_rings_p; }
// In a fork child: the netdevs its parent had rings on (else null).
std::set<std::string>* g_parent_netdevs = nullptr;

// Every netdev's kernel_fds, for a fork child: appended under g_mu, read
// without it (entries before the count are whole).
constexpr size_t kMaxKernelFds = 1024;
std::atomic<int> g_kernel_fds[kMaxKernelFds];
std::atomic<size_t> g_n_kernel_fds{0};

// The netdevs with rings of this process's own, for a fork child and the
// fork handlers (read without g_mu, which a parent thread may hold at the
// fork): appended under g_mu.
constexpr size_t kMaxRingNames = 64;
char g_ring_names[kMaxRingNames][IFNAMSIZ];
const NetdevRings* g_owned[kMaxRingNames];
std::atomic<size_t> g_n_ring_names{0};

void publish_owned(const NetdevRings& r) {
  const size_t i = g_n_ring_names.load(std::memory_order_relaxed);
  // A child there is the kernel's, and its held frames are not copied.
  if (i == kMaxRingNames || r.ifname.size() >= IFNAMSIZ) return;
  memcpy(g_ring_names[i], r.ifname.c_str(), r.ifname.size() + 1);
  g_owned[i] = &r;
  g_n_ring_names.store(i + 1, std::memory_order_release);
}

// The forking thread's, between the handlers: g_fork_mu is held from
// before the fork to after it, so another thread's fork waits, and so
// are the first g_fork_held owned rings' queues (RingQueue::hold_for_fork).
// A fork from a signal handler takes neither (t_fork_held: this thread's
// handlers took them). Never destroyed: a fork may come during exit.
std::mutex g_fork_mu;
size_t g_fork_held = 0;
thread_local bool t_fork_held = false;
mem::ForkFrames& g_fork_frames = *new mem::ForkFrames;

void publish_kernel_fds(const NetdevRings& r) {
  for (const int fd : r.kernel_fds) {
    const size_t i = g_n_kernel_fds.load(std::memory_order_relaxed);
    if (i == kMaxKernelFds) {
      SS_WARN(
          "%s: more ring descriptors than a fork child can close (%zu); a child may keep "
          "the rings alive after its parent",
          r.ifname.c_str(), kMaxKernelFds);
      return;
    }
    g_kernel_fds[i].store(fd, std::memory_order_relaxed);
    g_n_kernel_fds.store(i + 1, std::memory_order_release);
  }
}
net::NetlinkView* g_view = nullptr;  // never freed: the service thread reads it
// follow_kernel's, made with the first g_view (never freed; a fork child's
// copy starts anew: ServiceThread).
std::atomic<ServiceThread*> g_follow{nullptr};

// Also refreshes the rings' vmastat blocks once a second, and answers fork
// children sharing an offloaded socket (fork_share.h).
void follow_kernel(ServiceThread::Run& run) {
  while (!run.stopping()) {
    pollfd fds[3] = {{-1, 0, 0}, {g_view->fd(), POLLIN, 0}, {fork_share_fd(), POLLIN, 0}};
    if (run.poll(fds, 1000) > 0 && (fds[1].revents & POLLIN)) g_view->process_events();
    publish_ring_counters();
    fork_share_serve();
    prune_groups();
    parked_expire(/*all=*/false);
  }
}

// The frames parse_frame dropped as malformed (not those for the kernel).
uint64_t malformed(const net::FrameCounters& f) {
  uint64_t n = 0;
  for (size_t r = static_cast<size_t>(net::FrameReason::kTruncatedEthernet);
       r < net::kFrameReasonCount; r++)
    n += f.by_reason[r];
  return n;
}

// The process's NetlinkView and its service thread, g_mu held. 0 or -errno.
int open_view_locked() {
  if (g_view) return 0;
  std::unique_ptr<net::NetlinkView> v;
  if (const int err = net::NetlinkView::open({}, &v); err < 0) return err;
  if (!g_follow.load(std::memory_order_relaxed))
    g_follow.store(new ServiceThread({"vma-netlink"}, follow_kernel), std::memory_order_release);
  g_view = v.release();
  return g_follow.load(std::memory_order_relaxed)->hold();
}

#if SS_VMA_XDP
int make_stacks(NetdevRings* r, std::shared_ptr<prov::xdp::Device> dev,
                net::UdpStack::Config* cfgp);

int make_rings(const std::string& ifname, std::unique_ptr<NetdevRings>* out) {
  auto r = std::make_unique<NetdevRings>();
  r->ifname = ifname;
  r->ifindex = static_cast<int>(if_nametoindex(ifname.c_str()));
  if (r->ifindex == 0) return -ENODEV;
  const int nq = prov::xdp::rx_queue_count(ifname.c_str());
  if (nq <= 0) return nq < 0 ? nq : -ENODEV;
  net::UdpStack::Config cfg;
  r->depth = ring_depth();
  r->queues.resize(static_cast<size_t>(nq));
  for (int q = 0; q < nq; q++) {
    NetdevRings::Queue& s = r->queues[static_cast<size_t>(q)];
    mem::PoolOptions opt;
    opt.frame_size = r->depth.frame_size;
    opt.frames_per_chunk = r->depth.frames;
    // Shared (a memfd): a fork child that joins the queue maps it
    // (fork_join.h). Pinned by the socket, it is not in a child otherwise:
    // fork would copy it whole. As libvma's registered memory under
    // ibv_fork_init.
    opt.backing = mem::Backing::kShared;
    opt.hugepages = settings::get(settings::Id::kMemAllocType) == kMemAllocHugepages;
    opt.name = "vma-umem";
    opt.dont_fork = true;
    if (const int err = mem::Pool::create(opt, &s.pool); err < 0) return err;
    for (size_t c = 0; c < s.pool->chunk_count(); c++)  // lent to zero-copy readers
      interpose::trust_region(s.pool->chunk_base(c), s.pool->chunk_bytes());
    prov::RingQueueConfig rc;
    rc.pool = s.pool.get();
    rc.ifname = ifname.c_str();
    rc.queue_id = static_cast<uint32_t>(q);
    rc.fill_size = r->depth.fill;
    rc.rx_size = r->depth.rx;
    rc.tx_size = r->depth.tx;
    rc.completion_size = r->depth.completion;
    if (const int err = prov::xdp::XdpQueue::create(rc, &s.queue); err < 0) return err;
    cfg.rings.push_back({s.queue.get(), s.pool.get()});
  }
  cfg.initial_fill = r->depth.fill;
  if (const int err = make_stacks(r.get(), prov::xdp::Device::find(ifname.c_str()), &cfg); err < 0)
    return err;
  *out = std::move(r);
  return 0;
}

// A fork child's rings on ifname, joined to its parent's queues: its own
// frames (copies), the packet socket the owner made to send, the stacks
// as the owner's.
int make_joined_rings(const std::string& ifname, std::unique_ptr<NetdevRings>* out) {
  auto r = std::make_unique<NetdevRings>();
  r->ifname = ifname;
  r->ifindex = static_cast<int>(if_nametoindex(ifname.c_str()));
  if (r->ifindex == 0) return -ENODEV;
  JoinShare share;
  if (const int err = fork_join_ask(ifname, &share); err < 0) return err;
  std::shared_ptr<prov::xdp::Device> dev;
  if (const int err = prov::xdp::Device::join(ifname.c_str(), share.device, &dev); err < 0)
    return err;
  if (const int err = net::PacketTx::adopt(share.packet, &r->packets); err < 0) return err;
  r->depth = ring_depth();
  net::UdpStack::Config cfg;
  r->queues.resize(share.queues.size());
  for (size_t q = 0; q < share.queues.size(); q++) {
    NetdevRings::Queue& s = r->queues[q];
    mem::PoolOptions opt;
    opt.frame_size = share.queues[q].frame_size;
    opt.frames_per_chunk = r->depth.frames;
    opt.backing = mem::Backing::kPrivate;
    opt.name = "vma-joined";
    if (const int err = mem::Pool::create(opt, &s.pool); err < 0) return err;
    for (size_t c = 0; c < s.pool->chunk_count(); c++)  // lent to zero-copy readers
      interpose::trust_region(s.pool->chunk_base(c), s.pool->chunk_bytes());
    if (const int err = prov::xdp::JoinedQueue::create(ifname.c_str(), share.queues[q], dev,
                                                       s.pool.get(), r->depth.rx, &s.queue);
        err < 0)
      return err;
    cfg.rings.push_back({s.queue.get(), s.pool.get()});
  }
  cfg.initial_fill = 0;  // the owner's frames fill the shared fill rings
  r->slot = dev->slot();
  if (const int err = make_stacks(r.get(), dev, &cfg); err < 0) return err;
  *out = std::move(r);
  return 0;
}

// What a netdev's rings carry over its queues (cfg.rings made): the
// steering, the view, the send paths and the stacks. A joined child's
// queues send nothing: it needs the packet socket.
int make_stacks(NetdevRings* r, std::shared_ptr<prov::xdp::Device> dev,
                net::UdpStack::Config* cfgp) {
  net::UdpStack::Config& cfg = *cfgp;
  const std::string& ifname = r->ifname;
  const bool joined = dev && dev->slot() != 0;
  r->steering = std::make_unique<prov::xdp::XdpSteering>(std::move(dev));
  cfg.steering = r->steering.get();
  cfg.ifindex = r->ifindex;
  if (const int err = open_view_locked(); err < 0) return err;
  // VMA_MTU: the rings carry nothing larger; the kernel fragments the rest.
  r->resolver = net::make_netlink_resolver(
      g_view, r->ifindex, static_cast<uint32_t>(settings::get(settings::Id::kMtu)));
  r->frames = std::make_unique<net::FrameTx>(cfg.rings.front().queue, cfg.rings.front().pool);
  net::tcp::Stack::Config tc;
  tc.steering = r->steering.get();
  tc.tx = r->frames.get();
  // Where the kernel writes a frame; a multi-buffer ring takes a segment
  // over several (the MSS announced then follows the MTU alone).
  if (!(cfg.rings.front().queue->caps() & prov::kRingCapRxChained))
    tc.rx_frame_max = r->depth.frame_size - XDP_PACKET_HEADROOM;
  // A copying tx ring makes an skb of each frame anyway: a packet socket
  // with GSO makes one of each burst. A joined child has the one its
  // owner made.
  const bool copies = !(cfg.rings.front().queue->caps() & prov::kRingCapZeroCopy);
  if (joined && !r->packets) return -EINVAL;
  if (!joined && copies && settings::get(settings::Id::kTcpGso)) {
    if (const int err = net::PacketTx::open(r->ifindex, &r->packets); err < 0)
      SS_INFO("%s: TCP segments go on the tx ring: no packet socket: %s", ifname.c_str(),
              strerror(-err));
  }
  tc.packets = r->packets.get();
  tc.resolver = r->resolver.get();
  tc.on_earlier_due = tcp_wake_service;
  tc.on_first_ready = [r] { r->xtreme_member_ready(); };
  if (const int err = net::tcp::Stack::create(tc, &r->tcp); err < 0) return err;
  cfg.tcp = r->tcp.get();
  cfg.on_watched_arrival = [r] { r->xtreme_member_ready(); };
  if (const int err = net::UdpStack::create(cfg, &r->stack); err < 0) return err;
  r->tx = std::make_unique<net::UdpTx>(r->stack.get(), r->resolver.get(), r->frames.get());
  for (const NetdevRings::Queue& q : r->queues) {
    short ev = 0;
    if (const int fd = q.queue->poll_fd(prov::Ring::kRx, &ev); fd >= 0) r->kernel_fds.push_back(fd);
  }
  if (const auto dev = prov::xdp::Device::find(ifname.c_str())) dev->fds(&r->kernel_fds);
  // Each UMEM's memfd (a joining child gets its own).
  for (const NetdevRings::Queue& q : r->queues) {
    int fd = -1;
    uint64_t off = 0;
    if (mem::find_backing(q.pool->chunk_base(0), q.pool->chunk_bytes(), &fd, &off))
      r->kernel_fds.push_back(fd);
  }
  if (r->packets) r->kernel_fds.push_back(r->packets->fd());
  if (stats::Publisher* p = socket_stats())
    r->stats = p->open_group(stats::kRing, static_cast<int>(rings_map().size()), ifname.c_str());
  return 0;
}
#else
int make_rings(const std::string&, std::unique_ptr<NetdevRings>*) { return -EOPNOTSUPP; }
int make_joined_rings(const std::string&, std::unique_ptr<NetdevRings>*) { return -EOPNOTSUPP; }
#endif

}  // namespace

void NetdevRings::program_look() {
  turn.program_looked();
  stack->poll_rx();
  tcp->run_timers();
}

namespace {
thread_local NetdevRings* t_xtreme_looking = nullptr;  // XtremeLook's
thread_local bool t_xtreme_held = false;               // a kick it held back
}  // namespace

void NetdevRings::xtreme_member_ready() {
  if (t_xtreme_looking != this)
    xtreme_kick();
  else
    t_xtreme_held = true;
}

NetdevRings::XtremeLook::XtremeLook(NetdevRings* r)
    : r_(r), outer_(t_xtreme_looking), outer_held_(t_xtreme_held) {
  t_xtreme_looking = r;
  t_xtreme_held = false;
}

// What the look's own reads (a receive callback's calls too) queued and
// it did not report: a datagram left on a member when the completions ran
// out, a member's arrival after its turn.
NetdevRings::XtremeLook::~XtremeLook() {
  const bool held = t_xtreme_held;
  t_xtreme_looking = outer_;
  t_xtreme_held = outer_held_;
  bool waiting = r_->tcp && r_->tcp->any_ready();
  if (!waiting && held) {
    std::lock_guard<std::mutex> lock(r_->xtreme_mu);
    waiting = r_->xtreme_udp_waiting_locked();
  }
  if (waiting) r_->xtreme_kick();
}

void NetdevRings::poll_fds(std::vector<pollfd>* fds) const {
  for (const Queue& q : queues) {
    short ev = 0;
    const int fd = q.queue->poll_fd(prov::Ring::kRx, &ev);
    if (fd >= 0) fds->push_back({fd, ev, 0});
  }
}

int NetdevRings::wait_fd() {
  std::lock_guard<std::mutex> lock(wait_mu);
  if (wait_fd_ >= 0) return wait_fd_;
  const int ep = interpose::real().epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) return -1;
  std::vector<pollfd> fds;
  poll_fds(&fds);
  for (const pollfd& p : fds) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = p.fd;
    if (interpose::real().epoll_ctl(ep, EPOLL_CTL_ADD, p.fd, &ev) < 0) {
      interpose::real().close(ep);
      return -1;
    }
  }
  return wait_fd_ = ep;
}

int NetdevRings::xtreme_fd() {
  std::lock_guard<std::mutex> lock(wait_mu);
  if (xtreme_fd_ >= 0) return xtreme_fd_;
  const int ep = interpose::real().epoll_create1(EPOLL_CLOEXEC);
  const int ev = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  std::vector<pollfd> fds;
  poll_fds(&fds);
  fds.push_back({ev, POLLIN, 0});
  bool ok = ep >= 0 && ev >= 0;
  for (const pollfd& p : fds) {
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.fd = p.fd;
    ok = ok && interpose::real().epoll_ctl(ep, EPOLL_CTL_ADD, p.fd, &e) == 0;
  }
  if (!ok) {
    if (ep >= 0) interpose::real().close(ep);
    if (ev >= 0) interpose::real().close(ev);
    return -1;
  }
  xtreme_event_.store(ev, std::memory_order_release);
  g_xtreme_fds.store(true, std::memory_order_release);
  // Members that changed before it existed kicked nobody (on_first_ready
  // calls once per empty list): a first sleep on it must not miss them.
  bool waiting = tcp && tcp->any_ready();
  if (!waiting) {
    std::lock_guard<std::mutex> x(xtreme_mu);
    waiting = xtreme_udp_waiting_locked();
  }
  if (waiting) xtreme_kick();
  return xtreme_fd_ = ep;
}

bool NetdevRings::xtreme_udp_waiting_locked() const {
  return std::any_of(xtreme.begin(), xtreme.end(),
                     [](const XtremeMember& x) { return x.ep->queued() != 0; });
}

void NetdevRings::xtreme_kick() {
  const int ev = xtreme_event_.load(std::memory_order_acquire);
  const uint64_t one = 1;
  if (ev >= 0 && !xtreme_kicked_.exchange(true, std::memory_order_acq_rel))
    (void)!::write(ev, &one, sizeof one);
}

void NetdevRings::xtreme_drain() {
  const int ev = xtreme_event_.load(std::memory_order_acquire);
  uint64_t n;
  // A spinning poll pays no system call while nothing was kicked. The
  // mark goes only with a read that took a write (one is owed while it is
  // set): a write not landed yet is read by the next drain, and a kick
  // that found the mark set meanwhile is served by the look that follows.
  if (ev < 0 || !xtreme_kicked_.load(std::memory_order_acquire)) return;
  const int saved = errno;
  if (::read(ev, &n, sizeof n) == sizeof n) xtreme_kicked_.store(false, std::memory_order_release);
  errno = saved;
}

std::set<std::string> netdevs_for(const net::IpAddr& ip, bool dual) {
  std::set<std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) < 0) return out;
  const bool any = is_any(ip) || net::is_multicast(ip);  // a group arrives where it is joined
  for (const ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || (i->ifa_flags & IFF_LOOPBACK)) continue;
    const int fam = i->ifa_addr->sa_family;
    if (fam != AF_INET && fam != AF_INET6) continue;
    const net::UdpAddr a =
        wire_addr(i->ifa_addr, fam == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
    if (any ? (fam == ip.family || (dual && fam == AF_INET)) : a.ip == ip) out.insert(i->ifa_name);
  }
  freeifaddrs(list);
  return out;
}

int route_ifindex(const net::IpAddr& dst) {
  net::NetlinkView* view;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (open_view_locked() < 0) return 0;
    view = g_view;
  }
  net::Flow f;
  f.dst = dst;
  net::Route r;
  return view->route(f, &r) == 0 ? r.ifindex : 0;
}

void publish_ring_counters() {
  std::lock_guard<std::mutex> lock(g_mu);
  for (const auto& [name, r] : rings_map()) {
    if (!r || !r->stats) continue;
    const net::UdpRxCounters rx = r->stack->rx_counters();
    const net::UdpTxCounters tx = r->tx->counters();
    uint64_t ring_drops = 0;
    for (const NetdevRings::Queue& q : r->queues) {
      const prov::RingStats rs = q.queue->stats();
      ring_drops += rs.rx_dropped_no_fill + rs.rx_dropped_rx_full;
    }
    uint64_t redirected = 0, dropped = 0;
#if SS_VMA_XDP
    prov::xdp::Counters xc;
    if (prov::xdp::counters(name.c_str(), &xc) == 0) {
      redirected = xc.redirected;
      dropped = xc.dropped;
    }
#endif
    r->stats.set(stats::kRingRxPackets, rx.delivered);
    r->stats.set(stats::kRingRxBytes, rx.delivered_bytes);
    r->stats.set(stats::kRingTxPackets, tx.sent);
    r->stats.set(stats::kRingTxBytes, tx.sent_bytes);
    r->stats.set(stats::kRingXdpRedirected, redirected);
    r->stats.set(stats::kRingXdpDropped, dropped + ring_drops);
    r->stats.set(stats::kRingRxMalformed, malformed(rx.frames));
  }
}

void ring_frames_before_fork(bool copy) {
  if (!copy) return;
  g_fork_mu.lock();
  t_fork_held = true;
  interpose::BusyScope busy;  // the rings' locks (signal_count.h)
  g_fork_held = g_n_ring_names.load(std::memory_order_acquire);
  bool short_of_memory = false;
  std::vector<uint8_t> in_rings;
  for (size_t i = 0; i < g_fork_held; i++)
    for (const NetdevRings::Queue& q : g_owned[i]->queues) {
      q.queue->hold_for_fork();  // each one held: ring_frames_after_fork lets go of all
      try {
        q.queue->mark_ring_frames(&in_rings);
        short_of_memory |= g_fork_frames.take(*q.pool, in_rings) < 0;
      } catch (const std::bad_alloc&) {  // never out of a fork handler
        short_of_memory = true;
      }
    }
  if (short_of_memory)
    SS_WARN_ONCE(
        "fork: no memory to copy the frames the program holds into the child; it cannot read "
        "them there");
}

void ring_frames_after_fork(bool child) {
  if (!t_fork_held || interpose::in_handler()) return;  // the fork that took them
  t_fork_held = false;
  for (size_t i = 0; i < g_fork_held; i++)
    for (const NetdevRings::Queue& q : g_owned[i]->queues) q.queue->release_after_fork();
  int err = 0;
  if (!child) {
    g_fork_frames.drop();
  } else {
    try {
      err = g_fork_frames.place();
    } catch (const std::bad_alloc&) {  // never out of a fork handler
      err = -ENOMEM;
      g_fork_frames.drop();
    }
  }
  if (err < 0)
    SS_WARN(
        "fork child: frames its parent held not placed (%s); reading them there fails or "
        "reads other memory",
        std::strerror(-err));
  g_fork_mu.unlock();
}

bool close_rings_in_fork_child() {
  const size_t n = g_n_kernel_fds.load(std::memory_order_acquire);
  for (size_t i = 0; i < n; i++)
    interpose::real().close(g_kernel_fds[i].load(std::memory_order_relaxed));
  // Those numbers may be the program's next: a grandchild closes only
  // what this process adds.
  g_n_kernel_fds.store(0, std::memory_order_relaxed);
  // The parent's registry is not this process's: a parent thread may
  // have held its lock, and its rings' descriptors are closed. The netdevs
  // it had rings on are those a listener may join here (fork_join.h).
  auto* had = new std::set<std::string>;
  const size_t names = g_n_ring_names.load(std::memory_order_acquire);
  for (size_t i = 0; i < names; i++) had->insert(g_ring_names[i]);
  g_n_ring_names.store(0, std::memory_order_relaxed);  // ours are not a grandchild's to join
  if (g_view) interpose::real().close(g_view->fd());   // the parent's: ours is made anew
  new (&g_mu) std::mutex;
  g_parent_netdevs = had;
  g_rings_p = new std::map<std::string, NetdevRings*>;
  g_view = nullptr;  // the parent's socket stays the parent's: a view of our own
  return n > 0;
}

NetdevRings* netdev_rings(const std::string& ifname) {
  std::lock_guard<std::mutex> lock(g_mu);
  // A takeover tries again where a join failed (the owner was exiting:
  // SocketRecord::join_in_child).
  if (auto it = rings_map().find(ifname); it != rings_map().end() && (it->second || !t_taking_over))
    return it->second;
  std::unique_ptr<NetdevRings> r;
  int err;
  if (in_fork_child()) {
    // Only a listener the parent had on the rings joins its queues, or
    // takes them over; other sockets of a child are the kernel's (asked
    // again, not remembered).
    if (!(t_joining || t_taking_over) || !g_parent_netdevs || !g_parent_netdevs->count(ifname))
      return nullptr;
  }
  if (in_fork_child() && t_joining) {
    err = make_joined_rings(ifname, &r);
    if (err < 0) {
      SS_INFO("%s: fork child: cannot join the parent's rings (%s); the kernel serves it",
              ifname.c_str(), std::strerror(-err));
      rings_map()[ifname] = nullptr;
      return nullptr;
    }
    SS_INFO("%s: fork child: joined the parent's %zu rx queue(s)", ifname.c_str(),
            r->queues.size());
    publish_kernel_fds(*r);
    return rings_map()[ifname] = r.release();
  }
  err = make_rings(ifname, &r);
  // Taking over: the kernel frees the gone parent's queues a moment after
  // its exit (a work item).
  for (int i = 0; i < 20 && err == -EBUSY && t_taking_over; i++) {
    usleep(10'000);
    err = make_rings(ifname, &r);
  }
  if (err < 0) {
    SS_WARN("%s: no rings (%s); its UDP sockets are served by the kernel", ifname.c_str(),
            std::strerror(-err));
    rings_map()[ifname] = nullptr;
    return nullptr;
  }
  const RingDepth& d = r->depth;
  SS_INFO(
      "%s: UDP offloaded on %zu rx queue(s); each: fill and rx rings %u, tx and completion "
      "%u, %zu frames of %zu B (%zu MiB, %s)",
      ifname.c_str(), r->queues.size(), d.fill, d.tx, d.frames, d.frame_size, d.bytes() >> 20,
      r->queues.front().pool->chunk_huge(0) ? "hugepages" : "normal pages");
  publish_kernel_fds(*r);
  publish_owned(*r);
  return rings_map()[ifname] = r.release();
}

thread_local bool t_joining = false, t_taking_over = false;

#if SS_VMA_XDP
int rings_share(const std::string& ifname, JoinShare* out) {
  std::lock_guard<std::mutex> lock(g_mu);
  const auto it = rings_map().find(ifname);
  if (it == rings_map().end() || !it->second) return -ENOENT;
  const NetdevRings& r = *it->second;
  const auto dev = prov::xdp::Device::find(ifname.c_str());
  if (!dev) return -ENOENT;
  if (const int err = dev->share(&out->device); err < 0) return err;
  for (const NetdevRings::Queue& q : r.queues) {
    const auto* xq = dynamic_cast<const prov::xdp::XdpQueue*>(q.queue.get());
    prov::xdp::QueueShare one;
    if (!xq) return -EOPNOTSUPP;
    if (const int err = xq->share(&one); err < 0) return err;
    if ((one.own = prov::xdp::JoinedQueue::open_socket()) < 0) return one.own;
    out->fds.push_back(one.own);
    out->queues.push_back(one);
  }
  std::unique_ptr<net::PacketTx> tx;
  if (const int err = net::PacketTx::open(r.ifindex, &tx); err < 0) return err;
  if ((out->packet = fcntl(tx->fd(), F_DUPFD_CLOEXEC, 0)) < 0) return -errno;
  out->fds.push_back(out->packet);
  return 0;
}

namespace {

// Whether the owner accepts on the port itself (its slot 0 belongs in
// the group then).
bool owner_accepts(NetdevRings& r, const std::pair<net::IpAddr, uint16_t>& port) {
  const int64_t now = AcceptActivity::now_ms();
  std::lock_guard<std::mutex> lock(r.accepting_mu);
  const auto [first, last] = r.accepting.equal_range(port);
  for (auto it = first; it != last; ++it) {
    const AcceptActivity& a = *it->second;
    if (a.waiting.load(std::memory_order_relaxed) > 0 ||
        now - a.last_ms.load(std::memory_order_relaxed) < NetdevRings::kAcceptingMs)
      return true;
  }
  return false;
}

// Slot 0 in or out of `slots` as the owner accepts on the port or not:
// whether they changed.
bool place_owner(NetdevRings& r, const std::pair<net::IpAddr, uint16_t>& port,
                 std::vector<uint32_t>& slots) {
  const bool in = std::find(slots.begin(), slots.end(), 0u) != slots.end();
  const bool want = owner_accepts(r, port);
  if (in == want) return false;
  if (want)
    slots.insert(slots.begin(), 0u);
  else
    std::erase(slots, 0u);
  return true;
}

// The port's group on the steering program as `slots` says.
void set_group(NetdevRings& r, const std::pair<net::IpAddr, uint16_t>& port,
               std::vector<uint32_t>& slots) {
  const auto dev = prov::xdp::Device::find(r.ifname.c_str());
  prov::xdp::Flow f;
  if (!dev ||
      prov::xdp::XdpSteering::flow(net::steered_flow(IPPROTO_TCP, port.first, port.second), &f) < 0)
    return;
  if (const int err = dev->set_group(f, slots.data(), static_cast<uint32_t>(slots.size())))
    SS_WARN("%s: tcp port %u: the fork children's share of its connections not set: %s",
            r.ifname.c_str(), port.second, strerror(-err));
}

// The port's group after its children changed (`changed`): the owner's
// slot placed, no group for the owner alone (its slot takes the port's
// SYNs anyway), the steering program told; the group dropped once empty.
void regroup(NetdevRings& r,
             std::map<std::pair<net::IpAddr, uint16_t>, std::vector<uint32_t>>::iterator it,
             bool changed) {
  auto& slots = it->second;
  changed = place_owner(r, it->first, slots) || changed;
  if (slots.size() == 1 && slots.front() == 0) slots.clear();
  if (changed || slots.empty()) set_group(r, it->first, slots);
  if (slots.empty()) r.groups.erase(it);
}

}  // namespace

int rings_group_add(const std::string& ifname, const net::IpAddr& ip, uint16_t port, int slot,
                    pid_t asker) {
  NetdevRings* r;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    const auto it = rings_map().find(ifname);
    if (it == rings_map().end() || !it->second) return -ENOENT;
    r = it->second;
  }
  const bool leave = slot < 0;
  if (leave) slot = -slot;
  if (slot <= 0 || slot >= SS_MAX_SLOTS || (ip.family != AF_INET && ip.family != AF_INET6))
    return -EINVAL;
  // A child speaks for its own slot only.
  const auto dev = prov::xdp::Device::find(r->ifname.c_str());
  if (!dev || !dev->family() ||
      dev->family()->slot_pid[slot].load(std::memory_order_acquire) != asker)
    return -EPERM;
  if (leave) {
    auto it = r->groups.find({ip, port});
    if (it == r->groups.end()) return 0;
    std::erase(it->second, static_cast<uint32_t>(slot));
    regroup(*r, it, /*changed=*/true);
    return 0;
  }
  // Our connections stay ours whatever the port's group says.
  if (!r->owned_open) {
    if (const int err = r->tcp->own_open(); err < 0) return err;
    r->owned_open = true;
  }
  const auto it = r->groups.try_emplace({ip, port}).first;
  if (std::find(it->second.begin(), it->second.end(), static_cast<uint32_t>(slot)) ==
      it->second.end())
    it->second.push_back(static_cast<uint32_t>(slot));
  regroup(*r, it, /*changed=*/true);
  return 0;
}

void wake_rings_service() {
  if (ServiceThread* t = g_follow.load(std::memory_order_acquire)) t->wake();
}

void prune_groups() {
  std::vector<NetdevRings*> rings;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (const auto& [name, r] : rings_map())
      if (r && !r->groups.empty()) rings.push_back(r);
  }
  for (NetdevRings* r : rings) {
    const auto dev = prov::xdp::Device::find(r->ifname.c_str());
    if (!dev || !dev->family()) continue;
    std::set<uint32_t> dead;
    for (auto it = r->groups.begin(); it != r->groups.end();) {
      auto& slots = it->second;
      const size_t before = slots.size();
      std::erase_if(slots, [&](uint32_t s) {
        const bool gone =
            s != 0 && !prov::xdp::family_slot_alive(dev->family(), static_cast<int>(s));
        if (gone) dead.insert(s);
        return gone;
      });
      regroup(*r, it++, slots.size() != before);
    }
    // Its connections' entries go too: a child that takes the slot next
    // would get their late segments.
    for (const uint32_t s : dead) dev->disown_slot(s);
  }
}
#else
void wake_rings_service() {}
void prune_groups() {}
int rings_group_add(const std::string&, const net::IpAddr&, uint16_t, int, pid_t) {
  return -EOPNOTSUPP;
}
#endif

void note_edge_watch(int fd) {
  if (!g_xtreme_fds.load(std::memory_order_acquire)) return;  // no lock for most programs
  if (interpose::in_handler()) return;  // it may have interrupted g_mu's holder
  if (NetdevRings* r = netdev_rings_of_ring_fd(fd))
    r->xtreme_edge_watched.store(true, std::memory_order_relaxed);
}

NetdevRings* netdev_rings_of_ring_fd(int fd) {
  if (fd < 0) return nullptr;
  std::lock_guard<std::mutex> lock(g_mu);
  for (const auto& [name, r] : rings_map()) {
    if (!r) continue;
    for (const NetdevRings::Queue& q : r->queues) {
      short ev = 0;
      if (q.queue->poll_fd(prov::Ring::kRx, &ev) == fd) return r;
    }
    std::lock_guard<std::mutex> w(r->wait_mu);
    if (r->xtreme_fd_ == fd) return r;
  }
  return nullptr;
}

}  // namespace ss::vma::preload
