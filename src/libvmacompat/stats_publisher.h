// The publishing side of vma_stats (vma_stats(8)): the file
// DIR/vmastat.<pid>, mode 0600, created by create() and removed when the
// Publisher is destroyed (normal exit). The data path holds a SocketStats
// (or GroupStats) handle and bumps counters with plain relaxed stores: no
// lock, no syscall, one writer per counter (the thread that owns the
// socket's receive or send side). Opening and closing a block claims and
// frees it with one compare-and-swap on its state.
#pragma once
#include "core/base/api.h"

#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "libvmacompat/stats_layout.h"

namespace ss::vma::stats {

namespace detail {
inline void add(uint64_t& v, uint64_t n) {
  std::atomic_ref<uint64_t> a(v);
  a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}
inline void set(uint64_t& v, uint64_t n) {
  std::atomic_ref<uint64_t>(v).store(n, std::memory_order_relaxed);
}
inline void raise(uint64_t& v, uint64_t n) {
  std::atomic_ref<uint64_t> a(v);
  if (a.load(std::memory_order_relaxed) < n) a.store(n, std::memory_order_relaxed);
}
}  // namespace detail

// One socket's block; empty (every call a no-op) when none was free.
class SocketStats {
 public:
  SocketStats() = default;
  explicit operator bool() const { return b_ != nullptr; }
  void add(SocketCounter c, uint64_t n = 1) const {
    if (b_) detail::add(b_->c[c], n);
  }
  void set(SocketCounter c, uint64_t v) const {
    if (b_) detail::set(b_->c[c], v);
  }
  void raise(SocketCounter c, uint64_t v) const {
    if (b_) detail::raise(b_->c[c], v);
  }
  // The identity fields, each written under the block's sequence.
  SS_API void set_bound(const sockaddr* sa, socklen_t len) const;
  void set_connected(const sockaddr* sa, socklen_t len) const;
  void set_mc_tx_if(const sockaddr* sa, socklen_t len) const;
  SS_API void set_flags(bool offloaded, bool blocking, bool mc_loop) const;
  // A consistent copy of the block (its identity under one sequence); false
  // when there is none.
  SS_API bool snapshot(SocketBlock* out) const;

 private:
  friend class Publisher;
  explicit SocketStats(SocketBlock* b) : b_(b) {}
  SocketBlock* b_ = nullptr;
};

// One ring's, buffer pool's or multiplexer's block; empty when none was free.
class GroupStats {
 public:
  GroupStats() = default;
  explicit operator bool() const { return b_ != nullptr; }
  void add(uint32_t c, uint64_t n = 1) const {
    if (b_ && c < kGroupCounters) detail::add(b_->c[c], n);
  }
  void set(uint32_t c, uint64_t v) const {
    if (b_ && c < kGroupCounters) detail::set(b_->c[c], v);
  }

 private:
  friend class Publisher;
  explicit GroupStats(GroupBlock* b) : b_(b) {}
  GroupBlock* b_ = nullptr;
};

class Publisher {
 public:
  // DIR/vmastat.<pid> with `fd_blocks` socket blocks (at most
  // kMaxFdBlocks); `dir` "" keeps the blocks in private memory instead, as
  // libvma does. nullptr with errno set when the file cannot be made.
  static std::unique_ptr<Publisher> create(const std::string& dir, uint32_t fd_blocks);
  ~Publisher();  // remove_file(), then unmaps
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;

  const std::string& path() const { return path_; }  // "" when private or removed
  uint32_t fd_blocks() const { return header_->fd_blocks; }

  // Claims a free block for `fd` (type SOCK_DGRAM etc.); empty when all are taken.
  SS_API SocketStats open_socket(int fd, int socket_type, bool offloaded);
  SS_API void close_socket(SocketStats& s);
  SS_API GroupStats open_group(GroupKind kind, int id, const char* name);
  void close_group(GroupStats& g);

  // Marks the file closing and removes it, the mapping kept (at exit:
  // handles stay valid). Only in the process that made it; once.
  void remove_file();

  // The child of a fork keeps its handles but must not write into, nor
  // remove, its parent's file: the mapping becomes a private copy.
  void detach_after_fork();

 private:
  Publisher() = default;
  SocketBlock* socket_block(uint32_t i) const;
  Header* header_ = nullptr;
  size_t size_ = 0;
  std::string path_;
  int owner_pid_ = 0;
};

}  // namespace ss::vma::stats
