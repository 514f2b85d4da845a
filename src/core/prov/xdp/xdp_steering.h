// The UDP endpoint layer's flow table (net::UdpSteering) on a netdev's
// steering program. IPv4 only: the program passes IPv6 to the kernel, so
// an IPv6 flow is -EAFNOSUPPORT (the endpoint's kernel socket serves it).
#pragma once
#include <memory>

#include "core/net/udp_stack.h"
#include "core/prov/xdp/xdp_device.h"

namespace ss::prov::xdp {

class XdpUdpSteering final : public net::UdpSteering {
 public:
  // dev: the netdev's Device (kept open while flows may be steered).
  explicit XdpUdpSteering(std::shared_ptr<Device> dev) : dev_(std::move(dev)) {}
  int add(const net::IpAddr& ip, uint16_t port) override;
  int remove(const net::IpAddr& ip, uint16_t port) override;

 private:
  // The program's key for (ip, port): -EAFNOSUPPORT for IPv6.
  static int flow(const net::IpAddr& ip, uint16_t port, Flow* out);
  std::shared_ptr<Device> dev_;
};

}  // namespace ss::prov::xdp
