#include "core/base/process_share.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <mutex>

namespace ss {

namespace {
using Slot = ProcessShare::Slot;
constexpr size_t kChunkBytes = 4096;
constexpr size_t kPerChunk = kChunkBytes / sizeof(Slot);
constexpr size_t kMaxChunks = 4096;  // a million counters

static_assert(std::atomic<uint32_t>::is_always_lock_free &&
                  std::atomic<uint64_t>::is_always_lock_free,
              "counters in shared memory must be lock-free to work across processes");
static_assert(sizeof(Slot) == 16 && offsetof(Slot, count) == 0);

// This process's id, for the turn: getpid(2) is a system call on every
// glibc since 2.25, and the turn is asked on every send and receive.
uint32_t g_pid = 0;
void note_pid() { g_pid = static_cast<uint32_t>(::getpid()); }
uint32_t my_pid() {
  static std::once_flag once;
  std::call_once(once, [] {
    note_pid();
    pthread_atfork(nullptr, nullptr, note_pid);
  });
  return g_pid;
}

// This process's chunks. A fork child inherits the list with the mappings.
struct Arena {
  std::mutex mu;  // growth only; taking and dropping counters is lock-free
  std::atomic<Slot*> chunks[kMaxChunks] = {};
  std::atomic<size_t> used{0};
  std::atomic<size_t> hint{0};  // where the last counter was found
};

Arena& arena() {
  static Arena* a = new Arena();  // leaked: shares may be dropped at exit
  return *a;
}

std::atomic<uint32_t>* take_in(Slot* chunk) {
  for (size_t i = 0; i < kPerChunk; i++) {
    uint32_t free = 0;
    if (chunk[i].count.load(std::memory_order_relaxed) == 0 &&
        chunk[i].count.compare_exchange_strong(free, 1, std::memory_order_relaxed)) {
      chunk[i].turn.store(0, std::memory_order_relaxed);  // ours alone: nobody reads it yet
      return &chunk[i].count;
    }
  }
  return nullptr;
}
}  // namespace

int ProcessShare::open() {
  version_ = 0;
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
  auto* chunk = static_cast<Slot*>(m);  // zero-filled: all free
  count_ = take_in(chunk);
  a.chunks[now].store(chunk, std::memory_order_release);
  a.hint.store(now, std::memory_order_relaxed);
  a.used.store(now + 1, std::memory_order_release);
  return 0;
}

bool ProcessShare::current() const {
  if (!count_) return true;
  const uint64_t t = slot()->turn.load(std::memory_order_acquire);
  const uint64_t owner = t & kOwnerMask;
  if (owner == my_pid()) return true;
  return (owner == 0 || (t & kForked)) && (t >> 32) == version_;
}

bool ProcessShare::take_turn() {
  if (!count_) return true;
  std::atomic<uint64_t>& turn = slot()->turn;
  const uint64_t me = my_pid();
  uint64_t t = turn.load(std::memory_order_acquire);
  for (;;) {
    const uint64_t owner = t & kOwnerMask;
    if (owner == me && !(t & kForked)) return true;
    // Ours since before a fork, or free: moving it makes the other copies
    // stale (a new version).
    const bool takeable = owner == me || ((owner == 0 || (t & kForked)) && (t >> 32) == version_);
    if (!takeable) return false;
    const uint64_t mine = (static_cast<uint64_t>((t >> 32) + 1) << 32) | me;
    if (turn.compare_exchange_weak(t, mine, std::memory_order_acq_rel)) {
      version_ = static_cast<uint32_t>(mine >> 32);
      return true;
    }
  }
}

bool ProcessShare::settled() const {
  if (!count_) return true;
  const uint64_t t = slot()->turn.load(std::memory_order_acquire);
  const uint64_t owner = t & kOwnerMask;
  return owner == my_pid() || (owner == 0 && !(t & kForked) && (t >> 32) == version_);
}

bool ProcessShare::take_settled() { return settled() && take_turn(); }

bool ProcessShare::holds_turn() const {
  if (!count_) return true;
  return (slot()->turn.load(std::memory_order_acquire) & kOwnerMask) == my_pid();
}

void ProcessShare::give_up_turn() {
  if (!count_) return;
  std::atomic<uint64_t>& turn = slot()->turn;
  uint64_t t = turn.load(std::memory_order_acquire);
  while ((t & kOwnerMask) == my_pid())
    if (turn.compare_exchange_weak(t, t & ~(kOwnerMask | kForked), std::memory_order_acq_rel))
      return;
}

void ProcessShare::forked() {
  if (!count_) return;
  slot()->turn.fetch_or(kForked, std::memory_order_relaxed);
  if (handover_want_ && !area_.load(std::memory_order_relaxed)) {
    const size_t len = sizeof(Area) + handover_want_;
    void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) {  // else no hand-over: a stale copy stays stale
      area_len_ = len;
      area_.store(static_cast<Area*>(m), std::memory_order_release);
    }
  }
}

bool ProcessShare::hand_over(const std::vector<uint8_t>& state) {
  Area* a = area_.load(std::memory_order_acquire);
  if (!count_ || !a || state.size() > area_len_ - sizeof(Area) || !holds_turn()) return false;
  const uint64_t t = slot()->turn.load(std::memory_order_acquire);
  a->version.store(0, std::memory_order_relaxed);  // torn while written
  memcpy(a->data, state.data(), state.size());
  a->len = state.size();
  a->version.store((t >> 32) + 1, std::memory_order_release);
  give_up_turn();
  return true;
}

bool ProcessShare::left_for_us(std::vector<uint8_t>* state, uint32_t* version) const {
  Area* a = area_.load(std::memory_order_acquire);
  if (!count_ || !a || current()) return false;
  const uint64_t t = slot()->turn.load(std::memory_order_acquire);
  const uint64_t left = a->version.load(std::memory_order_acquire);
  const uint64_t len = a->len;
  if ((t & kOwnerMask) || left != (t >> 32) + 1 || len > area_len_ - sizeof(Area)) return false;
  state->assign(a->data, a->data + len);
  // Still the same after the copy: no holder took the turn and left anew
  // (the fence keeps the copy's reads before this load: a seqlock's read).
  std::atomic_thread_fence(std::memory_order_acquire);
  if (a->version.load(std::memory_order_relaxed) != left) return false;
  *version = static_cast<uint32_t>(t >> 32);
  return true;
}

bool ProcessShare::drop() {
  if (!count_) return true;
  give_up_turn();
  if (Area* a = area_.exchange(nullptr)) munmap(a, area_len_);
  bool last = slot()->count.fetch_sub(1, std::memory_order_acq_rel) == 1;
  count_ = nullptr;
  return last;
}

}  // namespace ss
