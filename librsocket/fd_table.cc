#include "librsocket/fd_table.h"

#include <pthread.h>
#include <urcu/urcu-bp.h>

#include <cerrno>

namespace ss::rs {

FdTable::FdTable() {
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
  }
  if (old) {  // a descriptor the kernel reused without rclose: drop the stale entry
    urcu_bp_synchronize_rcu();
    delete old;
  }
  return 0;
}

std::shared_ptr<Socket> FdTable::get(int fd) const {
  std::atomic<Node*>* s = slot(fd);
  if (!s) return nullptr;
  std::shared_ptr<Socket> out;
  urcu_bp_read_lock();
  if (Node* n = s->load(std::memory_order_acquire)) out = n->socket;
  urcu_bp_read_unlock();
  return out;
}

std::shared_ptr<Socket> FdTable::remove(int fd) {
  Node* n;
  {
    std::lock_guard<std::mutex> lock(write_mu_);
    std::atomic<Node*>* s = slot(fd);
    if (!s) return nullptr;
    n = s->exchange(nullptr, std::memory_order_acq_rel);
  }
  if (!n) return nullptr;
  // Lookups that loaded the node before it left are done with it after this.
  urcu_bp_synchronize_rcu();
  std::shared_ptr<Socket> out = std::move(n->socket);
  delete n;
  return out;
}

}  // namespace ss::rs
