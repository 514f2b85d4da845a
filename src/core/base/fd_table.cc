#include "core/base/fd_table.h"

#include <pthread.h>
#include <urcu/urcu-bp.h>

#include <atomic>
#include <cerrno>
#include <new>
#include <utility>
#include <vector>

#include "core/base/signal_depth.h"
#include "core/base/signals_held.h"

// ThreadSanitizer cannot see RCU's ordering: a reader's last touch of a
// node happens before the writer's free after the grace period. Say so.
#if defined(__SANITIZE_THREAD__)
#define SS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SS_TSAN 1
#endif
#endif
#ifdef SS_TSAN
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#define SS_RCU_READER_DONE(n) __tsan_release(n)
#define SS_RCU_GRACE_PASSED(n) __tsan_acquire(n)
#else
#define SS_RCU_READER_DONE(n) ((void)(n))
#define SS_RCU_GRACE_PASSED(n) ((void)(n))
#endif

namespace ss {

namespace {
// One thread's earlier lookup: the node it found, valid while the
// table's generation is unchanged (every remove or replace moves it
// before its grace period, so the node outlives any reader that still
// sees the generation). No ownership: a lookup, even from a signal
// handler, never frees anything.
struct LastLookup {
  int fd = -1;
  uint64_t gen = UINT64_MAX;
  const void* node = nullptr;
};
// A few entries, by descriptor: a thread serving two sockets keeps both.
struct LookupCache {
  static constexpr int kEntries = 4;
  LastLookup entries[kEntries];
};
// A plain pointer in initial-exec TLS: no __tls_get_addr or TLS guard per
// lookup. The cache is freed by a key destructor when its thread exits.
thread_local LookupCache* t_cache __attribute__((tls_model("initial-exec"))) = nullptr;
pthread_key_t g_cache_key;

// Generations come from one counter for every table: a thread's cached
// entry (fd, generation) can only ever match the table it came from.
std::atomic<uint64_t> g_generation{0};
uint64_t next_generation() { return g_generation.fetch_add(1, std::memory_order_relaxed) + 1; }

// The first lookup of a thread makes its cache.
[[gnu::noinline]] LookupCache* new_thread_cache() {
  auto* c = new (std::nothrow) LookupCache();
  if (c && pthread_setspecific(g_cache_key, c) != 0) {
    delete c;
    c = nullptr;
  }
  t_cache = c;
  return c;
}

// fd's place in this thread's cache (null when the cache cannot be made).
// Inlined: it is on every call's path.
[[gnu::always_inline]] inline LastLookup* cached(int fd) {
  LookupCache* cache = t_cache;
  if (!cache) cache = new_thread_cache();
  return cache ? &cache->entries[static_cast<unsigned>(fd) % LookupCache::kEntries] : nullptr;
}

// A signal handler's lookup on a thread that is inside a lookup would
// read or write the very cache entry the interrupted one is writing (a
// weak_ptr half assigned: another descriptor's object under this one's
// number, a broken count). A lookup that finds this thread inside one
// reads the table only (CacheTurn::mine false).
[[gnu::tls_model("initial-exec")]] thread_local bool t_in_lookup = false;

// Nodes retired under RetireLater on this thread, freed when the
// outermost ends (allocated there: never inside a signal handler).
[[gnu::tls_model("initial-exec")]] thread_local int t_later_depth = 0;
thread_local std::vector<void*>* t_later = nullptr;

class CacheTurn {
 public:
  CacheTurn() : mine_(!t_in_lookup) {
    if (!mine_) return;
    t_in_lookup = true;
    std::atomic_signal_fence(std::memory_order_seq_cst);  // set before the cache is touched
  }
  ~CacheTurn() {
    if (!mine_) return;
    std::atomic_signal_fence(std::memory_order_seq_cst);  // cleared after it is done with
    t_in_lookup = false;
  }
  CacheTurn(const CacheTurn&) = delete;
  CacheTurn& operator=(const CacheTurn&) = delete;
  bool mine() const { return mine_; }

 private:
  const bool mine_;
};

void init_process_once() {
  pthread_key_create(&g_cache_key, [](void* c) {
    t_cache = nullptr;  // a later destructor of this thread may still look up
    delete static_cast<LookupCache*>(c);
  });
  // A child forked while another thread was inside a lookup would
  // otherwise wait for that (absent) reader forever in a remove.
  pthread_atfork(urcu_bp_before_fork, urcu_bp_after_fork_parent, urcu_bp_after_fork_child);
}
}  // namespace

FdTable::FdTable() {
  static std::once_flag once;
  std::call_once(once, init_process_once);
  gen_.store(next_generation(), std::memory_order_relaxed);
}

FdTable::~FdTable() {
  // No reader is left (the owner's promise): no grace period to wait.
  for (auto& c : chunks_) {
    Chunk* chunk = c.load(std::memory_order_relaxed);
    if (!chunk) continue;
    for (auto& s : chunk->slots) delete s.load(std::memory_order_relaxed);
    delete chunk;
  }
  for (Node* n = limbo_.load(std::memory_order_relaxed); n;) delete std::exchange(n, n->limbo_next);
}

namespace {
std::atomic<FdTable*> g_made{nullptr};
}  // namespace

FdTable* FdTable::if_made() { return g_made.load(std::memory_order_acquire); }

FdTable& FdTable::instance() {
  // Leaked on purpose: descriptors may be used from atexit handlers and
  // static destructors of the application.
  static FdTable* table = [] {
    auto* t = new FdTable();
    g_made.store(t, std::memory_order_release);
    // After urcu's handlers (the constructor's): in the child, ours runs
    // after urcu's and before those of the faces, which use the objects.
    pthread_atfork(nullptr, nullptr, [] { instance().fork_child(); });
    return t;
  }();
  return *table;
}

void FdTable::fork_child() {
  // One thread: no reader nor writer runs, and a parent thread that was
  // inserting or removing left write_mu_ held.
  new (&write_mu_) std::mutex();
  for (auto& c : chunks_) {
    Chunk* chunk = c.load(std::memory_order_relaxed);
    if (!chunk) continue;
    for (auto& s : chunk->slots)
      if (Node* n = s.load(std::memory_order_relaxed); n && n->pollable) n->pollable->fork_child();
  }
}

std::atomic<FdTable::Node*>* FdTable::slot(int fd) const {
  if (fd < 0 || fd >= kMaxFds) return nullptr;
  Chunk* c = chunks_[fd >> kChunkBits].load(std::memory_order_acquire);
  return c ? &c->slots[fd & (kChunkSize - 1)] : nullptr;
}

int FdTable::insert(int fd, FdKind kind, std::shared_ptr<void> object, Pollable* pollable) {
  return put(fd, kind, std::move(object), pollable, nullptr);
}

int FdTable::replace(int fd, FdKind from, const void* expected, FdKind to,
                     std::shared_ptr<void> object, Pollable* pollable) {
  const Expected e{from, expected};
  return put(fd, to, std::move(object), pollable, &e);
}

int FdTable::put(int fd, FdKind kind, std::shared_ptr<void> object, Pollable* pollable,
                 const Expected* expect) {
  if (fd < 0 || fd >= kMaxFds || kind == FdKind::kNone) return fd < 0 ? -EBADF : -ENOMEM;
  auto* node = new (std::nothrow) Node{kind, std::move(object), pollable};
  if (!node) return -ENOMEM;
  Node* old;
  {
    const SignalsHeld held;  // a handler never waits for write_mu_ on its own thread
    std::lock_guard<std::mutex> lock(write_mu_);
    if (expect) {  // writers hold write_mu_, so the slot cannot change under this look
      std::atomic<Node*>* s = slot(fd);
      Node* cur = s ? s->load(std::memory_order_relaxed) : nullptr;
      if (!cur || cur->kind != expect->kind || cur->object.get() != expect->object) {
        delete node;
        return -ESTALE;
      }
    }
    auto& chunk = chunks_[fd >> kChunkBits];
    if (!chunk.load(std::memory_order_relaxed)) {
      auto* c = new (std::nothrow) Chunk{};
      if (!c) {
        delete node;
        return -ENOMEM;
      }
      chunk.store(c, std::memory_order_release);
    }
    old = slot(fd)->exchange(node, std::memory_order_acq_rel);
    gen_.store(next_generation(), std::memory_order_release);
  }
  if (old) retire(old, nullptr);  // a descriptor the kernel reused without a remove
  return 0;
}

FdKind FdTable::kind(int fd) const {
  std::atomic<Node*>* s = slot(fd);
  if (!s) return FdKind::kNone;
  FdKind k = FdKind::kNone;
  urcu_bp_read_lock();
  if (Node* n = s->load(std::memory_order_acquire)) {
    k = n->kind;
    SS_RCU_READER_DONE(n);
  }
  urcu_bp_read_unlock();
  return k;
}

std::shared_ptr<void> FdTable::read_slot(int fd, FdKind* kind, Pollable** pollable) const {
  std::atomic<Node*>* s = slot(fd);
  if (!s) return nullptr;
  std::shared_ptr<void> out;
  urcu_bp_read_lock();
  if (Node* n = s->load(std::memory_order_acquire)) {
    *kind = n->kind;
    *pollable = n->pollable;
    out = n->object;
    SS_RCU_READER_DONE(n);
  }
  urcu_bp_read_unlock();
  return out;
}

std::vector<std::pair<int, std::shared_ptr<void>>> FdTable::objects_of(FdKind kind) const {
  std::vector<std::pair<int, std::shared_ptr<void>>> out;
  for (int c = 0; c < kMaxFds / kChunkSize; c++) {
    if (!chunks_[c].load(std::memory_order_acquire)) continue;
    for (int fd = c * kChunkSize; fd < (c + 1) * kChunkSize; fd++) {
      FdKind found = FdKind::kNone;
      Pollable* p = nullptr;
      std::shared_ptr<void> o = read_slot(fd, &found, &p);
      if (o && found == kind) out.emplace_back(fd, std::move(o));
    }
  }
  return out;
}

// get_object and get_pollable: fd's node from the thread's cache, else
// from the table (and cached), inside one RCU read. The generation is
// read inside it: a cached node whose generation still holds was not
// yet removed, so its grace period has not begun.
template <typename Use>
auto FdTable::with_node(int fd, Use use) const -> decltype(use(nullptr)) {
  const CacheTurn turn;
  LastLookup* last = turn.mine() ? cached(fd) : nullptr;
  urcu_bp_read_lock();
  const uint64_t gen = gen_.load(std::memory_order_acquire);
  const Node* n = nullptr;
  if (last && last->fd == fd && last->gen == gen) {
    n = static_cast<const Node*>(last->node);
  } else if (std::atomic<Node*>* s = slot(fd)) {
    n = s->load(std::memory_order_acquire);
    if (last && n) *last = {fd, gen, n};
  }
  auto out = use(n);
  if (n) SS_RCU_READER_DONE(const_cast<Node*>(n));
  urcu_bp_read_unlock();
  return out;
}

std::shared_ptr<void> FdTable::get_object(int fd, FdKind kind) const {
  return with_node(fd, [kind](const Node* n) {
    return n && n->kind == kind ? n->object : std::shared_ptr<void>();
  });
}

std::shared_ptr<Pollable> FdTable::get_pollable(int fd) const {
  return with_node(fd, [](const Node* n) {
    // Shares the entry's ownership.
    return n && n->pollable ? std::shared_ptr<Pollable>(n->object, n->pollable)
                            : std::shared_ptr<Pollable>();
  });
}

int FdTable::remove_object(int fd, FdKind kind, std::shared_ptr<void>* object) {
  Node* n;
  {
    const SignalsHeld held;
    std::lock_guard<std::mutex> lock(write_mu_);
    std::atomic<Node*>* s = slot(fd);
    n = s ? s->load(std::memory_order_relaxed) : nullptr;
    if (!n || n->kind != kind) return -EBADF;
    s->store(nullptr, std::memory_order_release);
    gen_.store(next_generation(), std::memory_order_release);
  }
  retire(n, object);
  return 0;
}

FdTable::RetireLater::RetireLater() { t_later_depth++; }

FdTable::RetireLater::~RetireLater() {
  if (--t_later_depth > 0 || !t_later || t_later->empty()) return;
  std::vector<void*> nodes;
  nodes.swap(*t_later);
  urcu_bp_synchronize_rcu();
  for (void* p : nodes) {
    SS_RCU_GRACE_PASSED(p);
    delete static_cast<Node*>(p);
  }
}

void FdTable::push_limbo(Node* n) {
  n->limbo_next = limbo_.load(std::memory_order_relaxed);
  while (!limbo_.compare_exchange_weak(n->limbo_next, n, std::memory_order_release,
                                       std::memory_order_relaxed)) {
  }
}

void FdTable::retire(Node* n, std::shared_ptr<void>* object) {
  // Other readers may still copy the object: a caller that frees the node
  // later gets a copy.
  if (signal_handlers_running() > 0 || urcu_bp_read_ongoing()) {
    // A signal handler (over a read of this thread's, maybe) waits for no
    // grace period, nor allocates: the node waits in limbo_.
    if (object) *object = n->object;
    push_limbo(n);
    return;
  }
  if (t_later_depth > 0) {
    try {
      if (!t_later) t_later = new std::vector<void*>;
      t_later->push_back(n);
      if (object) *object = n->object;
      return;
    } catch (const std::bad_alloc&) {
      // Waited for here, then.
    }
  }
  // Retired before this grace period begins: free after it too. Their
  // objects go with the caller's (it frees them where it may take locks),
  // so only a caller that takes the object takes them.
  Node* limbo = object ? limbo_.exchange(nullptr, std::memory_order_acquire) : nullptr;
  std::shared_ptr<std::vector<std::shared_ptr<void>>> all;
  if (limbo) {
    size_t count = 1;
    for (Node* l = limbo; l; l = l->limbo_next) count++;
    try {
      all = std::make_shared<std::vector<std::shared_ptr<void>>>();
      all->reserve(count);
    } catch (const std::bad_alloc&) {
      // Left for the next remove that takes an object.
      for (Node* l = limbo; l;) push_limbo(std::exchange(l, l->limbo_next));
      limbo = nullptr;
    }
  }
  // Lookups that loaded the node before it left are done with it after this.
  urcu_bp_synchronize_rcu();
  SS_RCU_GRACE_PASSED(n);
  if (object) *object = std::move(n->object);
  delete n;
  if (!limbo) return;
  for (Node* l = limbo; l;) {
    SS_RCU_GRACE_PASSED(l);
    all->push_back(std::move(l->object));
    delete std::exchange(l, l->limbo_next);
  }
  all->push_back(*object);
  *object = std::shared_ptr<void>(all, object->get());  // owns them all, names the caller's
}

}  // namespace ss
