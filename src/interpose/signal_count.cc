// The counting of the program's signal handlers (signal_count.h): a
// handler the program installs is kept per signal, and the kernel is given
// a trampoline (SA_SIGINFO, the program's other flags and mask) that
// counts it on the running thread and calls it. What sigaction reports
// back is the program's handler and flags, never the trampoline's. Faults
// (SIGSEGV, SIGBUS ...) are left alone: they reach a thread in its own
// code, never in a spin it could be told about, and sanitizers own them.
#include "interpose/signal_count.h"

#include <atomic>
#include <cerrno>
#include <new>
#include <utility>

#include "core/base/signal_depth.h"
#include "core/base/signals_held.h"
#include "interpose/own_calls.h"
#include "interpose/real.h"

namespace ss::interpose {
namespace {

using Handler = void (*)(int, siginfo_t*, void*);

struct Slot {
  std::atomic<Handler> handler{nullptr};  // the program's (null: none of its own)
  std::atomic<int> flags{0};              // the program's sa_flags
};
Slot g_slots[NSIG];

// Read and written by the trampoline: static TLS (a preload is loaded at
// start), so no allocation or lock in a handler.
[[gnu::tls_model("initial-exec")]] thread_local uint64_t t_ran = 0;
[[gnu::tls_model("initial-exec")]] thread_local int t_last = 0;
[[gnu::tls_model("initial-exec")]] thread_local int t_busy = 0;         // open BusyScopes
[[gnu::tls_model("initial-exec")]] thread_local bool t_fenced = false;  // in a handler over one
[[gnu::tls_model("initial-exec")]] thread_local int t_own_fence = 0;  // own calls under the handler

// The quiet sleep this thread is in (core/base/signal_depth.h), with the
// depths it began at: a handler that finds them unchanged interrupted the
// sleep itself, not a deeper call made meanwhile (a poll wrapper's own).
// Only a call made from outside the library marks it: one made inside
// another (sendfile's copies, a receive callback's call under the
// offload's locks or an epoll set's) sleeps under its caller's locks and
// scopes.
struct Quiet {
  int own_calls, busy;
  bool on;
};
[[gnu::tls_model("initial-exec")]] thread_local Quiet t_quiet{};

void quiet_enter() {
  if (t_own_calls + t_busy != 1) return;
  t_quiet.own_calls = t_own_calls;
  t_quiet.busy = t_busy;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_quiet.on = true;
  std::atomic_signal_fence(std::memory_order_seq_cst);
}
void quiet_leave() {
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_quiet.on = false;
  std::atomic_signal_fence(std::memory_order_seq_cst);
}

// Objects a handler over a BusyScope let go of (release_after_busy),
// dropped when the thread's outermost scope ends. Static TLS slots: a
// handler must not allocate (it may have interrupted malloc).
constexpr int kHeldSlots = 64;
using Obj = std::shared_ptr<void>;
struct HeldSlots {
  alignas(Obj) unsigned char slot[kHeldSlots][sizeof(Obj)];
  alignas(Obj) unsigned char sink[sizeof(Obj)];  // past the slots: never dropped
  int used;
};
[[gnu::tls_model("initial-exec")]] thread_local HeldSlots t_held{};

Obj& held_at(int i) { return *std::launder(reinterpret_cast<Obj*>(t_held.slot[i])); }

void release_held() {
  // Newest first, as a BusyScope (the destructors take the library's
  // locks); each taken out with signals held off (a handler lists on top).
  // The call that ends here has set errno already.
  const int saved = errno;
  t_busy++;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  while (t_held.used > 0) {
    Obj o;
    {
      const SignalsHeld held;
      o = std::move(held_at(t_held.used - 1));
      held_at(t_held.used - 1).~Obj();
      t_held.used--;
    }
  }
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_busy--;
  errno = saved;
}

void trampoline(int sig, siginfo_t* info, void* uc) {
  t_ran++;
  t_last = sig;
  // Over a quiet sleep the thread holds nothing of the library's: the
  // handler runs as on a thread outside it, and the sleep's depths come
  // back after it.
  const Quiet quiet = t_quiet;
  const int own_calls = t_own_calls, busy = t_busy;
  if (quiet.on && quiet.own_calls == own_calls && quiet.busy == busy) t_own_calls = t_busy = 0;
  t_quiet.on = false;  // the handler's own sleeps mark theirs
  const bool fenced = t_fenced;
  t_fenced = fenced || t_busy > 0;
  // The own-call depth the handler found: the interrupted call's.
  const int own_fence = t_own_fence;
  t_own_fence = t_own_calls;
  // A one-argument handler ignores the two more the ABI passes it.
  int& running = signal_handlers_running();
  running++;
  if (const Handler h = g_slots[sig].handler.load(std::memory_order_acquire)) h(sig, info, uc);
  running--;
  t_own_fence = own_fence;
  t_fenced = fenced;
  t_own_calls = own_calls;
  t_busy = busy;
  t_quiet = quiet;
}

bool wrapped(int sig) {
  switch (sig) {
    case SIGSEGV:
    case SIGBUS:
    case SIGFPE:
    case SIGILL:
    case SIGTRAP:
    case SIGSYS:
    case SIGKILL:
    case SIGSTOP:
      return false;
    default:
      return sig > 0 && sig < NSIG;
  }
}

Handler handler_of(const struct sigaction& a) {
  return reinterpret_cast<Handler>(a.sa_sigaction);  // the union's one pointer
}

bool is_handler(const struct sigaction& a) {
  return a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN;  // the same union
}

}  // namespace

uint64_t handlers_ran() { return t_ran; }

BusyScope::BusyScope() noexcept {
  t_busy++;
  std::atomic_signal_fence(std::memory_order_seq_cst);  // open before the work starts
}
BusyScope::~BusyScope() {
  std::atomic_signal_fence(std::memory_order_seq_cst);  // closed after it ends
  t_busy--;
  std::atomic_signal_fence(std::memory_order_seq_cst);  // a handler lists before or sees it closed
  if (t_busy == 0 && t_held.used > 0 && !t_fenced) release_held();
}
bool handler_over_busy() noexcept { return t_fenced; }

void release_after_busy(std::shared_ptr<void> object) {
  if (!t_fenced || object.use_count() == 0) return;  // dropped here (or nothing owned)
  const SignalsHeld held;                            // a nested handler lists after this one
  if (t_held.used == kHeldSlots) {
    // Full: kept for good rather than dropped here.
    new (t_held.sink) Obj(std::move(object));
    return;
  }
  new (t_held.slot[t_held.used]) Obj(std::move(object));
  t_held.used++;
}
bool in_handler() noexcept { return signal_handlers_running() > 0; }
bool handler_over_own_call() noexcept {
  return t_own_fence > 0 && t_own_calls == t_own_fence && signal_handlers_running() > 0;
}

bool spin_interrupted(uint64_t* seen, bool restartable) {
  if (t_ran == *seen) return false;
  *seen = t_ran;
  if (!restartable) return true;
  struct sigaction now {};
  return real().sigaction(t_last, nullptr, &now) != 0 || !(now.sa_flags & SA_RESTART);
}

int counted_sigaction(int sig, const struct sigaction* act, struct sigaction* old,
                      bool drop_restart) {
  if (!wrapped(sig)) return real().sigaction(sig, act, old);
  Slot& slot = g_slots[sig];
  const Handler before = slot.handler.load(std::memory_order_acquire);
  const int before_flags = slot.flags.load(std::memory_order_relaxed);
  struct sigaction mine;
  const struct sigaction* give = act;
  const bool handler = act && is_handler(*act);
  if (handler) {
    set_quiet_sleep_hooks(quiet_enter, quiet_leave);
    mine = *act;
    mine.sa_sigaction = trampoline;
    mine.sa_flags |= SA_SIGINFO;
    if (drop_restart) mine.sa_flags &= ~SA_RESTART;
    slot.flags.store(act->sa_flags, std::memory_order_relaxed);
    slot.handler.store(handler_of(*act), std::memory_order_release);  // before the kernel calls it
    give = &mine;
  }
  const int r = real().sigaction(sig, give, old);
  if (r < 0) {
    if (handler) {
      slot.handler.store(before, std::memory_order_release);
      slot.flags.store(before_flags, std::memory_order_relaxed);
    }
    return r;
  }
  if (act && !handler) slot.handler.store(nullptr, std::memory_order_release);
  if (old && handler_of(*old) == trampoline) {
    old->sa_sigaction = before;
    old->sa_flags = before_flags;
  }
  return r;
}

sighandler_t bsd_signal(int sig, sighandler_t h,
                        int (*sa)(int, const struct sigaction*, struct sigaction*)) {
  if (h == SIG_ERR || sig < 1 || sig >= NSIG) {
    errno = EINVAL;
    return SIG_ERR;
  }
  struct sigaction act {
  }, old{};
  act.sa_handler = h;
  sigemptyset(&act.sa_mask);
  sigaddset(&act.sa_mask, sig);
  act.sa_flags = SA_RESTART;
  if (sa(sig, &act, &old) < 0) return SIG_ERR;
  return old.sa_handler;
}

}  // namespace ss::interpose
