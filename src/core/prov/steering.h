// A ring provider's flow table: which received frames go to its rings
// rather than to the kernel. The UDP and TCP stacks ask for the flows of
// the sockets they serve; a provider with no table of its own (the tests'
// loopback ring) records them.
#pragma once
#include <sys/socket.h>

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

class FlowSteering {
 public:
  virtual ~FlowSteering() = default;
  // 0 or -errno; -EAFNOSUPPORT for a family the provider cannot steer.
  virtual int add(const SteeredFlow& f) = 0;
  virtual int remove(const SteeredFlow& f) = 0;
};

}  // namespace ss::prov
