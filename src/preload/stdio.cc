// stdio over a connection: glibc's FILE reads, writes and closes its
// descriptor with internal calls that never reach the preload's names,
// so a FILE made by fdopen on an rsocket would read the kernel socket
// behind it (shm's carries frames). Such a FILE is made with
// fopencookie instead, its reads, writes and close going through the
// preload. Its fileno() is -1 (a cookie stream has no descriptor).
// stdin, stdout and stderr on a connection carried across exec (inetd's
// pattern: git daemon's upload-pack prints its answers) become such
// streams too, keeping their numbers for fileno(), and so do C++'s
// standard streams, which libstdc++ made over glibc's own FILEs.
#include <ext/stdio_sync_filebuf.h>

#include <cstdio>
#include <iostream>

#include "core/base/log.h"
#include "interpose/export.h"
#include "interpose/real.h"
#include "preload/route.h"

extern "C" ssize_t read(int, void*, size_t);
extern "C" ssize_t write(int, const void*, size_t);

namespace ss::preload {

namespace {

int fd_of(void* cookie) { return static_cast<int>(reinterpret_cast<intptr_t>(cookie)); }

ssize_t cookie_read(void* c, char* buf, size_t n) { return read(fd_of(c), buf, n); }

// fopencookie's rule: bytes written, or 0 on an error (never negative).
ssize_t cookie_write(void* c, const char* buf, size_t n) {
  ssize_t w = write(fd_of(c), buf, n);
  return w < 0 ? 0 : w;
}

int cookie_close(void* c) { return close_fd(fd_of(c)); }

FILE* cookie_stream(int fd, const char* mode) {
  cookie_io_functions_t io{cookie_read, cookie_write, nullptr, cookie_close};
  return fopencookie(reinterpret_cast<void*>(static_cast<intptr_t>(fd)), mode, io);
}

// std::cin (0), std::cout (1), std::cerr and std::clog (2), narrow and
// wide, over `f` as libstdc++'s own are over stdin, stdout and stderr
// (synced with stdio). The buffers live as long as the streams.
void cxx_streams_over(int fd, FILE* f) {
  static std::ios_base::Init streams_made;  // cin, cout, ... exist from here on
  using Narrow = __gnu_cxx::stdio_sync_filebuf<char>;
  using Wide = __gnu_cxx::stdio_sync_filebuf<wchar_t>;
  if (fd == 0) {
    std::cin.rdbuf(new Narrow(f));
    std::wcin.rdbuf(new Wide(f));
  } else if (fd == 1) {
    std::cout.rdbuf(new Narrow(f));
    std::wcout.rdbuf(new Wide(f));
  } else {
    std::cerr.rdbuf(new Narrow(f));
    std::clog.rdbuf(new Narrow(f));
    std::wcerr.rdbuf(new Wide(f));
    std::wclog.rdbuf(new Wide(f));
  }
}

}  // namespace

void standard_streams_over_connections() {
  struct Std {
    FILE** stream;
    int fd;
    const char* mode;
    int buffering;
  };
  for (const Std& s :
       {Std{&stdin, 0, "r", _IOFBF}, Std{&stdout, 1, "w", _IOFBF}, Std{&stderr, 2, "w", _IONBF}}) {
    if (route(s.fd) != Route::kRsocket) continue;
    FILE* f = cookie_stream(s.fd, s.mode);
    if (!f) continue;
    f->_fileno = s.fd;  // fileno() as before; the cookie, not the number, moves the bytes
    setvbuf(f, nullptr, s.buffering, 0);
    *s.stream = f;
    cxx_streams_over(s.fd, f);
    SS_DEBUG("librspreload: standard stream of fd %d over the connection", s.fd);
  }
}

}  // namespace ss::preload

using namespace ss::preload;

SS_PRELOAD_EXPORT FILE* fdopen(int fd, const char* mode) noexcept {
  if (route(fd) != Route::kRsocket) return ss::interpose::real().fdopen(fd, mode);
  FILE* f = cookie_stream(fd, mode);
  if (f) SS_DEBUG("librspreload: fdopen of rsocket fd %d: a cookie stream", fd);
  return f;
}
