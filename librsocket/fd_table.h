// Descriptor -> rsocket map. Lookups hand out shared references so a
// concurrent rclose can never free a socket another call is using.
#pragma once
#include <memory>
#include <shared_mutex>
#include <vector>

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
  static constexpr int kMaxFds = 1 << 20;
  mutable std::shared_mutex mu_;
  std::vector<std::shared_ptr<Socket>> sockets_;
};

}  // namespace ss::rs
