#include "vma_preload/netdev_rings.h"

#include <net/if.h>

#include <cstring>
#include <map>
#include <mutex>

#include "core/base/log.h"
#include "core/base/service_thread.h"
#include "core/net/netlink_view.h"
#include "core/net/udp_route.h"
#if SS_VMA_XDP
#include "core/prov/xdp/xdp_device.h"
#include "core/prov/xdp/xdp_queue.h"
#include "core/prov/xdp/xdp_steering.h"
#endif

namespace ss::vma::preload {
namespace {

// Frames per queue's pool; the fill ring gets half, the rest serve tx and
// frames the program holds.
constexpr size_t kFrames = 4096;
constexpr uint32_t kFill = 2048, kRing = 1024;

std::mutex g_mu;
std::map<std::string, NetdevRings*> g_rings;  // null: refused, never asked again
net::NetlinkView* g_view = nullptr;           // never freed: the service thread reads it

void follow_kernel(ServiceThread::Run& run) {
  while (!run.stopping()) {
    pollfd fds[2] = {{-1, 0, 0}, {g_view->fd(), POLLIN, 0}};
    if (run.poll(fds, -1) > 0 && (fds[1].revents & POLLIN)) g_view->process_events();
  }
}

// The process's NetlinkView and its service thread, g_mu held. 0 or -errno.
int open_view_locked() {
  if (g_view) return 0;
  std::unique_ptr<net::NetlinkView> v;
  if (const int err = net::NetlinkView::open({}, &v); err < 0) return err;
  static ServiceThread* thread = new ServiceThread({"vma-netlink"}, follow_kernel);
  g_view = v.release();
  return thread->hold();
}

#if SS_VMA_XDP
int make_rings(const std::string& ifname, std::unique_ptr<NetdevRings>* out) {
  auto r = std::make_unique<NetdevRings>();
  r->ifname = ifname;
  r->ifindex = static_cast<int>(if_nametoindex(ifname.c_str()));
  if (r->ifindex == 0) return -ENODEV;
  const int nq = prov::xdp::rx_queue_count(ifname.c_str());
  if (nq <= 0) return nq < 0 ? nq : -ENODEV;
  net::UdpStack::Config cfg;
  r->queues.resize(static_cast<size_t>(nq));
  for (int q = 0; q < nq; q++) {
    NetdevRings::Queue& s = r->queues[static_cast<size_t>(q)];
    mem::PoolOptions opt;
    opt.frame_size = 2048;
    opt.frames_per_chunk = kFrames;
    opt.backing = mem::Backing::kPrivate;
    opt.name = "vma-umem";
    if (const int err = mem::Pool::create(opt, &s.pool); err < 0) return err;
    prov::RingQueueConfig rc;
    rc.pool = s.pool.get();
    rc.ifname = ifname.c_str();
    rc.queue_id = static_cast<uint32_t>(q);
    rc.fill_size = kFill;
    rc.rx_size = rc.tx_size = rc.completion_size = kRing;
    if (const int err = prov::xdp::XdpQueue::create(rc, &s.queue); err < 0) return err;
    cfg.rings.push_back({s.queue.get(), s.pool.get()});
  }
  r->steering = std::make_unique<prov::xdp::XdpUdpSteering>(prov::xdp::Device::find(ifname.c_str()));
  cfg.steering = r->steering.get();
  cfg.ifindex = r->ifindex;
  cfg.initial_fill = kFill;
  if (const int err = net::UdpStack::create(cfg, &r->stack); err < 0) return err;
  if (const int err = open_view_locked(); err < 0) return err;
  r->resolver = net::make_netlink_resolver(g_view, r->ifindex);
  r->tx = std::make_unique<net::UdpTx>(r->stack.get(), r->resolver.get());
  *out = std::move(r);
  return 0;
}
#else
int make_rings(const std::string&, std::unique_ptr<NetdevRings>*) { return -EOPNOTSUPP; }
#endif

}  // namespace

void NetdevRings::poll_fds(std::vector<pollfd>* fds) const {
  for (const Queue& q : queues) {
    short ev = 0;
    const int fd = q.queue->poll_fd(prov::Ring::kRx, &ev);
    if (fd >= 0) fds->push_back({fd, ev, 0});
  }
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

NetdevRings* netdev_rings(const std::string& ifname) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (auto it = g_rings.find(ifname); it != g_rings.end()) return it->second;
  std::unique_ptr<NetdevRings> r;
  const int err = make_rings(ifname, &r);
  if (err < 0) {
    SS_WARN("%s: no rings (%s); its UDP sockets are served by the kernel", ifname.c_str(),
            std::strerror(-err));
    g_rings[ifname] = nullptr;
    return nullptr;
  }
  SS_INFO("%s: UDP offloaded on %zu rx queue(s)", ifname.c_str(), r->queues.size());
  return g_rings[ifname] = r.release();
}

NetdevRings* netdev_rings_of_ring_fd(int fd) {
  if (fd < 0) return nullptr;
  std::lock_guard<std::mutex> lock(g_mu);
  for (const auto& [name, r] : g_rings) {
    if (!r) continue;
    for (const NetdevRings::Queue& q : r->queues) {
      short ev = 0;
      if (q.queue->poll_fd(prov::Ring::kRx, &ev) == fd) return r;
    }
  }
  return nullptr;
}

}  // namespace ss::vma::preload
