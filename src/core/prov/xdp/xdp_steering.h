// The rings' flow table (prov::FlowSteering) on a netdev's steering
// program: UDP and TCP, IPv4 and IPv6.
#pragma once
#include <memory>

#include "core/prov/steering.h"
#include "core/prov/xdp/xdp_device.h"

namespace ss::prov::xdp {

class XdpSteering final : public FlowSteering {
 public:
  // dev: the netdev's Device (kept open while flows may be steered).
  explicit XdpSteering(std::shared_ptr<Device> dev) : dev_(std::move(dev)) {}
  int add(const SteeredFlow& f) override;
  int remove(const SteeredFlow& f) override;
  bool steers_connections() const override { return true; }
  int pass(const FlowConnection& c, bool active) override;
  bool passed_any() const override { return dev_->passed_any(); }
  int add_kept_only(const SteeredFlow& f) override;
  int keep(const FlowConnection& c, bool kept) override;
  int own(const FlowConnection& c, bool owned) override;

  // The program's flow: -EAFNOSUPPORT for another family.
  static int flow(const SteeredFlow& f, Flow* out);

 private:
  static int connection(const FlowConnection& c, Connection* out);
  std::shared_ptr<Device> dev_;
};

}  // namespace ss::prov::xdp
