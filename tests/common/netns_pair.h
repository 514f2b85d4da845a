// Two network namespaces joined by a veth pair (two rx and two tx queues
// in use on each end), made and removed by the test (traffic stays inside
// them): "a" (where the code under test runs) holds xa 10.199.0.1/24 and
// fd00:199::1/64, "b" (the kernel peer) holds xb 10.199.0.2/24 and
// fd00:199::2/64 with checksum offload off, so its frames carry full
// checksums. The calling thread enters "a" for the pair's life; sockets
// for "b" come from socket_in_b(). Used by xdp_ring_tests and
// net_netns_tests.
#pragma once
#include <netinet/in.h>

#include <cstdint>
#include <functional>
#include <string>

namespace sstest {

class NetnsPair {
 public:
  static constexpr const char* kIfA = "xa";
  static constexpr const char* kIfB = "xb";
  static constexpr const char* kIpA = "10.199.0.1";
  static constexpr const char* kIpB = "10.199.0.2";
  static constexpr const char* kIp6A = "fd00:199::1";
  static constexpr const char* kIp6B = "fd00:199::2";

  // Namespaces named PREFIX-a-PID and PREFIX-b-PID. Empty error() on
  // success; otherwise what failed.
  explicit NetnsPair(const std::string& prefix);
  // Back to the original namespace, both namespaces deleted.
  ~NetnsPair();
  const std::string& error() const { return error_; }
  const std::string& name_a() const { return a_; }
  const std::string& name_b() const { return b_; }

  // A socket made in namespace b (the thread stays in a), or -1.
  int socket_in_b(int type, int family = AF_INET, int protocol = 0) const;
  // f() run with the thread in namespace b, then back in a; -1 (errno
  // set) when it cannot enter b.
  int in_b(const std::function<int()>& f) const;
  // xb's MAC address, read in b; xa's, read in a.
  bool mac_b(uint8_t out[6]) const;
  bool mac_a(uint8_t out[6]) const;
  // True when `ip -d link` in a shows an XDP program on xa ("prog/xdp id N").
  bool xdp_attached() const;

 private:
  static bool read_mac(int fd, const char* ifname, uint8_t out[6]);
  std::string a_, b_, error_;
  int orig_ns_ = -1, ns_a_ = -1, ns_b_ = -1;
};

// Runs a shell command; its exit status (or -1).
int run(const std::string& cmd);
// Its standard output.
std::string output(const std::string& cmd);
// Whether a namespace of that name exists.
bool netns_exists(const std::string& name);

sockaddr_in inet(const char* ip, uint16_t port);

// main() of a test binary whose tests make NetnsPairs named `prefix`:
// exits 77 (skipped, saying why) without root, iproute2 or ethtool; runs
// the tests; fails if a namespace of this process was left behind.
int netns_test_main(int argc, char** argv, const char* binary, const char* prefix);

}  // namespace sstest
