#include "core/base/process_share.h"

#include <sys/mman.h>

#include <cerrno>
#include <mutex>

namespace ss {

namespace {
constexpr size_t kChunkBytes = 4096;
constexpr size_t kPerChunk = kChunkBytes / sizeof(std::atomic<uint32_t>);
constexpr size_t kMaxChunks = 1024;  // a million counters

static_assert(std::atomic<uint32_t>::is_always_lock_free,
              "counters in shared memory must be lock-free to work across processes");

// This process's chunks. A fork child inherits the list with the mappings.
struct Arena {
  std::mutex mu;  // growth only; taking and dropping counters is lock-free
  std::atomic<std::atomic<uint32_t>*> chunks[kMaxChunks] = {};
  std::atomic<size_t> used{0};
  std::atomic<size_t> hint{0};  // where the last counter was found
};

Arena& arena() {
  static Arena* a = new Arena();  // leaked: shares may be dropped at exit
  return *a;
}

std::atomic<uint32_t>* take_in(std::atomic<uint32_t>* chunk) {
  for (size_t i = 0; i < kPerChunk; i++) {
    uint32_t free = 0;
    if (chunk[i].load(std::memory_order_relaxed) == 0 &&
        chunk[i].compare_exchange_strong(free, 1, std::memory_order_relaxed))
      return &chunk[i];
  }
  return nullptr;
}
}  // namespace

int ProcessShare::open() {
  Arena& a = arena();
  const size_t n = a.used.load(std::memory_order_acquire);
  const size_t start = n ? a.hint.load(std::memory_order_relaxed) % n : 0;
  for (size_t k = 0; k < n; k++) {
    size_t c = (start + k) % n;
    if (auto* p = take_in(a.chunks[c].load(std::memory_order_acquire))) {
      a.hint.store(c, std::memory_order_relaxed);
      count_ = p;
      return 0;
    }
  }
  std::lock_guard<std::mutex> g(a.mu);
  size_t now = a.used.load(std::memory_order_relaxed);
  if (now > n)  // another thread mapped one meanwhile
    if (auto* p = take_in(a.chunks[now - 1].load(std::memory_order_relaxed))) {
      count_ = p;
      return 0;
    }
  if (now == kMaxChunks) return -ENOMEM;
  void* m = mmap(nullptr, kChunkBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return -ENOMEM;
  auto* chunk = static_cast<std::atomic<uint32_t>*>(m);  // zero-filled: all free
  count_ = take_in(chunk);
  a.chunks[now].store(chunk, std::memory_order_release);
  a.hint.store(now, std::memory_order_relaxed);
  a.used.store(now + 1, std::memory_order_release);
  return 0;
}

bool ProcessShare::drop() {
  if (!count_) return true;
  bool last = count_->fetch_sub(1, std::memory_order_acq_rel) == 1;
  count_ = nullptr;
  return last;
}

}  // namespace ss
