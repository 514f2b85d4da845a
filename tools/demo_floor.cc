#include "tools/demo_floor.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tools/demo_transport.h"

namespace ssdemo {
namespace {

using clock = std::chrono::steady_clock;

// Two counters on their own cache lines: the parent writes ping, the child
// answers on pong. kStop tells the child to leave.
struct alignas(64) Line {
  std::atomic<uint64_t> v{0};
  char pad[64 - sizeof(std::atomic<uint64_t>)];
};
struct Shared {
  Line ping, pong;
};
constexpr uint64_t kStop = ~0ull;
constexpr size_t kBatch = 1000;  // round trips per timed batch: the clock's cost vanishes

double line_one_way_us(size_t round_trips) {
  void* mem = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
  if (mem == MAP_FAILED) return 0;
  auto* sh = new (mem) Shared();
  pid_t pid = fork();
  if (pid < 0) {
    munmap(mem, sizeof(Shared));
    return 0;
  }
  if (pid == 0) {
    // The child answers until told to stop, or dies with its parent.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    uint64_t seen = 0;
    for (;;) {
      uint64_t v = sh->ping.v.load(std::memory_order_acquire);
      if (v == kStop) _exit(0);
      if (v != seen) {
        seen = v;
        sh->pong.v.store(v, std::memory_order_release);
      }
    }
  }
  std::vector<double> batches;
  uint64_t n = 0;
  const size_t total = std::max<size_t>(round_trips, 10 * kBatch) / kBatch;
  bool stuck = false;
  for (size_t b = 0; b < total + 2 && !stuck; b++) {  // two warm-up batches
    auto t0 = clock::now();
    for (size_t i = 0; i < kBatch; i++) {
      sh->ping.v.store(++n, std::memory_order_release);
      for (uint64_t spins = 0; sh->pong.v.load(std::memory_order_acquire) != n; spins++)
        if ((spins & 0xFFFFFFF) == 0 && spins && clock::now() - t0 > std::chrono::seconds(5)) {
          stuck = true;  // the child is not running: no figure
          break;
        }
      if (stuck) break;
    }
    double us = std::chrono::duration<double, std::micro>(clock::now() - t0).count();
    if (b >= 2) batches.push_back(us / kBatch / 2);
  }
  sh->ping.v.store(kStop, std::memory_order_release);
  waitpid(pid, nullptr, 0);
  munmap(mem, sizeof(Shared));
  if (stuck || batches.empty()) return 0;
  std::nth_element(batches.begin(), batches.begin() + batches.size() / 2, batches.end());
  return batches[batches.size() / 2];
}

// The stream server's own work on one core, without the other core: copy
// each piece out of a 1 MiB ring (the shm receive buffer) and checksum it.
double receiver_gbps(size_t msg) {
  constexpr size_t kRing = 1 << 20;
  constexpr size_t kTotal = 1ull << 30;
  std::vector<uint8_t> ring(kRing, 0x5A), buf(msg);
  size_t off = 0;
  uint64_t h = 0;
  auto t0 = clock::now();
  for (size_t done = 0; done < kTotal; done += msg) {
    memcpy(buf.data(), ring.data() + off, msg);
    h ^= message_sum(buf.data(), msg);
    off = off + 2 * msg > kRing ? 0 : off + msg;
  }
  double s = std::chrono::duration<double>(clock::now() - t0).count();
  volatile uint64_t sink = h;  // the work must stay observable
  (void)sink;
  return static_cast<double>(kTotal) / s / 1e9;
}

}  // namespace

Floor measure_floor(size_t round_trips) {
  Floor f;
  f.line_one_way_us = line_one_way_us(round_trips);
  f.receive64k_gbps = receiver_gbps(64 << 10);
  f.receive1m_gbps = receiver_gbps(1 << 20);
  f.ok = f.line_one_way_us > 0;
  return f;
}

}  // namespace ssdemo
