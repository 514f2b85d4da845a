#include "core/prov/util/region_table.h"

#include <algorithm>
#include <atomic>

namespace ss::prov::util {

namespace {
std::atomic<uint32_t> next_key{1};
}

MemoryRegion RegionTable::add(void* addr, size_t len, int access) {
  uint32_t key = next_key.fetch_add(1);
  if (key == 0) key = next_key.fetch_add(1);  // 0 stays "no key"
  std::lock_guard<FutexMutex> lock(mu_);
  entries_.push_back({reinterpret_cast<uint64_t>(addr), len, key,
                      (access & kAccessRemoteWrite) != 0, static_cast<uint8_t*>(addr), key});
  MemoryRegion mr;
  mr.addr = addr;
  mr.length = len;
  mr.lkey = key;
  mr.rkey = key;
  return mr;
}

void RegionTable::remove(const MemoryRegion& mr) {
  std::lock_guard<FutexMutex> lock(mu_);
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [&](const Entry& e) { return e.owner == mr.lkey; }),
                 entries_.end());
}

void RegionTable::alias(const MemoryRegion& now, uint32_t wire_key, uint64_t wire_addr,
                        size_t len) {
  std::lock_guard<FutexMutex> lock(mu_);
  auto* local = static_cast<uint8_t*>(now.addr);
  for (const Entry& e : entries_)
    if (e.key == now.lkey && local >= e.local &&
        local - e.local <= static_cast<ptrdiff_t>(e.length)) {
      const uint64_t room = e.length - static_cast<uint64_t>(local - e.local);
      entries_.push_back(
          {wire_addr, std::min<uint64_t>(len, room), wire_key, e.remote_write, local, e.key});
      return;
    }
}

void RegionTable::reserve_keys(uint32_t key) {
  uint32_t next = next_key.load();
  while (next <= key && !next_key.compare_exchange_weak(next, key + 1)) {
  }
}

uint8_t* RegionTable::resolve(uint32_t rkey, uint64_t remote_addr, uint32_t len) const {
  std::lock_guard<FutexMutex> lock(mu_);
  for (const Entry& e : entries_) {
    if (e.key != rkey) continue;
    if (!e.remote_write) return nullptr;
    // Written to avoid overflow: addr - base and length - len never wrap.
    if (remote_addr < e.base || len > e.length || remote_addr - e.base > e.length - len)
      return nullptr;
    return e.local + (remote_addr - e.base);
  }
  return nullptr;
}

}  // namespace ss::prov::util
