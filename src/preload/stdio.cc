// stdio over a connection: glibc's FILE reads, writes and closes its
// descriptor with internal calls that never reach the preload's names,
// so a FILE made by fdopen on an rsocket would read the kernel socket
// behind it (shm's carries frames). Such a FILE is made with
// fopencookie instead, its reads, writes and close going through the
// preload. Its fileno() is -1 (a cookie stream has no descriptor).
#include <cstdio>

#include "core/base/log.h"
#include "interpose/export.h"
#include "interpose/real.h"
#include "preload/route.h"

extern "C" ssize_t read(int, void*, size_t);
extern "C" ssize_t write(int, const void*, size_t);

namespace ss::preload {

int close_fd(int fd);

namespace {

int fd_of(void* cookie) { return static_cast<int>(reinterpret_cast<intptr_t>(cookie)); }

ssize_t cookie_read(void* c, char* buf, size_t n) { return read(fd_of(c), buf, n); }

// fopencookie's rule: bytes written, or 0 on an error (never negative).
ssize_t cookie_write(void* c, const char* buf, size_t n) {
  ssize_t w = write(fd_of(c), buf, n);
  return w < 0 ? 0 : w;
}

int cookie_close(void* c) { return close_fd(fd_of(c)); }

}  // namespace
}  // namespace ss::preload

using namespace ss::preload;

SS_PRELOAD_EXPORT FILE* fdopen(int fd, const char* mode) noexcept {
  if (route(fd) != Route::kRsocket) return ss::interpose::real().fdopen(fd, mode);
  cookie_io_functions_t io{cookie_read, cookie_write, nullptr, cookie_close};
  FILE* f = fopencookie(reinterpret_cast<void*>(static_cast<intptr_t>(fd)), mode, io);
  if (f) SS_DEBUG("librspreload: fdopen of rsocket fd %d: a cookie stream", fd);
  return f;
}
