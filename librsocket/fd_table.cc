#include "librsocket/fd_table.h"

#include <cerrno>
#include <mutex>

namespace ss::rs {

FdTable& FdTable::instance() {
  // Leaked on purpose: rsockets may be used from atexit handlers and
  // static destructors of the application.
  static FdTable* table = new FdTable();
  return *table;
}

int FdTable::insert(int fd, std::shared_ptr<Socket> s) {
  if (fd < 0 || fd >= kMaxFds) return -ENOMEM;
  std::unique_lock<std::shared_mutex> lock(mu_);
  if (static_cast<size_t>(fd) >= sockets_.size()) sockets_.resize(fd + 64);
  sockets_[fd] = std::move(s);
  return 0;
}

std::shared_ptr<Socket> FdTable::get(int fd) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  if (fd < 0 || static_cast<size_t>(fd) >= sockets_.size()) return nullptr;
  return sockets_[fd];
}

std::shared_ptr<Socket> FdTable::remove(int fd) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  if (fd < 0 || static_cast<size_t>(fd) >= sockets_.size()) return nullptr;
  return std::move(sockets_[fd]);
}

}  // namespace ss::rs
