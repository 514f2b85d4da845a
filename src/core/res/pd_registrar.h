// A mem::Registrar over one protection domain: a Pool that adds it has
// every chunk registered (through the MR cache) for local access and remote
// writes, so the buffers it hands out carry that device's keys (the
// handle's keys member).
#pragma once
#include <infiniband/verbs.h>

#include <map>
#include <mutex>

#include "core/mem/registrar.h"
#include "core/res/mr_cache.h"

namespace ss::res {

class PdRegistrar : public mem::Registrar {
 public:
  explicit PdRegistrar(ibv_pd* pd, int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
      : pd_(pd), access_(access) {}
  ~PdRegistrar() override;
  int reg(void* addr, size_t len, mem::RegHandle* out) override;
  void dereg(void* addr, size_t len, const mem::RegHandle& h) override;

 private:
  ibv_pd* pd_;
  int access_;
  std::mutex mu_;
  std::map<void*, MrCache::Entry*> held_;  // by chunk address
};

}  // namespace ss::res
