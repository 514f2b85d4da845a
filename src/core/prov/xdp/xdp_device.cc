#include "core/prov/xdp/xdp_device.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
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
#include "core/prov/xdp/xdp_family.h"
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
std::mutex* open_mu = new std::mutex;
std::vector<Open>* open_list = new std::vector<Open>;  // never destroyed under a late caller
std::vector<Open>& open_devices() { return *open_list; }

// A fork child's Devices are its own: the parent's (whose descriptors a
// child closes, libvma.so's fork handler) are forgotten, and a parent
// thread may have held the lock at the fork. Both leaked, as copies.
[[maybe_unused]] const int g_atfork = pthread_atfork(nullptr, nullptr, [] {
  open_mu = new std::mutex;
  open_list = new std::vector<Open>;
});

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

// Records dev as the process's Device on its netdev (open_mu held),
// replacing any other (a fork child's copy of its parent's).
void record_locked(ino_t netns, const std::shared_ptr<Device>& dev) {
  auto& devs = open_devices();
  for (auto it = devs.begin(); it != devs.end();)
    it = it->dev.expired() || (it->netns == netns && it->ifindex == dev->ifindex()) ? devs.erase(it)
                                                                                    : it + 1;
  devs.push_back({netns, dev->ifindex(), dev});
}

}  // namespace

std::shared_ptr<Device> Device::find(const char* ifname) {
  const int ifindex = ifname ? static_cast<int>(if_nametoindex(ifname)) : 0;
  if (!ifindex) return nullptr;
  const ino_t netns = current_netns();
  std::lock_guard lock(*open_mu);
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
  std::lock_guard lock(*open_mu);
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
  dev->xsks_fd_ = bpf_map__fd(dev->skel_->maps.xsks);
  dev->owners_fd_ = bpf_map__fd(dev->skel_->maps.conn_owners);
  dev->counters_fd_ = bpf_map__fd(dev->skel_->maps.counters);
  dev->flows_fd_ = bpf_map__fd(dev->skel_->maps.flows);
  // The family's page: without it no child can join (said once), the
  // rings work as before.
  if (const int err = family_create(&dev->family_fd_, &dev->family_); err < 0)
    SS_WARN("xdp: %s: fork children cannot share the rings: %s", ifname, strerror(-err));
  record_locked(netns, dev);
  *out = std::move(dev);
  return 0;
}

int Device::join(const char* ifname, const DeviceShare& share, std::shared_ptr<Device>* out) {
  if (!ifname || !out) return -EINVAL;
  const int ifindex = static_cast<int>(if_nametoindex(ifname));
  if (!ifindex) return -ENODEV;
  std::shared_ptr<Device> dev(new Device);
  dev->ifindex_ = ifindex;
  dev->own_fds_ = true;
  int* fds[] = {&dev->xsks_fd_, &dev->owners_fd_, &dev->counters_fd_, &dev->flows_fd_};
  const int from[] = {share.xsks, share.conn_owners, share.counters, share.flows};
  for (size_t i = 0; i < 4; i++) {
    *fds[i] = fcntl(from[i], F_DUPFD_CLOEXEC, 0);
    if (*fds[i] < 0) return -errno;
  }
  if (const int err = family_map(share.family, &dev->family_); err < 0) return err;
  const int slot = family_claim_slot(dev->family_, getpid());
  if (slot < 0) return slot;
  dev->slot_ = static_cast<uint32_t>(slot);
  std::lock_guard lock(*open_mu);
  record_locked(current_netns(), dev);
  *out = std::move(dev);
  return 0;
}

int Device::share(DeviceShare* out) const {
  if (!skel_ || family_fd_ < 0) return -EOPNOTSUPP;
  skel_->bss->slots_used = 1;  // a child is about to own connections
  out->family = family_fd_;
  out->xsks = xsks_fd_;
  out->conn_owners = owners_fd_;
  out->counters = counters_fd_;
  out->flows = flows_fd_;
  return 0;
}

bool Device::family_active() const { return slot_ != 0 || (skel_ && skel_->bss->slots_used); }

Device::~Device() {
  if (link_fd_ >= 0) close(link_fd_);  // detaches the program
  if (skel_) ss_steer__destroy(skel_);
  if (own_fds_)
    for (const int fd : {xsks_fd_, owners_fd_, counters_fd_, flows_fd_})
      if (fd >= 0) close(fd);
  if (family_) {
    if (slot_) family_release_slot(family_, static_cast<int>(slot_), getpid());
    family_unmap(family_);
  }
  if (family_fd_ >= 0) close(family_fd_);
}

void Device::fds(std::vector<int>* out) const {
  if (link_fd_ >= 0) out->push_back(link_fd_);
  if (family_fd_ >= 0) out->push_back(family_fd_);
  if (own_fds_)
    for (const int fd : {xsks_fd_, owners_fd_, counters_fd_, flows_fd_})
      if (fd >= 0) out->push_back(fd);
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

int Device::set_socket(uint32_t queue, int xsk_fd, uint32_t slot) {
  if (queue >= SS_MAX_QUEUES || slot >= SS_MAX_SLOTS) return -EINVAL;
  const __u32 key = SS_XSK_INDEX(slot, queue);
  if (bpf_map_update_elem(xsks_fd_, &key, &xsk_fd, 0)) return -errno;
  return 0;
}

void Device::set_frame_room(uint32_t room) {
  if (!skel_) return;  // joined: the owner's sockets set it
  volatile __u32& r = skel_->bss->frame_room;
  if (r == 0 || room < r) r = room;  // the least of the sockets'
}

int Device::clear_socket(uint32_t queue, uint32_t slot) {
  if (queue >= SS_MAX_QUEUES || slot >= SS_MAX_SLOTS) return -EINVAL;
  const __u32 key = SS_XSK_INDEX(slot, queue);
  if (bpf_map_delete_elem(xsks_fd_, &key)) return -errno;
  return 0;
}

int Device::own_connection(const Connection& c, int slot) {
  ss_conn_key k;
  if (!conn_key(c, &k) || slot >= SS_MAX_SLOTS) return -EINVAL;
  const __u32 v = static_cast<__u32>(slot);
  if (slot < 0 ? bpf_map_delete_elem(owners_fd_, &k) : bpf_map_update_elem(owners_fd_, &k, &v, 0))
    return errno == E2BIG ? -ENOSPC : -errno;
  return 0;
}

void Device::disown_slot(uint32_t slot) {
  ss_conn_key k{}, next{};
  const void* prev = nullptr;  // from the first key
  std::vector<ss_conn_key> gone;
  while (bpf_map_get_next_key(owners_fd_, prev, &next) == 0) {
    __u32 v = 0;
    if (bpf_map_lookup_elem(owners_fd_, &next, &v) == 0 && v == slot) gone.push_back(next);
    k = next;
    prev = &k;
  }
  for (const ss_conn_key& g : gone) bpf_map_delete_elem(owners_fd_, &g);
}

int Device::set_group(const Flow& f, const uint32_t* slots, uint32_t n) {
  if (!skel_) return -EOPNOTSUPP;
  if (!valid(f) || f.proto != IPPROTO_TCP || n > SS_MAX_SLOTS || (n && !slots)) return -EINVAL;
  const ss_flow_key k = key_of(f);
  ss_group g{};
  g.n = n;
  for (uint32_t i = 0; i < n; i++) {
    if (slots[i] >= SS_MAX_SLOTS) return -EINVAL;
    g.slots[i] = slots[i];
  }
  if (!n) {
    if (bpf_map__delete_elem(skel_->maps.groups, &k, sizeof k, 0) && errno != ENOENT) return -errno;
    return 0;
  }
  if (bpf_map__update_elem(skel_->maps.groups, &k, sizeof k, &g, sizeof g, 0))
    return errno == E2BIG ? -ENOSPC : -errno;
  skel_->bss->slots_used = 1;
  return 0;
}

int Device::add_flow(const Flow& f) {
  if (!valid(f)) return -EINVAL;
  const ss_flow_key k = key_of(f);
  if (!skel_) {
    // A kept-only flow (a listener of ours leaving): the owner's stands,
    // and our connections are ours by conn_owners.
    if (f.kept_only) return 0;
    __u32 action = 0;
    return bpf_map_lookup_elem(flows_fd_, &k, &action) == 0 && action == SS_FLOW_REDIRECT
               ? 0
               : -EOPNOTSUPP;
  }
  const __u32 action = f.drop ? SS_FLOW_DROP : f.kept_only ? SS_FLOW_RING_CONNS : SS_FLOW_REDIRECT;
  if (bpf_map__update_elem(skel_->maps.flows, &k, sizeof k, &action, sizeof action, 0))
    return errno == E2BIG ? -ENOSPC : -errno;
  return 0;
}

int Device::remove_flow(const Flow& f) {
  if (!valid(f)) return -EINVAL;
  if (!skel_) return 0;  // the owner's flow
  const ss_flow_key k = key_of(f);
  if (bpf_map__delete_elem(skel_->maps.flows, &k, sizeof k, 0)) return -errno;
  return 0;
}

int Device::pass_connection(const Connection& c, bool active) {
  if (!skel_) return -EOPNOTSUPP;
  ss_conn_key k;
  if (!conn_key(c, &k)) return -EINVAL;
  const __u8 pass = active ? 1 : 0;
  if (bpf_map__update_elem(skel_->maps.kernel_conns, &k, sizeof k, &pass, sizeof pass, 0))
    return -errno;
  skel_->bss->kernel_conns_used = 1;
  return 0;
}

bool Device::passed_any() const { return skel_ && skel_->bss->kernel_conns_used != 0; }

int Device::keep_connection(const Connection& c, bool kept) {
  if (!skel_) return 0;  // joined: conn_owners keeps our connections ours
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
    if (bpf_map_lookup_elem(counters_fd_, &slot, per_cpu.data())) return -errno;
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
