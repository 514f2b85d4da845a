#include "core/prov/endpoint_registrar.h"

#include <cerrno>

namespace ss::prov {

EndpointRegistrar::EndpointRegistrar(int access, Endpoint* ep) : ep_(ep), access_(access) {}

EndpointRegistrar::~EndpointRegistrar() = default;

int EndpointRegistrar::reg(void* addr, size_t len, mem::RegHandle* out) {
  if (!ep_) return -ENOTCONN;
  MemoryRegion mr;
  int rc = ep_->reg_mr(addr, len, access_, &mr);
  if (rc) return rc;
  out->keys.lkey = mr.lkey;
  out->keys.rkey = mr.rkey;
  return 0;
}

void EndpointRegistrar::dereg(void* addr, size_t len, const mem::RegHandle& h) {
  if (!ep_) return;
  // What reg_mr returned: every provider finds its registration by these.
  MemoryRegion mr;
  mr.addr = addr;
  mr.length = len;
  mr.lkey = h.keys.lkey;
  mr.rkey = h.keys.rkey;
  ep_->dereg_mr(&mr);
}

}  // namespace ss::prov
