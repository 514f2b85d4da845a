#include "core/res/pd_registrar.h"

#include "core/res/verbs_manager.h"

namespace ss::res {

PdRegistrar::~PdRegistrar() {
  std::lock_guard<std::mutex> lk(mu_);
  for (auto& [addr, e] : held_) mr_cache().release(e);
}

int PdRegistrar::reg(void* addr, size_t len, mem::RegHandle* out) {
  MrCache::Entry* e = nullptr;
  int rc = mr_cache().acquire(pd_, addr, len, access_, &e);
  if (rc) return rc;
  std::lock_guard<std::mutex> lk(mu_);
  auto [it, fresh] = held_.emplace(addr, e);
  if (!fresh) {  // the pool registers a chunk once; keep one hold per address
    mr_cache().release(e);
    e = it->second;
  }
  out->keys.lkey = e->mr->lkey;
  out->keys.rkey = e->mr->rkey;
  return 0;
}

void PdRegistrar::dereg(void* addr, size_t, const mem::RegHandle&) {
  MrCache::Entry* e = nullptr;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = held_.find(addr);
    if (it == held_.end()) return;
    e = it->second;
    held_.erase(it);
  }
  mr_cache().release(e);
}

}  // namespace ss::res
