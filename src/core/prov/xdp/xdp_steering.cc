#include "core/prov/xdp/xdp_steering.h"

#include <netinet/in.h>

#include <cerrno>
#include <cstring>

namespace ss::prov::xdp {

int XdpUdpSteering::flow(const net::IpAddr& ip, uint16_t port, Flow* out) {
  out->proto = IPPROTO_UDP;
  if (ip.family == AF_INET) {
    out->version = 4;
    memcpy(&out->ip, ip.bytes, 4);
  } else if (ip.family == AF_INET6) {
    out->version = 6;
    memcpy(out->ip6, ip.bytes, 16);
  } else {
    return -EAFNOSUPPORT;
  }
  out->port = htons(port);
  return 0;
}

int XdpUdpSteering::add(const net::IpAddr& ip, uint16_t port) {
  Flow f;
  if (int err = flow(ip, port, &f)) return err;
  return dev_ ? dev_->add_flow(f) : -ENODEV;
}

int XdpUdpSteering::remove(const net::IpAddr& ip, uint16_t port) {
  Flow f;
  if (int err = flow(ip, port, &f)) return err;
  return dev_ ? dev_->remove_flow(f) : -ENODEV;
}

}  // namespace ss::prov::xdp
