#include "interpose/program_memory.h"

#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

namespace ss::interpose {
namespace {

constexpr uintptr_t kPage = 4096;  // spans are kept whole pages (any page size is a multiple)
constexpr int kSpans = 4;

// Spans of one kind proven on this thread, replaced round robin.
struct Spans {
  uintptr_t lo[kSpans] = {}, hi[kSpans] = {};
  unsigned next = 0;
  bool has(uintptr_t a, uintptr_t b) const {
    for (int i = 0; i < kSpans; i++)
      if (lo[i] <= a && b <= hi[i]) return true;
    return false;
  }
  void add(uintptr_t a, uintptr_t b) {
    const unsigned i = next++ % kSpans;
    lo[i] = a & ~(kPage - 1);
    hi[i] = (b + kPage - 1) & ~(kPage - 1);
  }
};

thread_local Spans t_written, t_read;
thread_local int t_own_scopes = 0;     // OwnMemoryScope
std::atomic<bool> g_unchecked{false};  // process_vm_* refused here: plain accesses

// trust_region's: published by the count, never removed (the rings live
// as long as the process).
constexpr int kRegions = 16;
std::atomic<uintptr_t> g_lo[kRegions], g_hi[kRegions];
std::atomic<int> g_regions{0};

bool trusted(uintptr_t a, uintptr_t b) {
  for (int i = 0, n = g_regions.load(std::memory_order_acquire); i < n; i++)
    if (g_lo[i].load(std::memory_order_relaxed) <= a &&
        b <= g_hi[i].load(std::memory_order_relaxed))
      return true;
  return false;
}

// [a, b) of p and n, false when it wraps around (the kernel's EFAULT too).
bool range(const void* p, size_t n, uintptr_t* a, uintptr_t* b) {
  *a = reinterpret_cast<uintptr_t>(p);
  *b = *a + n;
  return *b >= *a && *a != 0;
}

// The syscall's verdict: 1 done, 0 EFAULT, -1 refused (plain access instead).
int verdict(ssize_t r, size_t n) {
  if (r == static_cast<ssize_t>(n)) return 1;
  if (r >= 0 || errno == EFAULT) return 0;
  g_unchecked.store(true, std::memory_order_relaxed);
  return -1;
}

}  // namespace

int copy_to_program(void* dst, const void* src, size_t n) noexcept {
  if (!n) return 0;
  uintptr_t a, b;
  if (!range(dst, n, &a, &b)) return -EFAULT;
  if (t_own_scopes || t_written.has(a, b) || trusted(a, b) ||
      g_unchecked.load(std::memory_order_relaxed)) {
    memcpy(dst, src, n);
    return 0;
  }
  const int saved = errno;
  iovec local{const_cast<void*>(src), n}, remote{dst, n};
  const int v = verdict(process_vm_writev(getpid(), &local, 1, &remote, 1, 0), n);
  errno = saved;
  if (v == 0) return -EFAULT;
  if (v < 0) memcpy(dst, src, n);
  t_written.add(a, b);
  return 0;
}

bool program_writable(void* p, size_t n) noexcept {
  if (!n) return true;
  uintptr_t a, b;
  if (!range(p, n, &a, &b)) return false;
  if (t_own_scopes || t_written.has(a, b) || trusted(a, b) ||
      g_unchecked.load(std::memory_order_relaxed))
    return true;
  const int saved = errno;
  iovec both{p, n};  // read and written back through the kernel's checked copies
  const int v = verdict(process_vm_writev(getpid(), &both, 1, &both, 1, 0), n);
  errno = saved;
  if (v == 0) return false;
  t_written.add(a, b);
  t_read.add(a, b);
  return true;
}

bool program_readable(const void* p, size_t n) noexcept {
  if (!n) return true;
  uintptr_t a, b;
  if (!range(p, n, &a, &b)) return false;
  if (t_own_scopes || t_read.has(a, b) || t_written.has(a, b) || trusted(a, b) ||
      g_unchecked.load(std::memory_order_relaxed))
    return true;
  const int saved = errno;
  char scratch[512];
  int v = 1;
  for (size_t done = 0; done < n && v > 0;) {  // a few calls at most: headers, iovec arrays
    const size_t k = n - done < sizeof scratch ? n - done : sizeof scratch;
    iovec local{scratch, k}, remote{const_cast<char*>(static_cast<const char*>(p) + done), k};
    v = verdict(process_vm_readv(getpid(), &local, 1, &remote, 1, 0), k);
    done += k;
  }
  errno = saved;
  if (v == 0) return false;
  t_read.add(a, b);
  return true;
}

void trust_region(const void* base, size_t len) noexcept {
  static std::atomic<int> claimed{0};
  const int i = claimed.fetch_add(1, std::memory_order_relaxed);
  if (i >= kRegions) return;
  const auto a = reinterpret_cast<uintptr_t>(base);
  g_lo[i].store(a, std::memory_order_relaxed);
  g_hi[i].store(a + len, std::memory_order_relaxed);
  // Published in order: a region claimed later but stored first waits.
  int expect = i;
  while (!g_regions.compare_exchange_weak(expect, i + 1, std::memory_order_release)) expect = i;
}

OwnMemoryScope::OwnMemoryScope() noexcept { t_own_scopes++; }
OwnMemoryScope::~OwnMemoryScope() { t_own_scopes--; }

}  // namespace ss::interpose
