#include "tools/demo_floor.h"

#include <fcntl.h>
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

// Two counters on their own cache lines: the parent writes ping, the
// helper answers on pong. kEndSession sends the helper back to sleep.
struct alignas(64) Line {
  std::atomic<uint64_t> v{0};
  char pad[64 - sizeof(std::atomic<uint64_t>)];
};
constexpr uint64_t kEndSession = ~0ull;
constexpr size_t kBatch = 1000;  // round trips per timed batch: the clock's cost vanishes

constexpr size_t kRingBytes = 1 << 20;         // as the shm stream's receive buffer
constexpr uint64_t kRingTotal = 512ull << 20;  // bytes per ring measurement
constexpr auto kStuck = std::chrono::seconds(5);

// GB/s of `bytes` since t0; `checksum` (the work's result) is kept
// observable, so the compiler cannot drop the work.
double gbps(uint64_t bytes, clock::time_point t0, uint64_t checksum) {
  const double s = std::chrono::duration<double>(clock::now() - t0).count();
  volatile uint64_t sink = checksum;
  (void)sink;
  return static_cast<double>(bytes) / s / 1e9;
}

}  // namespace

struct LineProbe::Shared {
  Line ping, pong;
  // The ring: the helper writes pieces at head, this process reads at tail.
  Line head, tail;
  std::atomic<uint64_t> piece{0}, end{0};  // set before a ring session starts
  alignas(4096) uint8_t ring[kRingBytes];
};

namespace {

void ping_session(LineProbe::Shared& sh) {
  uint64_t seen = sh.pong.v.load(std::memory_order_relaxed);
  for (;;) {
    uint64_t v = sh.ping.v.load(std::memory_order_acquire);
    if (v == kEndSession) return;
    if (v != seen) {
      seen = v;
      sh.pong.v.store(v, std::memory_order_release);
    }
  }
}

// Spins until the helper's head reaches `pos`; false when it did not move
// for kStuck since `progress`.
bool helper_wrote(const LineProbe::Shared& sh, uint64_t pos, clock::time_point progress) {
  for (uint64_t spins = 1; sh.head.v.load(std::memory_order_acquire) < pos; spins++)
    if ((spins & 0xFFFFF) == 0 && clock::now() - progress > kStuck) return false;
  return true;
}

void ring_session(LineProbe::Shared& sh, const uint8_t* src) {
  const uint64_t piece = sh.piece.load(std::memory_order_acquire);
  const uint64_t end = sh.end.load(std::memory_order_acquire);
  for (uint64_t pos = 0; pos < end; pos += piece) {
    while (pos + piece - sh.tail.v.load(std::memory_order_acquire) > kRingBytes) {
      // full: the reader makes room
    }
    memcpy(sh.ring + pos % kRingBytes, src, piece);
    sh.head.v.store(pos + piece, std::memory_order_release);
  }
}

[[noreturn]] void helper_main(LineProbe::Shared& sh, int cmd_fd) {
  // A session per byte read ('s': ping-pong, 'r': ring); leaves on 'q', on
  // end of file, or with its parent (a session it cannot finish is ended
  // by the parent's SIGKILL).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  std::vector<uint8_t> src(kRingBytes / 2, 0x5A);
  for (;;) {
    char c;
    if (read(cmd_fd, &c, 1) != 1 || c == 'q') _exit(0);
    if (c == 's') ping_session(sh);
    if (c == 'r') ring_session(sh, src.data());
  }
}

}  // namespace

bool LineProbe::start() {
  void* mem =
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return false;
  sh_ = new (mem) Shared();
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return false;
  pid_ = fork();
  if (pid_ == 0) {
    ::close(fds[1]);
    helper_main(*sh_, fds[0]);
  }
  ::close(fds[0]);
  if (pid_ < 0) {
    ::close(fds[1]);
    return false;
  }
  cmd_fd_ = fds[1];
  return true;
}

LineProbe::~LineProbe() {
  if (pid_ > 0) {
    if (write(cmd_fd_, "q", 1) != 1) kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (cmd_fd_ >= 0) ::close(cmd_fd_);
  if (sh_) munmap(sh_, sizeof(Shared));
}

double LineProbe::one_way_us(size_t round_trips) {
  if (pid_ <= 0) return 0;
  // The session's first ping is in place before the helper wakes: waking
  // first, it could still read the last session's end and sleep again.
  sh_->ping.v.store(++n_, std::memory_order_release);
  if (write(cmd_fd_, "s", 1) != 1) return 0;
  n_--;  // the first batch sends that ping again
  std::vector<double> batches;
  const size_t total = std::max<size_t>(round_trips, 10 * kBatch) / kBatch;
  bool stuck = false;
  for (size_t b = 0; b < total + 2 && !stuck; b++) {  // two warm-up batches (the helper wakes)
    auto t0 = clock::now();
    for (size_t i = 0; i < kBatch; i++) {
      sh_->ping.v.store(++n_, std::memory_order_release);
      for (uint64_t spins = 0; sh_->pong.v.load(std::memory_order_acquire) != n_; spins++)
        if ((spins & 0xFFFFFFF) == 0 && spins && clock::now() - t0 > std::chrono::seconds(5)) {
          stuck = true;  // the helper is not running: no figure
          break;
        }
      if (stuck) break;
    }
    double us = std::chrono::duration<double, std::micro>(clock::now() - t0).count();
    if (b >= 2) batches.push_back(us / kBatch / 2);
  }
  sh_->ping.v.store(kEndSession, std::memory_order_release);
  if (stuck || batches.empty()) return 0;
  std::nth_element(batches.begin(), batches.begin() + batches.size() / 2, batches.end());
  return batches[batches.size() / 2];
}

double LineProbe::ring_gbps(size_t msg) {
  // Pieces tile the ring (none wraps) and messages; every session starts
  // at 0, which is safe: the helper touches neither position after it
  // wrote its last piece.
  const size_t piece = std::min(msg, kRingBytes / 2);
  if (pid_ <= 0 || msg % piece || kRingBytes % piece) return 0;
  const uint64_t total = kRingTotal / msg * msg;
  sh_->head.v.store(0, std::memory_order_relaxed);
  sh_->tail.v.store(0, std::memory_order_relaxed);
  sh_->piece.store(piece, std::memory_order_relaxed);
  sh_->end.store(total, std::memory_order_release);
  if (write(cmd_fd_, "r", 1) != 1) return 0;
  std::vector<uint8_t> buf(msg);
  uint64_t h = 0, pos = 0;
  const auto t0 = clock::now();
  auto progress = t0;
  for (uint64_t done = 0; done < total; done += msg) {
    for (size_t got = 0; got < msg; got += piece) {
      if (!helper_wrote(*sh_, pos + piece, progress)) {
        // Nothing written for that long: the helper is not running, and
        // could not finish this session.
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        pid_ = -1;
        return 0;
      }
      memcpy(buf.data() + got, sh_->ring + pos % kRingBytes, piece);
      pos += piece;
      sh_->tail.v.store(pos, std::memory_order_release);
      progress = clock::now();
    }
    h ^= message_sum(buf.data(), msg);
  }
  return gbps(total, t0, h);
}

namespace {

// The stream server's own work on one core, without the other core: copy
// each piece out of a 1 MiB ring (the shm receive buffer) and checksum it.
double receiver_gbps(size_t msg) {
  constexpr size_t kTotal = 1ull << 30;
  std::vector<uint8_t> ring(kRingBytes, 0x5A), buf(msg);
  size_t off = 0;
  uint64_t h = 0;
  auto t0 = clock::now();
  for (size_t done = 0; done < kTotal; done += msg) {
    memcpy(buf.data(), ring.data() + off, msg);
    h ^= message_sum(buf.data(), msg);
    off = off + 2 * msg > kRingBytes ? 0 : off + msg;
  }
  return gbps(kTotal, t0, h);
}

}  // namespace

Floor measure_floor(LineProbe* probe, size_t round_trips) {
  Floor f;
  f.line_one_way_us = probe->one_way_us(round_trips);
  f.receive64k_gbps = receiver_gbps(64 << 10);
  f.receive1m_gbps = receiver_gbps(1 << 20);
  f.ring64k_gbps = probe->ring_gbps(64 << 10);
  f.ring1m_gbps = probe->ring_gbps(1 << 20);
  f.ok = f.line_one_way_us > 0;
  return f;
}

}  // namespace ssdemo
