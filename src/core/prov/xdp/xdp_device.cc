#include "core/prov/xdp/xdp_device.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "core/base/log.h"
#include "core/prov/xdp/steer.skel.h"
#include "core/prov/xdp/steer_abi.h"

namespace ss::prov::xdp {

namespace {

// libbpf's own messages go to our log at debug level: a preloaded program's
// stderr is not ours to fill.
int libbpf_print(enum libbpf_print_level level, const char* fmt, va_list ap) {
  if (!ss::log::enabled(ss::log::Level::kDebug)) return 0;
  char line[512];
  vsnprintf(line, sizeof line, fmt, ap);
  line[strcspn(line, "\n")] = 0;
  ss::log::write(ss::log::Level::kDebug, "%s", line);  // starts "libbpf: "
  return 0;
}

// Interface indexes repeat across network namespaces: a netdev is its
// namespace (the calling thread's) and its index.
struct Open {
  ino_t netns;
  int ifindex;
  std::weak_ptr<Device> dev;
};

ino_t current_netns() {
  struct stat st {};
  return stat("/proc/thread-self/ns/net", &st) == 0 ? st.st_ino : 0;
}
std::mutex open_mu;
std::vector<Open>& open_devices() {
  static auto* v = new std::vector<Open>;  // never destroyed under a late caller
  return *v;
}

ss_flow_key key_of(const Flow& f) {
  ss_flow_key k{};
  if (f.version == 4)
    memcpy(k.ip, &f.ip, 4);
  else
    memcpy(k.ip, f.ip6, 16);
  k.port = f.port;
  k.proto = f.proto;
  k.version = f.version;
  return k;
}

// c as the maps' key: false for a bad version.
bool conn_key(const Connection& c, ss_conn_key* k) {
  if (c.version != 4 && c.version != 6) return false;
  *k = ss_conn_key{};
  const size_t n = c.version == 4 ? 4 : 16;
  memcpy(k->local, c.local, n);
  memcpy(k->remote, c.remote, n);
  k->local_port = c.local_port;
  k->remote_port = c.remote_port;
  k->version = c.version;
  return true;
}

// An XDP bpf_link (its descriptor) or -errno.
int link_xdp(int prog, int ifindex, uint32_t flags) {
  LIBBPF_OPTS(bpf_link_create_opts, opts, .flags = flags);
  const int fd = bpf_link_create(prog, ifindex, BPF_XDP, &opts);
  return fd < 0 ? -errno : fd;
}

// Errors that another mode would not cure: no privilege, the netdev taken.
bool refusal(int err) { return err == EPERM || err == EACCES || err == EBUSY || err == ENODEV; }

bool valid(const Flow& f) {
  return (f.proto == IPPROTO_UDP || f.proto == IPPROTO_TCP) && (f.version == 4 || f.version == 6);
}

}  // namespace

std::shared_ptr<Device> Device::find(const char* ifname) {
  const int ifindex = ifname ? static_cast<int>(if_nametoindex(ifname)) : 0;
  if (!ifindex) return nullptr;
  const ino_t netns = current_netns();
  std::lock_guard lock(open_mu);
  for (auto& o : open_devices())
    if (o.netns == netns && o.ifindex == ifindex)
      if (auto d = o.dev.lock()) return d;
  return nullptr;
}

int Device::open(const char* ifname, std::shared_ptr<Device>* out) {
  if (!ifname || !out) return -EINVAL;
  const int ifindex = static_cast<int>(if_nametoindex(ifname));
  if (!ifindex) return -ENODEV;
  const ino_t netns = current_netns();
  std::lock_guard lock(open_mu);
  auto& devs = open_devices();
  for (auto& o : devs)
    if (o.netns == netns && o.ifindex == ifindex)
      if (auto d = o.dev.lock()) {
        *out = std::move(d);
        return 0;
      }
  static std::once_flag print_once;
  std::call_once(print_once, [] { libbpf_set_print(libbpf_print); });

  std::shared_ptr<Device> dev(new Device);
  dev->ifindex_ = ifindex;
  dev->skel_ = ss_steer__open_and_load();
  if (!dev->skel_) {
    const int err = errno ? -errno : -EPERM;
    SS_WARN("xdp: %s: cannot load the steering program: %s", ifname, strerror(-err));
    return err;
  }
  // A bpf_link: gone with the process, and EBUSY rather than replacing
  // another program. Flags 0 let the kernel take native mode when the
  // driver has XDP; a driver that refuses it here (veth: fewer rx queues
  // than its peer has tx queues) gets generic mode instead. Not libxdp's
  // dispatcher: it needs bpffs, and fails under lockdown.
  const int prog = bpf_program__fd(dev->skel_->progs.ss_steer);
  dev->link_fd_ = link_xdp(prog, ifindex, 0);
  if (dev->link_fd_ < 0 && !refusal(-dev->link_fd_))
    dev->link_fd_ = link_xdp(prog, ifindex, XDP_FLAGS_SKB_MODE);
  if (dev->link_fd_ < 0) {
    const int err = dev->link_fd_;
    SS_WARN("xdp: %s: cannot attach the steering program: %s", ifname, strerror(-err));
    return err;
  }
  LIBBPF_OPTS(bpf_xdp_query_opts, q);
  if (bpf_xdp_query(ifindex, 0, &q) == 0) dev->native_ = q.attach_mode == XDP_ATTACHED_DRV;
  SS_DEBUG("xdp: %s: steering program attached (%s mode)", ifname,
           dev->native_ ? "native" : "generic");
  for (auto it = devs.begin(); it != devs.end();) it = it->dev.expired() ? devs.erase(it) : it + 1;
  devs.push_back({netns, ifindex, dev});
  *out = std::move(dev);
  return 0;
}

Device::~Device() {
  if (link_fd_ >= 0) close(link_fd_);  // detaches the program
  if (skel_) ss_steer__destroy(skel_);
}

void Device::fds(std::vector<int>* out) const {
  if (link_fd_ >= 0) out->push_back(link_fd_);
  if (!skel_) return;
  bpf_program* p;
  bpf_object__for_each_program(p, skel_->obj) {
    if (bpf_program__fd(p) >= 0) out->push_back(bpf_program__fd(p));
  }
  bpf_map* m;
  bpf_object__for_each_map(m, skel_->obj) {
    if (bpf_map__fd(m) >= 0) out->push_back(bpf_map__fd(m));
  }
}

int Device::set_socket(uint32_t queue, int xsk_fd) {
  if (queue >= SS_MAX_QUEUES) return -EINVAL;
  if (bpf_map__update_elem(skel_->maps.xsks, &queue, sizeof queue, &xsk_fd, sizeof xsk_fd, 0))
    return -errno;
  return 0;
}

void Device::set_frame_room(uint32_t room) {
  volatile __u32& r = skel_->bss->frame_room;
  if (r == 0 || room < r) r = room;  // the least of the sockets'
}

int Device::clear_socket(uint32_t queue) {
  if (bpf_map__delete_elem(skel_->maps.xsks, &queue, sizeof queue, 0)) return -errno;
  return 0;
}

int Device::add_flow(const Flow& f) {
  if (!valid(f)) return -EINVAL;
  const ss_flow_key k = key_of(f);
  const __u32 action = f.drop ? SS_FLOW_DROP : f.kept_only ? SS_FLOW_RING_CONNS : SS_FLOW_REDIRECT;
  if (bpf_map__update_elem(skel_->maps.flows, &k, sizeof k, &action, sizeof action, 0))
    return errno == E2BIG ? -ENOSPC : -errno;
  return 0;
}

int Device::remove_flow(const Flow& f) {
  if (!valid(f)) return -EINVAL;
  const ss_flow_key k = key_of(f);
  if (bpf_map__delete_elem(skel_->maps.flows, &k, sizeof k, 0)) return -errno;
  return 0;
}

int Device::pass_connection(const Connection& c, bool active) {
  ss_conn_key k;
  if (!conn_key(c, &k)) return -EINVAL;
  const __u8 pass = active ? 1 : 0;
  if (bpf_map__update_elem(skel_->maps.kernel_conns, &k, sizeof k, &pass, sizeof pass, 0))
    return -errno;
  skel_->bss->kernel_conns_used = 1;
  return 0;
}

bool Device::passed_any() const { return skel_->bss->kernel_conns_used != 0; }

int Device::keep_connection(const Connection& c, bool kept) {
  ss_conn_key k;
  if (!conn_key(c, &k)) return -EINVAL;
  const __u8 one = 1;
  if (kept ? bpf_map__update_elem(skel_->maps.ring_conns, &k, sizeof k, &one, sizeof one, 0)
           : bpf_map__delete_elem(skel_->maps.ring_conns, &k, sizeof k, 0))
    return errno == E2BIG ? -ENOSPC : -errno;
  return 0;
}

int Device::counters(Counters* out) const {
  if (!out) return -EINVAL;
  const int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return ncpu ? ncpu : -EINVAL;
  std::vector<__u64> per_cpu(static_cast<size_t>(ncpu));
  uint64_t sums[SS_CNT_MAX] = {};
  for (__u32 slot = 0; slot < SS_CNT_MAX; slot++) {
    if (bpf_map__lookup_elem(skel_->maps.counters, &slot, sizeof slot, per_cpu.data(),
                             per_cpu.size() * sizeof(__u64), 0))
      return -errno;
    for (__u64 v : per_cpu) sums[slot] += v;
  }
  out->redirected = sums[SS_CNT_REDIRECTED];
  out->passed = sums[SS_CNT_PASSED];
  out->dropped = sums[SS_CNT_DROPPED];
  out->no_socket = sums[SS_CNT_NO_SOCKET];
  out->too_long = sums[SS_CNT_TOO_LONG];
  return 0;
}

int add_flow(const char* ifname, const Flow& f) {
  auto d = Device::find(ifname);
  return d ? d->add_flow(f) : -ENODEV;
}

int remove_flow(const char* ifname, const Flow& f) {
  auto d = Device::find(ifname);
  return d ? d->remove_flow(f) : -ENODEV;
}

int counters(const char* ifname, Counters* out) {
  auto d = Device::find(ifname);
  return d ? d->counters(out) : -ENODEV;
}

int rx_queue_count(const char* ifname) {
  if (!ifname || strlen(ifname) >= IFNAMSIZ) return -EINVAL;
  // ethtool, not /sys: sysfs shows the namespace it was mounted in, the
  // socket the calling thread's.
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  ethtool_channels ch{};
  ch.cmd = ETHTOOL_GCHANNELS;
  ifreq ifr{};
  memcpy(ifr.ifr_name, ifname, strlen(ifname));
  ifr.ifr_data = reinterpret_cast<char*>(&ch);
  const int rc = ioctl(fd, SIOCETHTOOL, &ifr);
  const int err = errno;
  close(fd);
  if (rc < 0) {
    if (err == EOPNOTSUPP) return 1;  // no channels to report: one queue
    return -err;
  }
  const uint32_t n = ch.rx_count + ch.combined_count;
  return n ? static_cast<int>(n) : 1;
}

}  // namespace ss::prov::xdp
