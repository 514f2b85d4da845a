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

int XdpSteering::pass(const PassedConnection& c, bool active) {
  if (c.family != AF_INET && c.family != AF_INET6) return -EAFNOSUPPORT;
  Connection x;
  x.version = c.family == AF_INET ? 4 : 6;
  const size_t n = c.family == AF_INET ? 4 : 16;
  memcpy(x.local, c.local, n);
  memcpy(x.remote, c.remote, n);
  x.local_port = htons(c.local_port);
  x.remote_port = htons(c.remote_port);
  return dev_ ? dev_->pass_connection(x, active) : -ENODEV;
}

}  // namespace ss::prov::xdp
