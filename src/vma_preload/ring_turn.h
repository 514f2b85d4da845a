// Who reads a netdev's rings: the program's calls while it makes them,
// the vma-tcp thread while it does not. Two readers of one ring take each
// other's locks and every frame wakes both (a receiver moved half the
// bytes); so the thread leaves the rings to the program while the
// program has looked since the thread's last look (the thread looks again
// a millisecond later, twice as late each time the program looked again,
// up to kLookAgainMaxMs: a program spinning on its sockets sees the thread
// seldom, whose wake-ups on its core were its round trips' slowest 1%),
// parks while one program thread has slept on them
// since then (its wake-up wakes the thread: once per such sleep, never
// per frame; the thread looks every kParkedLookMs all the same), and reads
// them once the program neither looks nor sleeps.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>

namespace ss::vma::preload {

class RingTurn {
 public:
  enum class Reader {
    kService,        // the thread reads the rings
    kProgramLooks,   // the program does: the thread looks again soon
    kProgramSleeps,  // a program thread sleeps on them: the thread parks
  };
  static constexpr int kLookAgainMs = 1;
  // Below the delayed ACK's 40 ms: an ACK a program's look held back
  // still arms a timer that wakes the thread on time.
  static constexpr int kLookAgainMaxMs = 16;

  // A parked thread looks again this often: a sleeper that never left
  // (a thread cancelled or longjmp'd out of its wait) must not leave the
  // rings unread for good.
  static constexpr int kParkedLookMs = 50;

  // A program's call read the rings.
  void program_looked() { looks_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t looks() const { return looks_.load(); }
  // A program thread sleeps on the rings from enter_sleep to leave_sleep.
  // leave_sleep's true: the thread parked for it, wake it.
  void enter_sleep() { sleepers_.fetch_add(1); }
  bool leave_sleep() {
    looks_.fetch_add(1);
    return sleepers_.fetch_sub(1) == 1 && parked_.exchange(false);
  }
  // enter_sleep to leave_sleep as a scope (a thread cancelled in its
  // sleep leaves too); `wake` wakes the thread.
  class Sleep {
   public:
    Sleep(RingTurn& t, void (*wake)()) : t_(t), wake_(wake) { t_.enter_sleep(); }
    ~Sleep() {
      if (t_.leave_sleep()) wake_();
    }
    Sleep(const Sleep&) = delete;
    Sleep& operator=(const Sleep&) = delete;

   private:
    RingTurn& t_;
    void (*wake_)();
  };

  // The service thread's look; *seen is its count of the program's looks.
  Reader reader(uint64_t* seen) {
    parked_.store(true);  // before the loads: a leave_sleep after them sees it
    const bool asleep = sleepers_.load() > 0;
    const uint64_t looks = looks_.load();
    if (looks != *seen) {
      parked_.store(false);
      *seen = looks;
      return Reader::kProgramLooks;
    }
    look_again_ms_ = kLookAgainMs;  // the program stopped looking
    if (asleep) return Reader::kProgramSleeps;
    parked_.store(false);
    return Reader::kService;
  }
  // After kProgramLooks: when the thread looks again (the service thread's
  // only: each call is one more look the program kept the rings).
  int look_again_ms() {
    const int ms = look_again_ms_;
    look_again_ms_ = std::min(ms * 2, kLookAgainMaxMs);
    return ms;
  }

 private:
  std::atomic<uint64_t> looks_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> parked_{false};
  int look_again_ms_ = kLookAgainMs;  // the service thread's alone
};

}  // namespace ss::vma::preload
