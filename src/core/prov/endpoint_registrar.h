// EndpointRegistrar: a mem::Registrar over one connection's Endpoint
// (reg_mr/dereg_mr with one access), so a Pool whose chunks serve that
// connection registers them with it alone: a stream provider keys the
// memory in the connection's own table, shm hands the chunk's memfd to that
// peer only, verbs registers it through the MR cache. A pool of several
// connections' buffers takes a per-device registrar instead
// (res::PdRegistrar).
#pragma once
#include <cstddef>

#include "core/base/api.h"
#include "core/mem/registrar.h"
#include "core/prov/connection.h"

namespace ss::prov {

// Built and destroyed out of line: the faces import those two, and the
// vtable stays inside the core.
class EndpointRegistrar : public mem::Registrar {
 public:
  SS_API explicit EndpointRegistrar(int access, Endpoint* ep = nullptr);
  SS_API ~EndpointRegistrar() override;
  EndpointRegistrar(const EndpointRegistrar&) = delete;
  EndpointRegistrar& operator=(const EndpointRegistrar&) = delete;
  // The endpoint registrations go to; nullptr when there is none, or it is
  // no longer this process's to call (kept for a fork's other holder):
  // reg() then fails with -ENOTCONN and dereg() does nothing.
  void set_endpoint(Endpoint* ep) { ep_ = ep; }
  // The handle's keys are the region's lkey and rkey.
  int reg(void* addr, size_t len, mem::RegHandle* out) override;
  void dereg(void* addr, size_t len, const mem::RegHandle& h) override;

 private:
  Endpoint* ep_ = nullptr;
  const int access_;
};

}  // namespace ss::prov
