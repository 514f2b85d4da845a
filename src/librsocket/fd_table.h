// Descriptor -> rsocket map. Lookups take no lock: slots are atomic
// pointers read inside an RCU read-side section (liburcu-bp), just long
// enough to copy the shared reference; rclose waits out a grace period
// before dropping the table's reference, so a concurrent lookup never
// touches a freed slot and a call in progress keeps its socket alive.
// Each thread remembers its last few lookups (weak references and the
// table's generation, which every insert and remove bumps): a thread
// calling on the same sockets repeatedly skips the table.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>

namespace ss::rs {

class Socket;

class FdTable {
 public:
  static FdTable& instance();
  // -ENOMEM when the descriptor is beyond what the table tracks.
  int insert(int fd, std::shared_ptr<Socket> s);
  std::shared_ptr<Socket> get(int fd) const;
  std::shared_ptr<Socket> remove(int fd);

 private:
  // Two levels, allocated on first use and never freed (the table lives
  // as long as the process): no reader ever sees a chunk go away.
  static constexpr int kChunkBits = 10;
  static constexpr int kChunkSize = 1 << kChunkBits;
  static constexpr int kMaxFds = 1 << 20;
  struct Node {
    std::shared_ptr<Socket> socket;
  };
  struct Chunk {
    std::atomic<Node*> slots[kChunkSize];
  };
  FdTable();
  std::atomic<Node*>* slot(int fd) const;

  std::mutex write_mu_;  // insert/remove
  std::atomic<uint64_t> gen_{0};
  std::atomic<Chunk*> chunks_[kMaxFds / kChunkSize] = {};
};

}  // namespace ss::rs
