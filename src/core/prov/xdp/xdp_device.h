// One netdev under AF_XDP: our steering program (steer.bpf.c, embedded as a
// bpftool skeleton) attached through a bpf_link, its XSKMAP (one socket per
// rx queue), its flow table and its counters. One Device per netdev per
// process, shared by that netdev's queues and the flows steered to them;
// the link (and so the program) goes away with the last holder, or with the
// process. The kernel picks native mode where the driver has it, generic
// otherwise; a netdev with another XDP program gets EBUSY, never a replacement.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

struct ss_steer;

namespace ss::prov::xdp {

// A steered flow. ip, ip6 and port in network byte order; an address of
// zeros is every address of its version.
struct Flow {
  uint8_t proto = 0;    // IPPROTO_UDP, IPPROTO_TCP
  uint8_t version = 4;  // 4: ip; 6: ip6
  uint32_t ip = 0;
  uint8_t ip6[16] = {};
  uint16_t port = 0;
  bool drop = false;  // drop its frames instead (loss injection in tests)
  // Only its connections kept (Device::keep_connection), the rest to the
  // kernel: a listener that left while connections it gave out stay.
  bool kept_only = false;
};

// A TCP connection (steer_abi.h's ss_conn_key): addresses as Flow's ip or
// ip6 by version, ports in network byte order.
struct Connection {
  uint8_t version = 4;
  uint8_t local[16] = {}, remote[16] = {};
  uint16_t local_port = 0, remote_port = 0;
};

// Sums of the program's per-CPU counters.
struct Counters {
  uint64_t redirected = 0;  // to an XSK
  uint64_t passed = 0;      // not steered: to the kernel
  uint64_t dropped = 0;     // flows with drop set
  uint64_t no_socket = 0;   // steered, no XSK on that queue: to the kernel
  uint64_t too_long = 0;    // UDP frames longer than an XSK frame: to the kernel
};

class Device {
 public:
  // The process's Device for ifname, attaching the program on first use.
  // -ENODEV unknown netdev, -EPERM/-EACCES without CAP_NET_ADMIN/CAP_BPF,
  // -EBUSY another XDP program is attached, -EOPNOTSUPP no XDP.
  static int open(const char* ifname, std::shared_ptr<Device>* out);
  // The Device already open for ifname, or nullptr.
  static std::shared_ptr<Device> find(const char* ifname);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  int ifindex() const { return ifindex_; }
  bool native() const { return native_; }  // driver mode (else generic)

  // The XSK serving rx queue `queue` (its descriptor), or none.
  int set_socket(uint32_t queue, int xsk_fd);
  // An XSK frame holds `room` bytes of a frame: longer UDP frames go to
  // the kernel (the least room of all the sockets counts).
  void set_frame_room(uint32_t room);
  int clear_socket(uint32_t queue);

  // 0 or -errno (-ENOSPC when the table is full, -EINVAL bad protocol
  // or version).
  int add_flow(const Flow& f);
  int remove_flow(const Flow& f);  // -ENOENT when not steered
  // The connection's frames to the kernel although its local port is
  // steered (active), or its entry made with frames still steered, while
  // it carries frames (the oldest idle one makes room).
  int pass_connection(const Connection& c, bool active);
  bool passed_any() const;  // pass_connection has made an entry
  // The connection's frames (kept) or no longer (-ENOENT if it was not)
  // to the rings on a flow with kept_only.
  int keep_connection(const Connection& c, bool kept);
  int counters(Counters* out) const;
  // The descriptors that keep the program attached (the link, the
  // program, its maps, which hold the XSKs), appended: a fork child that
  // must not keep the parent's steering alive closes its copies.
  void fds(std::vector<int>* out) const;

 private:
  Device() = default;
  ss_steer* skel_ = nullptr;
  int link_fd_ = -1;  // the bpf_link
  int ifindex_ = 0;
  bool native_ = false;
};

// Steering by netdev name, on the Device open there: -ENODEV when no queue
// (or other holder) has it open.
int add_flow(const char* ifname, const Flow& f);
int remove_flow(const char* ifname, const Flow& f);
int counters(const char* ifname, Counters* out);

// The netdev's number of rx queues (every one needs a socket: traffic may
// arrive on any), or -errno. The queues in use, not the most it could have:
// a veth uses one until ethtool -L gives it more.
int rx_queue_count(const char* ifname);

}  // namespace ss::prov::xdp
