// The UDP endpoint layer's flow table (net::UdpSteering) on a netdev's
// steering program, IPv4 and IPv6.
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
  // The program's flow for (ip, port): -EAFNOSUPPORT for another family.
  static int flow(const net::IpAddr& ip, uint16_t port, Flow* out);
  std::shared_ptr<Device> dev_;
};

}  // namespace ss::prov::xdp
