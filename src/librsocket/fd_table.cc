#include "librsocket/fd_table.h"

#include <pthread.h>
#include <urcu/urcu-bp.h>

#include <cerrno>
#include <cstdint>

namespace ss::rs {

namespace {
struct LastLookup {  // one thread's earlier lookup
  int fd = -1;
  uint64_t gen = UINT64_MAX;
  std::weak_ptr<Socket> socket;  // weak: a cached entry never keeps a closed socket alive
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

LookupCache* thread_cache() {
  if (LookupCache* c = t_cache) return c;
  auto* c = new (std::nothrow) LookupCache();
  if (c && pthread_setspecific(g_cache_key, c) != 0) {
    delete c;
    c = nullptr;
  }
  t_cache = c;
  return c;
}
}  // namespace

FdTable::FdTable() {
  pthread_key_create(&g_cache_key, [](void* c) {
    t_cache = nullptr;  // a later destructor of this thread may still look up
    delete static_cast<LookupCache*>(c);
  });
  // A child forked while another thread was inside a lookup would
  // otherwise wait for that (absent) reader forever in rclose.
  pthread_atfork(urcu_bp_before_fork, urcu_bp_after_fork_parent, urcu_bp_after_fork_child);
}

FdTable& FdTable::instance() {
  // Leaked on purpose: rsockets may be used from atexit handlers and
  // static destructors of the application.
  static FdTable* table = new FdTable();
  return *table;
}

std::atomic<FdTable::Node*>* FdTable::slot(int fd) const {
  if (fd < 0 || fd >= kMaxFds) return nullptr;
  Chunk* c = chunks_[fd >> kChunkBits].load(std::memory_order_acquire);
  return c ? &c->slots[fd & (kChunkSize - 1)] : nullptr;
}

int FdTable::insert(int fd, std::shared_ptr<Socket> s) {
  if (fd < 0 || fd >= kMaxFds) return -ENOMEM;
  auto* node = new (std::nothrow) Node{std::move(s)};
  if (!node) return -ENOMEM;
  Node* old;
  {
    std::lock_guard<std::mutex> lock(write_mu_);
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
    gen_.fetch_add(1, std::memory_order_release);
  }
  if (old) {  // a descriptor the kernel reused without rclose: drop the stale entry
    urcu_bp_synchronize_rcu();
    delete old;
  }
  return 0;
}

std::shared_ptr<Socket> FdTable::get(int fd) const {
  // The generation is read before the slot: an entry cached from a slot
  // that changed meanwhile carries a stale generation and is never used.
  const uint64_t gen = gen_.load(std::memory_order_acquire);
  LookupCache* cache = thread_cache();
  LastLookup* last =
      cache ? &cache->entries[static_cast<unsigned>(fd) % LookupCache::kEntries] : nullptr;
  if (last && last->fd == fd && last->gen == gen)
    if (auto s = last->socket.lock()) return s;
  std::atomic<Node*>* s = slot(fd);
  if (!s) return nullptr;
  std::shared_ptr<Socket> out;
  urcu_bp_read_lock();
  if (Node* n = s->load(std::memory_order_acquire)) out = n->socket;
  urcu_bp_read_unlock();
  if (out && last) *last = {fd, gen, out};
  return out;
}

std::shared_ptr<Socket> FdTable::remove(int fd) {
  Node* n;
  {
    std::lock_guard<std::mutex> lock(write_mu_);
    std::atomic<Node*>* s = slot(fd);
    if (!s) return nullptr;
    n = s->exchange(nullptr, std::memory_order_acq_rel);
    gen_.fetch_add(1, std::memory_order_release);
  }
  if (!n) return nullptr;
  // Lookups that loaded the node before it left are done with it after this.
  urcu_bp_synchronize_rcu();
  std::shared_ptr<Socket> out = std::move(n->socket);
  delete n;
  return out;
}

}  // namespace ss::rs
