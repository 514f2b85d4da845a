#include "librsocket/fork.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <new>
#include <vector>

#include "core/base/fd_table.h"
#include "core/base/log.h"
#include "librsocket/keepalive_service.h"
#include "librsocket/listen_service.h"

namespace ss::rs::fork {

std::atomic<bool> g_child_unresumed{false};

namespace {

// Objects listed for the fork handlers, by address (to unlist) and by
// weak reference (taken before use: a thread may free one meanwhile).
template <class T>
struct Listed {
  T* c;
  std::weak_ptr<T> ref;
};

template <class T>
void list(std::vector<Listed<T>>* v, std::weak_ptr<T> ref) {
  T* raw = ref.lock().get();
  v->push_back({raw, std::move(ref)});
}

template <class T>
void unlist(std::vector<Listed<T>>* v, T* c) {
  auto it = std::find_if(v->begin(), v->end(), [c](const Listed<T>& t) { return t.c == c; });
  if (it == v->end()) return;
  *it = v->back();
  v->pop_back();
}

struct Registry {
  std::shared_mutex table_mu;  // TableGuard: shared; fork: exclusive
  std::mutex mu;               // shares
  std::vector<ProcessShare*> shares;
  std::vector<Listed<Unforkable>> unforkable;  // also under mu
  std::vector<Listed<DeferredClose>> closing;  // also under mu
  std::mutex resume_mu;                        // resume_services_slow, one caller at a time
  int saved_errno = 0;
};

// fork() reports failure only through errno: cleared before it, it is
// non-zero in the parent handler when fork failed (glibc runs the parent
// handlers with the fork's errno). Nothing between our two handlers sets
// errno otherwise: the other handlers only lock and unlock.
void before_fork();
void parent_after_fork();
void child_after_fork();

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry();  // leaked: handlers may run at any time
    // Registered after the fd table's handlers (urcu's), so ours run before
    // theirs at fork: an rclose holding a TableGuard may be waiting for an
    // RCU grace period, which urcu's handler would stop until after fork.
    // And after the listen service's, whatever the program called first:
    // ours take the table before its take a listener's locks, which an
    // rclose holding a TableGuard may be waiting for (defer_close); the
    // other order let the two wait for each other.
    FdTable::instance();
    ListenService::instance();
    pthread_atfork(before_fork, parent_after_fork, child_after_fork);
    return reg;
  }();
  return *r;
}

void before_fork() {
  Registry& r = registry();
  r.table_mu.lock();
  r.mu.lock();
  for (ProcessShare* s : r.shares)
    if (s->is_open()) {
      s->add_holder();
      s->forked();
    }
  r.saved_errno = errno;
  errno = 0;
}

void parent_after_fork() {
  Registry& r = registry();
  if (errno != 0) {  // no child: nobody took the holds
    for (ProcessShare* s : r.shares)
      if (s->is_open()) s->remove_holder();
  } else {
    errno = r.saved_errno;
  }
  r.mu.unlock();
  r.table_mu.unlock();  // the thread that locked it in before_fork
}

void child_after_fork() {
  Registry& r = registry();
  errno = r.saved_errno;
  // Closes that came before the fork, left to a thread the child lacks.
  for (const auto& d : r.closing)
    if (auto c = d.ref.lock()) c->close_in_fork_child();
  r.closing.clear();
  r.mu.unlock();
  // A rwlock write-held by the forking thread cannot be unlocked here
  // (glibc checks the writer's thread id, a new one in the child): a fresh
  // one replaces it, nobody else being in this process.
  new (&r.table_mu) std::shared_mutex();
  new (&r.resume_mu) std::mutex();  // a parent thread may have held it
  g_child_unresumed.store(true, std::memory_order_relaxed);
}

}  // namespace

TableGuard::TableGuard() : lk_(registry().table_mu) {}

int join(ProcessShare* share) {
  Registry& r = registry();
  std::lock_guard<std::mutex> g(r.mu);
  if (share->is_open()) return 0;  // joined already: listed once, so leave unlists it
  if (int rc = share->open()) {
    SS_DEBUG("rsocket: no process share (%d): this connection closes as if never forked", rc);
    return rc;
  }
  r.shares.push_back(share);
  return 0;
}

bool leave(ProcessShare* share) {
  if (!share->is_open()) return true;
  Registry& r = registry();
  std::lock_guard<std::mutex> g(r.mu);
  auto it = std::find(r.shares.begin(), r.shares.end(), share);
  if (it != r.shares.end()) {
    *it = r.shares.back();
    r.shares.pop_back();
  }
  return share->drop();
}

void track(std::weak_ptr<Unforkable> c) {
  Registry& r = registry();
  std::lock_guard<std::mutex> g(r.mu);
  list(&r.unforkable, std::move(c));
}

void untrack(Unforkable* c) {
  Registry& r = registry();
  std::lock_guard<std::mutex> g(r.mu);
  unlist(&r.unforkable, c);
}

void defer_close(std::weak_ptr<DeferredClose> c) {
  Registry& r = registry();
  std::lock_guard<std::mutex> g(r.mu);
  list(&r.closing, std::move(c));
}

void end_deferred_close(DeferredClose* c) {
  Registry& r = registry();
  std::lock_guard<std::mutex> g(r.mu);
  unlist(&r.closing, c);
}

void resume_services_slow() {
  Registry& r = registry();
  std::lock_guard<std::mutex> resuming(r.resume_mu);
  if (!g_child_unresumed.load(std::memory_order_relaxed)) return;  // done meanwhile
  // Each held while it is cut loose: a thread of the child may rclose one
  // meanwhile (rclose waits here first, but other ways out of the fd
  // table, librspreload's release, do not).
  std::vector<std::shared_ptr<Unforkable>> inherited;
  {
    std::lock_guard<std::mutex> g(r.mu);
    for (const Listed<Unforkable>& t : r.unforkable)
      if (auto c = t.ref.lock()) inherited.push_back(std::move(c));
    r.unforkable.clear();
  }
  size_t left = 0;
  for (const auto& c : inherited) left += c->leave_to_maker();
  if (left)
    SS_WARN(
        "rsocket: fork child %d: %zu inherited verbs connection(s) stay with the process "
        "that made them; here they fail with EOPNOTSUPP (rsocket(7), Fork)",
        static_cast<int>(getpid()), left);
  g_child_unresumed.store(false, std::memory_order_relaxed);
  KeepaliveService::instance().resume();
}

}  // namespace ss::rs::fork
