#include "core/prov/xdp/xdp_steering.h"

#include <netinet/in.h>

#include <cerrno>
#include <cstring>

namespace ss::prov::xdp {

int XdpSteering::flow(const SteeredFlow& f, Flow* out) {
  out->proto = f.proto;
  if (f.family == AF_INET) {
    out->version = 4;
    memcpy(&out->ip, f.ip, 4);
  } else if (f.family == AF_INET6) {
    out->version = 6;
    memcpy(out->ip6, f.ip, 16);
  } else {
    return -EAFNOSUPPORT;
  }
  out->port = htons(f.port);
  return 0;
}

int XdpSteering::add(const SteeredFlow& f) {
  Flow x;
  if (int err = flow(f, &x)) return err;
  return dev_ ? dev_->add_flow(x) : -ENODEV;
}

int XdpSteering::remove(const SteeredFlow& f) {
  Flow x;
  if (int err = flow(f, &x)) return err;
  return dev_ ? dev_->remove_flow(x) : -ENODEV;
}

int XdpSteering::add_kept_only(const SteeredFlow& f) {
  Flow x;
  if (int err = flow(f, &x)) return err;
  x.kept_only = true;
  return dev_ ? dev_->add_flow(x) : -ENODEV;
}

int XdpSteering::connection(const FlowConnection& c, Connection* out) {
  if (c.family != AF_INET && c.family != AF_INET6) return -EAFNOSUPPORT;
  out->version = c.family == AF_INET ? 4 : 6;
  const size_t n = c.family == AF_INET ? 4 : 16;
  memcpy(out->local, c.local, n);
  memcpy(out->remote, c.remote, n);
  out->local_port = htons(c.local_port);
  out->remote_port = htons(c.remote_port);
  return 0;
}

int XdpSteering::pass(const FlowConnection& c, bool active) {
  Connection x;
  if (int err = connection(c, &x)) return err;
  return dev_ ? dev_->pass_connection(x, active) : -ENODEV;
}

int XdpSteering::keep(const FlowConnection& c, bool kept) {
  Connection x;
  if (int err = connection(c, &x)) return err;
  return dev_ ? dev_->keep_connection(x, kept) : -ENODEV;
}

int XdpSteering::own(const FlowConnection& c, bool owned) {
  if (!dev_ || !dev_->family_active()) return 0;
  Connection x;
  if (int err = connection(c, &x)) return err;
  const int err = dev_->own_connection(x, owned ? static_cast<int>(dev_->slot()) : -1);
  return err == -ENOENT && !owned ? 0 : err;
}

}  // namespace ss::prov::xdp
