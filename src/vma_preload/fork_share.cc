#include "vma_preload/fork_share.h"

#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "core/base/fd_table.h"
#include "core/base/log.h"
#include "vma_preload/kernel_socket.h"

namespace ss::vma::preload {
namespace {

constexpr int kAnswerMs = 1000;
constexpr size_t kSlots = 64;

// A request's life: free -> claimed (a child writes it) -> asked -> lent
// (the parent lent the flows; `pid` holds them) -> free (that process is
// gone), or asked -> free (nothing to lend: the record is closed or not
// offloaded).
enum State : uint32_t { kFree, kClaimed, kAsked, kLent };

struct Slot {
  std::atomic<uint32_t> state;
  std::atomic<int32_t> pid;
  std::atomic<uint64_t> id;
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "the page is shared across processes");

struct Page {
  std::atomic<int32_t> owner;  // the process whose rings these are
  Slot slots[kSlots];
};

std::once_flag g_once;
Page* g_page = nullptr;  // MAP_SHARED: a fork child writes the parent's
int g_event = -1;
int g_open_err = 0;

// The parent's record with this id, or null (closed since).
std::shared_ptr<KernelSocket> record(uint64_t id) {
  FdTable& t = FdTable::instance();
  const int top = highest_tracked_fd();
  for (int fd = 0; fd <= top; fd++)
    if (t.kind(fd) == FdKind::kVmaKernel)
      if (auto s = t.get<KernelSocket>(fd, FdKind::kVmaKernel); s && s->id == id) return s;
  return nullptr;
}

bool gone(pid_t pid) { return ::kill(pid, 0) < 0 && errno == ESRCH; }

}  // namespace

int fork_share_open() {
  std::call_once(g_once, [] {
    void* p = ::mmap(nullptr, sizeof(Page), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                     -1, 0);
    if (p == MAP_FAILED) {
      g_open_err = -errno;
    } else {
      g_page = new (p) Page{};
      g_page->owner.store(::getpid(), std::memory_order_relaxed);
      g_event = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
      if (g_event < 0) g_open_err = -errno;
    }
    if (g_open_err)
      SS_WARN("fork: no request page (%s): a fork child's inherited offloaded sockets get only "
              "same-host datagrams while this process holds them",
              strerror(-g_open_err));
  });
  return g_open_err;
}

int fork_share_fd() { return g_open_err ? -1 : g_event; }

void fork_share_serve() {
  if (!g_page || g_event < 0) return;
  uint64_t n;
  while (::read(g_event, &n, sizeof n) > 0) {
  }
  for (Slot& s : g_page->slots) {
    const uint32_t st = s.state.load(std::memory_order_acquire);
    if (st != kAsked && st != kLent) continue;
    const uint64_t id = s.id.load(std::memory_order_relaxed);
    const pid_t pid = s.pid.load(std::memory_order_relaxed);
    if (st == kLent && !gone(pid)) continue;
    auto rec = record(id);
    if (st == kAsked) {
      const bool lent = rec && rec->lend_to_fork_child(true, pid);
      s.state.store(lent ? kLent : kFree, std::memory_order_release);
    } else {
      if (rec) rec->lend_to_fork_child(false, pid);
      s.state.store(kFree, std::memory_order_release);
    }
  }
}

void fork_share_ask(uint64_t id) {
  if (!g_page) return;  // the parent had none: nothing to ask
  for (Slot& s : g_page->slots) {
    uint32_t free = kFree;
    if (!s.state.compare_exchange_strong(free, kClaimed, std::memory_order_acquire)) continue;
    s.id.store(id, std::memory_order_relaxed);
    s.pid.store(::getpid(), std::memory_order_relaxed);
    s.state.store(kAsked, std::memory_order_release);
    const uint64_t one = 1;
    if (::write(g_event, &one, sizeof one) < 0) {
      // closed by the program: the parent's next look (within a second) answers
    }
    // An owner gone holds no flow: no answer is needed then.
    const pid_t owner = g_page->owner.load(std::memory_order_relaxed);
    const timespec ms = {0, 1000 * 1000};
    for (int i = 0; i < kAnswerMs && s.state.load(std::memory_order_acquire) == kAsked; i++) {
      if (i % 10 == 9 && gone(owner)) return;
      ::nanosleep(&ms, nullptr);
    }
    return;
  }
  SS_WARN("fork child: %zu inherited sockets shared already; this one gets only what reaches "
          "its kernel socket",
          kSlots);
}

}  // namespace ss::vma::preload
