// A ring provider's flow table: which received frames go to its rings
// rather than to the kernel. The UDP and TCP stacks ask for the flows of
// the sockets they serve; a provider with no table of its own (the tests'
// loopback ring) records them.
#pragma once
#include <sys/socket.h>

#include <cerrno>
#include <compare>
#include <cstdint>

namespace ss::prov {

// Frames of IP protocol `proto` to (ip, port). ip: network order, the
// family's 4 or 16 bytes, the rest zero; all zero is every address of the
// family. port: host order.
struct SteeredFlow {
  uint8_t proto = 0;  // IPPROTO_UDP, IPPROTO_TCP
  sa_family_t family = AF_UNSPEC;
  uint8_t ip[16] = {};
  uint16_t port = 0;
  friend auto operator<=>(const SteeredFlow&, const SteeredFlow&) = default;
};

// One TCP connection: its local (ip, port) is a steered flow's, its
// remote the peer's. ip as SteeredFlow's; ports in host order.
struct FlowConnection {
  sa_family_t family = AF_UNSPEC;
  uint8_t local[16] = {}, remote[16] = {};
  uint16_t local_port = 0, remote_port = 0;
};

class FlowSteering {
 public:
  virtual ~FlowSteering() = default;
  // 0 or -errno; -EAFNOSUPPORT for a family the provider cannot steer.
  virtual int add(const SteeredFlow& f) = 0;
  virtual int remove(const SteeredFlow& f) = 0;
  // Whether the provider steers single connections of a flow (pass, keep,
  // add_kept_only); those that cannot return -EOPNOTSUPP there.
  virtual bool steers_connections() const { return false; }
  // A connection of a steered flow whose frames go to the kernel (the
  // rings handed it to a kernel socket) while it carries frames, until a
  // new SYN of its 4-tuple: first entered not yet passing (active false:
  // its frames still come to the rings), which is where it may fail, then
  // passing.
  virtual int pass(const FlowConnection&, bool /*active*/) { return -EOPNOTSUPP; }
  // Whether any connection was passed: a passed entry may then be lost
  // (the oldest idle ones make room), so a segment of no connection may
  // be the kernel's, to pass again rather than answer with a RST.
  virtual bool passed_any() const { return false; }
  // The flow, steered already, brings only the connections kept (keep),
  // the rest go to the kernel: a listener gone while the connections it
  // gave out stay. add() brings all of them again.
  virtual int add_kept_only(const SteeredFlow&) { return -EOPNOTSUPP; }
  // A connection of a kept-only flow kept on the rings, or no longer.
  virtual int keep(const FlowConnection&, bool /*kept*/) { return -EOPNOTSUPP; }
  // A connection this process's rings serve (owned), or no longer: where
  // several processes share a port (a fork child's rings beside its
  // parent's), its frames then stay with this one whichever process the
  // port's new connections go to. 0 where nothing else shares the rings.
  virtual int own(const FlowConnection&, bool /*owned*/) { return 0; }
};

}  // namespace ss::prov
