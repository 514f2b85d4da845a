#include "core/base/spin_phase.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

namespace ss {
namespace {

std::atomic<int> g_spinners{0};

// After a preempted spin this thread's waits sleep at once for a while (a
// core it shares with what it waits for keeps being wanted): 100 ms, then
// twice as long after each preempted spin, up to 1 s; a spin that ends
// unpreempted starts it over.
using clock = SpinLimit::clock;
constexpr clock::duration kBackoffMin = std::chrono::milliseconds(100);
constexpr clock::duration kBackoffMax = std::chrono::seconds(1);
thread_local clock::time_point t_no_spin_until{};
thread_local clock::duration t_backoff = kBackoffMin;

// The calling thread's involuntary context switches so far.
long involuntary_switches() {
  rusage u;
  return getrusage(RUSAGE_THREAD, &u) == 0 ? u.ru_nivcsw : 0;
}

}  // namespace

int spinners_join() { return g_spinners.fetch_add(1, std::memory_order_relaxed) + 1; }

void spinners_leave() { g_spinners.fetch_sub(1, std::memory_order_relaxed); }

int process_cores() {
  static const int cores = [] {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
    const int n = CPU_COUNT(&set);
    return n > 0 ? n : 1;
  }();
  return cores;
}

int spinners_allowed(int process_cores, long online_cores) {
  return process_cores < online_cores ? process_cores : std::max(process_cores - 1, 0);
}

int spinners_allowed() {
  static const int n = spinners_allowed(process_cores(), sysconf(_SC_NPROCESSORS_ONLN));
  return n;
}

SpinLimit::~SpinLimit() { end(); }

void SpinLimit::end() {
  if (!counted_) return;
  spinners_leave();
  counted_ = false;
  if (!stopped_) t_backoff = kBackoffMin;  // spun to its end unpreempted
  stopped_ = true;
}

bool SpinLimit::go_on(clock::time_point now) {
  if (stopped_) return false;
  if (!counted_) {
    stopped_ = now < t_no_spin_until;
    if (!stopped_) {
      counted_ = true;
      stopped_ = spinners_join() > spinners_allowed();
      switches_ = involuntary_switches();
    }
  } else if (now - last_ > kPreempted) {
    // A long look: preempted, or only slow (a large poll set)? The kernel
    // knows.
    const long switches = involuntary_switches();
    stopped_ = switches != switches_;
    switches_ = switches;
    if (stopped_) {
      t_no_spin_until = now + t_backoff;
      t_backoff = std::min<clock::duration>(t_backoff * 2, kBackoffMax);
    }
  }
  last_ = now;
  if (stopped_ && counted_) {  // a sleeper from now on, no spinner
    spinners_leave();
    counted_ = false;
  }
  return !stopped_;
}

}  // namespace ss
