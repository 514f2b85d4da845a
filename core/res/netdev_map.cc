#include "core/res/netdev_map.h"

#include <dirent.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>

#include "core/res/verbs_manager.h"

namespace ss::res {

namespace {

// The source address the kernel picks for `dst` (a connected UDP socket
// sends nothing).
bool source_for(const sockaddr* dst, socklen_t len, sockaddr_storage* src) {
  if (len > sizeof(sockaddr_storage)) return false;
  sockaddr_storage to{};
  memcpy(&to, dst, len);
  if (to.ss_family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&to);
    if (!in->sin_port) in->sin_port = htons(9);
  } else if (to.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&to);
    if (!in6->sin6_port) in6->sin6_port = htons(9);
  } else {
    return false;
  }
  int fd = ::socket(to.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  socklen_t slen = sizeof *src;
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&to), len) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(src), &slen) == 0;
  ::close(fd);
  return ok;
}

bool same_ip(const sockaddr* a, const sockaddr_storage& b) {
  if (!a || a->sa_family != b.ss_family) return false;
  if (a->sa_family == AF_INET)
    return reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in*>(&b)->sin_addr.s_addr;
  return memcmp(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr,
                &reinterpret_cast<const sockaddr_in6*>(&b)->sin6_addr, sizeof(in6_addr)) == 0;
}

// The interface that owns `addr`, or "".
std::string interface_of(const sockaddr_storage& addr) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list)) return {};
  std::string name;
  for (ifaddrs* i = list; i && name.empty(); i = i->ifa_next)
    if (same_ip(i->ifa_addr, addr)) name = i->ifa_name;
  freeifaddrs(list);
  return name;
}

// Entries of a sysfs directory (no dot entries).
template <typename Fn>
void each_entry(const std::string& dir, Fn fn) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') fn(std::string(e->d_name));
  closedir(d);
}

bool netdev_has_rdma(const std::string& ifname) {
  struct stat st;
  // IPoIB and hardware RoCE NICs: the netdev's device has an infiniband/ folder.
  if (stat(("/sys/class/net/" + ifname + "/device/infiniband").c_str(), &st) == 0) return true;
  // RoCE ports (Soft-RoCE included) list their netdev per GID entry.
  bool found = false;
  const std::string ib = "/sys/class/infiniband/";
  each_entry(ib, [&](const std::string& dev) {
    each_entry(ib + dev + "/ports", [&](const std::string& port) {
      const std::string ndevs = ib + dev + "/ports/" + port + "/gid_attrs/ndevs/";
      // GID 0 is enough: every RoCE port has it on its netdev.
      std::ifstream f(ndevs + "0");
      std::string name;
      if (f >> name && name == ifname) found = true;
    });
  });
  return found;
}

}  // namespace

bool rdma_serves(const sockaddr* dst, socklen_t len) {
  if (device_count() == 0) return false;
  sockaddr_storage src{};
  if (!source_for(dst, len, &src)) return false;
  std::string ifname = interface_of(src);
  return !ifname.empty() && netdev_has_rdma(ifname);
}

}  // namespace ss::res
