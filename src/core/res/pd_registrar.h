// A mem::Registrar over one protection domain: a SlabPool that adds it has
// every slab registered (through the MR cache) for local access and remote
// writes, so the buffers it hands out carry that device's keys.
#pragma once
#include <infiniband/verbs.h>

#include <map>
#include <mutex>

#include "core/mem/registrar.h"
#include "core/res/mr_cache.h"

namespace ss::res {

class PdRegistrar : public mem::Registrar {
 public:
  explicit PdRegistrar(ibv_pd* pd,
                       int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
      : pd_(pd), access_(access) {}
  ~PdRegistrar() override;
  int reg(void* addr, size_t len, uint32_t* lkey, uint32_t* rkey) override;
  void dereg(void* addr, size_t len) override;

 private:
  ibv_pd* pd_;
  int access_;
  std::mutex mu_;
  std::map<void*, MrCache::Entry*> held_;  // by slab address
};

}  // namespace ss::res
