#include "core/mem/region_registry.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <utility>
#include <vector>

#include "core/base/fd_spare.h"

namespace ss::mem::registry {
namespace {

struct Entry {
  uintptr_t start;
  uintptr_t end;  // exclusive
  int fd;         // -1 once taken or dropped
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
  if (it == r.entries.end() || it->start != a) return;
  if (it->fd >= 0) release_number(it->fd);
  r.entries.erase(it);
}

namespace {
// The entry holding [a, a+len), or nullptr (lock held by the caller).
Entry* holding(Registry& r, uintptr_t a, size_t len) {
  if (len > UINTPTR_MAX - a) return nullptr;
  // The candidate is the last entry starting at or before a.
  auto it = std::upper_bound(r.entries.begin(), r.entries.end(), a,
                             [](uintptr_t v, const Entry& e) { return v < e.start; });
  if (it == r.entries.begin()) return nullptr;
  --it;
  // An empty range still has to point inside the region.
  if (a >= it->end || a + len > it->end) return nullptr;
  return &*it;
}
}  // namespace

bool find(const void* addr, size_t len, int* fd, uint64_t* offset, bool take) {
  Registry& r = reg();
  // Taking changes the entry: the lock is exclusive then, shared otherwise.
  std::shared_lock shared(r.mu, std::defer_lock);
  std::unique_lock exclusive(r.mu, std::defer_lock);
  if (take)
    exclusive.lock();
  else
    shared.lock();
  auto a = reinterpret_cast<uintptr_t>(addr);
  Entry* e = holding(r, a, len);
  if (!e || e->fd < 0) return false;
  if (fd) *fd = e->fd;
  if (offset) *offset = a - e->start;
  if (take) e->fd = -1;
  return true;
}

void drop_fd(const void* addr, size_t len) {
  Registry& r = reg();
  std::unique_lock lock(r.mu);
  Entry* e = holding(r, reinterpret_cast<uintptr_t>(addr), len);
  if (e && e->fd >= 0) release_number(std::exchange(e->fd, -1));
}

}  // namespace ss::mem::registry
