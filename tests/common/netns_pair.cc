#include "tests/common/netns_pair.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace sstest {

int run(const std::string& cmd) {
  const int rc = std::system((cmd + " >/dev/null 2>&1").c_str());
  return rc == -1 ? -1 : WEXITSTATUS(rc);
}

std::string output(const std::string& cmd) {
  std::string out;
  FILE* f = popen((cmd + " 2>&1").c_str(), "r");
  if (!f) return out;
  char buf[512];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  pclose(f);
  return out;
}

bool netns_exists(const std::string& name) {
  return access(("/run/netns/" + name).c_str(), F_OK) == 0;
}

sockaddr_in inet(const char* ip, uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  inet_pton(AF_INET, ip, &sa.sin_addr);
  return sa;
}

NetnsPair::NetnsPair(const std::string& prefix)
    : a_(prefix + "-a-" + std::to_string(getpid())), b_(prefix + "-b-" + std::to_string(getpid())) {
  const std::string na = "ip -n " + a_ + " ", nb = "ip -n " + b_ + " ";
  const std::string steps[] = {
      "ip netns add " + a_,
      "ip netns add " + b_,
      // Two queues each way, both in use: traffic may arrive on either.
      na + "link add " + kIfA + " numrxqueues 2 numtxqueues 2 type veth peer name " + kIfB +
          " netns " + b_ + " numrxqueues 2 numtxqueues 2",
      "ip netns exec " + a_ + " ethtool -L " + kIfA + " rx 2 tx 2",
      "ip netns exec " + b_ + " ethtool -L " + kIfB + " rx 2 tx 2",
      na + "addr add " + kIpA + "/24 dev " + kIfA,
      nb + "addr add " + kIpB + "/24 dev " + kIfB,
      na + "addr add " + kIp6A + "/64 dev " + kIfA + " nodad",
      nb + "addr add " + kIp6B + "/64 dev " + kIfB + " nodad",
      na + "link set lo up",
      nb + "link set lo up",
      na + "link set " + kIfA + " up",
      nb + "link set " + kIfB + " up",
      "ip netns exec " + b_ + " ethtool -K " + kIfB + " tx off",
  };
  for (const auto& s : steps)
    if (run(s) != 0) {
      error_ = "failed: " + s;
      return;
    }
  orig_ns_ = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  ns_a_ = open(("/run/netns/" + a_).c_str(), O_RDONLY | O_CLOEXEC);
  ns_b_ = open(("/run/netns/" + b_).c_str(), O_RDONLY | O_CLOEXEC);
  if (orig_ns_ < 0 || ns_a_ < 0 || ns_b_ < 0 || setns(ns_a_, CLONE_NEWNET) != 0)
    error_ = std::string("cannot enter namespace a: ") + strerror(errno);
}

NetnsPair::~NetnsPair() {
  if (orig_ns_ >= 0) setns(orig_ns_, CLONE_NEWNET);
  for (int fd : {orig_ns_, ns_a_, ns_b_})
    if (fd >= 0) close(fd);
  // Deleting a namespace destroys its end of the veth, and so the pair.
  run("ip netns del " + a_);
  run("ip netns del " + b_);
}

int NetnsPair::in_b(const std::function<int()>& f) const {
  if (setns(ns_b_, CLONE_NEWNET) != 0) return -1;
  const int rc = f();
  const int err = errno;
  setns(ns_a_, CLONE_NEWNET);
  errno = err;
  return rc;
}

int NetnsPair::socket_in_b(int type, int family, int protocol) const {
  return in_b([&] { return socket(family, type | SOCK_CLOEXEC, protocol); });
}

bool NetnsPair::mac_b(uint8_t out[6]) const { return read_mac(socket_in_b(SOCK_DGRAM), kIfB, out); }

bool NetnsPair::mac_a(uint8_t out[6]) const {
  return read_mac(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), kIfA, out);
}

bool NetnsPair::read_mac(int fd, const char* ifname, uint8_t out[6]) {
  if (fd < 0) return false;
  ifreq ifr{};
  strncpy(ifr.ifr_name, ifname, IFNAMSIZ - 1);
  const bool ok = ioctl(fd, SIOCGIFHWADDR, &ifr) == 0;
  close(fd);
  if (ok) memcpy(out, ifr.ifr_hwaddr.sa_data, 6);
  return ok;
}

bool NetnsPair::xdp_attached() const {
  return output("ip -n " + a_ + " -d link show dev " + kIfA).find("prog/xdp") != std::string::npos;
}

namespace {
// A run that crashed or was killed (a sanitizer abort, a time limit's
// SIGKILL) never reached its teardown: its namespaces carry its pid in
// their names, so a later run removes those whose process is gone.
void remove_stale_pairs(const char* prefix) {
  DIR* d = opendir("/run/netns");
  if (!d) return;
  const std::string head = std::string(prefix) + "-";
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.compare(0, head.size(), head) != 0) continue;
    const size_t dash = name.rfind('-');
    const long pid = strtol(name.c_str() + dash + 1, nullptr, 10);
    // Only a process that is gone: a live one's run is still going.
    if (pid <= 0 || kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    fprintf(stderr, "note: removing %s, left by a run that ended without its teardown\n",
            name.c_str());
    run("ip netns del " + name + " 2>/dev/null");
  }
  closedir(d);
}
}  // namespace

int netns_test_main(int argc, char** argv, const char* binary, const char* prefix) {
  ::testing::InitGoogleTest(&argc, argv);
  if (geteuid() != 0) {
    fprintf(stderr, "SKIP: %s need root (network namespaces, veth, XDP)\n", binary);
    return 77;
  }
  if (run("ip netns list") != 0 || run("ethtool --version") != 0) {
    fprintf(stderr, "SKIP: %s need iproute2 and ethtool\n", binary);
    return 77;
  }
  remove_stale_pairs(prefix);
  int rc = RUN_ALL_TESTS();
  // Every test removes its namespaces (and so the veth) in its teardown.
  for (const char* side : {"a", "b"}) {
    const std::string name = std::string(prefix) + "-" + side + "-" + std::to_string(getpid());
    if (netns_exists(name)) {
      fprintf(stderr, "FAIL: namespace %s left behind\n", name.c_str());
      rc = 1;
    }
  }
  return rc;
}

}  // namespace sstest
