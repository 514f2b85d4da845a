#include "core/mem/chunk_memory.h"

#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <new>

#include "core/base/log.h"

namespace ss::mem {
namespace {

size_t round_up(size_t len, size_t unit) { return (len + unit - 1) / unit * unit; }

void note_fallback(int err) {
  static std::atomic<bool> said{false};
  if (!said.exchange(true)) SS_INFO("mem: no hugepages available (%d), using normal pages", err);
}

}  // namespace

int ChunkMemory::map_private(size_t len, bool huge, ChunkMemory* m) {
  const size_t unit = huge ? huge_page_size() : page_size();
  if (unit == 0) return -EOPNOTSUPP;
  if (len > SIZE_MAX - unit) return -ENOMEM;
  len = round_up(len, unit);
  // MAP_HUGETLB reserves the pages now: no reservation means ENOMEM here,
  // never a SIGBUS on first touch.
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | (huge ? MAP_HUGETLB : 0), -1, 0);
  if (p == MAP_FAILED) return -errno;
  m->base_ = static_cast<char*>(p);
  m->len_ = len;
  m->huge_ = huge;
  return 0;
}

int ChunkMemory::create(size_t len, Backing backing, bool hugepages, const char* name,
                        std::unique_ptr<ChunkMemory>* out) {
  if (len == 0 || !out) return -EINVAL;
  std::unique_ptr<ChunkMemory> m(new (std::nothrow) ChunkMemory);
  if (!m) return -ENOMEM;
  int err = -EINVAL;
  for (bool huge : {true, false}) {
    if (huge && !hugepages) continue;
    if (backing == Backing::kPrivate) {
      err = map_private(len, huge, m.get());
    } else {
      err = Region::create(len, name, &m->region_, huge);
      if (err == 0) {
        m->base_ = static_cast<char*>(m->region_->addr());
        m->len_ = m->region_->len();
        m->huge_ = huge;
      }
    }
    if (err == 0) break;
    if (huge) note_fallback(err);
  }
  if (err) return err;
  *out = std::move(m);
  return 0;
}

ChunkMemory::~ChunkMemory() {
  if (!region_ && base_) munmap(base_, len_);
}

}  // namespace ss::mem
