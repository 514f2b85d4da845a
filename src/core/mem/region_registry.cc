#include "core/mem/region_registry.h"

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <vector>

namespace ss::mem::registry {
namespace {

struct Entry {
  uintptr_t start;
  uintptr_t end;  // exclusive
  int fd;
};

struct Registry {
  std::shared_mutex mu;
  std::vector<Entry> entries;  // sorted by start
};

// Deliberately leaked: Regions owned by other static objects may be destroyed
// after this translation unit's statics during exit.
Registry& reg() {
  static Registry* r = new Registry;
  return *r;
}

bool by_start(const Entry& e, uintptr_t a) { return e.start < a; }

}  // namespace

int add(const void* addr, size_t len, int fd) {
  auto a = reinterpret_cast<uintptr_t>(addr);
  Registry& r = reg();
  std::unique_lock lock(r.mu);
  auto it = std::lower_bound(r.entries.begin(), r.entries.end(), a, by_start);
  try {
    r.entries.insert(it, Entry{a, a + len, fd});
  } catch (const std::bad_alloc&) {
    return -ENOMEM;
  }
  return 0;
}

void remove(const void* addr) {
  auto a = reinterpret_cast<uintptr_t>(addr);
  Registry& r = reg();
  std::unique_lock lock(r.mu);
  auto it = std::lower_bound(r.entries.begin(), r.entries.end(), a, by_start);
  if (it != r.entries.end() && it->start == a) r.entries.erase(it);
}

bool find(const void* addr, size_t len, int* fd, uint64_t* offset) {
  auto a = reinterpret_cast<uintptr_t>(addr);
  if (len > UINTPTR_MAX - a) return false;
  Registry& r = reg();
  std::shared_lock lock(r.mu);
  // The candidate is the last entry starting at or before a.
  auto it = std::upper_bound(r.entries.begin(), r.entries.end(), a,
                             [](uintptr_t v, const Entry& e) { return v < e.start; });
  if (it == r.entries.begin()) return false;
  --it;
  // An empty range still has to point inside the region.
  if (a >= it->end || a + len > it->end) return false;
  if (fd) *fd = it->fd;
  if (offset) *offset = a - it->start;
  return true;
}

}  // namespace ss::mem::registry
