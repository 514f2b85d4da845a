// A file that lines or reports are appended to for the rest of the
// process (the VMA preload's VMA_LOG_FILE and VMA_STATS_FILE). It is
// opened for each write and never held, by the raw system calls: a
// program that closes descriptors it did not open cannot turn our writes
// into writes to one of its own, and a preload's wrappers of open, write
// and close are never re-entered. errno is preserved.
#pragma once

#include <atomic>
#include <cstddef>

#include "core/base/api.h"

namespace ss {

// All of `data` to `fd` by the raw write syscall (EINTR retried); false
// when the descriptor refused some of it. The logger's stderr lines too.
bool write_all(int fd, const char* data, size_t len) noexcept;

class AppendFile {
 public:
  constexpr AppendFile() = default;
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;

  // Names the file (a relative path taken from the current directory now),
  // made 0644 if missing. Once per object. 0, -EINVAL for an empty path,
  // -ENAMETOOLONG, or -errno when it cannot be opened now (left unset).
  SS_API int set(const char* path) noexcept;
  bool is_set() const { return set_.load(std::memory_order_acquire); }
  // Writes all of `data` at the file's end (O_APPEND: what one write(2)
  // takes stays whole beside other writers'); false when unset or the file
  // cannot be opened or written now.
  SS_API bool append(const char* data, size_t len) const noexcept;

 private:
  char path_[4096] = {};  // written once before set_, read after
  std::atomic<bool> set_{false};
};

}  // namespace ss
