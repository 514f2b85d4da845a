// One netdev under AF_XDP: our steering program (steer.bpf.c, embedded as a
// bpftool skeleton) attached through a bpf_link, its XSKMAP (one socket per
// rx queue), its flow table and its counters. One Device per netdev per
// process, shared by that netdev's queues and the flows steered to them;
// the link (and so the program) goes away with the last holder, or with the
// process. The kernel picks native mode where the driver has it, generic
// otherwise; a netdev with another XDP program gets EBUSY, never a replacement.
// A fork child joins its parent's Device (Device::join) from the
// descriptors the parent passes: its sockets take a slot of their own in
// the XSKMAP, and the connections and listening ports the family gives it
// (own_connection, set_group). The program and the flow table stay the
// parent's to change.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

struct ss_steer;

namespace ss::prov::xdp {

struct FamilyPage;

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

// What a joining process needs of a Device: descriptors (the owner's
// numbers, valid where they were passed or inherited).
struct DeviceShare {
  int family = -1;  // the FamilyPage's memfd
  int xsks = -1, conn_owners = -1, counters = -1, flows = -1;
};

class Device {
 public:
  // The process's Device for ifname, attaching the program on first use.
  // -ENODEV unknown netdev, -EPERM/-EACCES without CAP_NET_ADMIN/CAP_BPF,
  // -EBUSY another XDP program is attached, -EOPNOTSUPP no XDP.
  static int open(const char* ifname, std::shared_ptr<Device>* out);
  // The Device already open for ifname, or nullptr.
  static std::shared_ptr<Device> find(const char* ifname);
  // In another process of the family: the owner's Device on ifname from
  // its descriptors (dup'd: the caller keeps its own), in place of any
  // this process had (a fork child's copy of its parent's). -errno.
  static int join(const char* ifname, const DeviceShare& share, std::shared_ptr<Device>* out);
  // The owner's descriptors for a joining process (valid while this
  // Device lives); -EOPNOTSUPP on a joined Device.
  int share(DeviceShare* out) const;
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  int ifindex() const { return ifindex_; }
  bool native() const { return native_; }  // driver mode (else generic)

  // The XSK serving rx queue `queue` for slot (its descriptor), or none.
  int set_socket(uint32_t queue, int xsk_fd, uint32_t slot = 0);
  // An XSK frame holds `room` bytes of a frame: longer UDP frames go to
  // the kernel (the least room of all the sockets counts).
  void set_frame_room(uint32_t room);
  int clear_socket(uint32_t queue, uint32_t slot = 0);
  FamilyPage* family() const { return family_; }
  // This process's slot: 0 for the owner.
  uint32_t slot() const { return slot_; }
  // Whether processes share the rings: this one joined, or the owner
  // shared them (share()).
  bool family_active() const;

  // The connection's frames to slot's sockets (or, with slot < 0, to its
  // port's group again). Owner and joined Devices alike.
  int own_connection(const Connection& c, int slot);
  // Every connection of slot's forgotten (its process is gone).
  void disown_slot(uint32_t slot);
  // The listening port's SYNs (and the frames of connections not owned)
  // spread over slots by their 4-tuple's hash; none: all to slot 0.
  // Owner only (-EOPNOTSUPP joined).
  int set_group(const Flow& f, const uint32_t* slots, uint32_t n);

  // 0 or -errno (-ENOSPC when the table is full, -EINVAL bad protocol
  // or version). Joined: the owner's table is not ours to change, so
  // add_flow says whether the owner steers f (0, else -EOPNOTSUPP; a
  // kept-only f: 0) and remove_flow does nothing.
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
  ss_steer* skel_ = nullptr;  // the owner's; null joined
  int link_fd_ = -1;          // the bpf_link
  int ifindex_ = 0;
  bool native_ = false;
  // The maps a joined Device uses too: the skeleton's, or its own dup'd
  // descriptors (closed with it).
  int xsks_fd_ = -1, owners_fd_ = -1, counters_fd_ = -1, flows_fd_ = -1;
  bool own_fds_ = false;
  int family_fd_ = -1;  // the owner's memfd (joined: none kept)
  FamilyPage* family_ = nullptr;
  uint32_t slot_ = 0;
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
