// The logger: formats into a stack buffer (no malloc, so it is safe inside a
// preload's allocation paths) and writes with the raw write syscall, so an
// LD_PRELOAD wrapper of write() is never re-entered. errno is preserved.
#include "core/base/log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "core/base/append_file.h"
#include "core/base/config_core.h"
#include "core/base/errno_guard.h"
#include "core/base/sandbox.h"

namespace ss::log {
namespace {

// kUnread until first read (-1 is a threshold: nothing printed). Read with
// config::env_int, never through the config cache: the cache logs its own
// warnings while holding its lock.
constexpr int kUnread = -100;
constinit std::atomic<int> g_threshold{kUnread};
constinit std::atomic<bool> g_fixed{false};  // set_threshold() was called

// One line, truncated beyond this; long enough for a path in a warning.
constexpr size_t kLineCap = 2048;

constinit AppendFile g_file;  // set_file()'s

int read_threshold() {
  if (g_fixed.load(std::memory_order_relaxed)) return g_threshold.load(std::memory_order_relaxed);
  const int t = static_cast<int>(config::core::table.env_int(config::core::Id::kLogLevel));
  g_threshold.store(t, std::memory_order_relaxed);
  return t;
}

const char* level_name(Level level) {
  static constexpr const char* kNames[] = {"PANIC",   "ERROR", "WARN", "INFO",
                                           "DETAILS", "DEBUG", "FINE"};
  const int i = static_cast<int>(level);
  return (i >= 0 && i < 7) ? kNames[i] : "LOG";
}

// fd 2 a socket: an inetd-style program's connection, or under the
// preload a kernel socket carrying an rsocket's frames. A line written
// there would corrupt the peer's stream, so it is dropped (there is no
// log file setting to send it to instead).
bool stderr_is_socket() {
  struct stat st;
  return fstat(STDERR_FILENO, &st) == 0 && S_ISSOCK(st.st_mode);
}

}  // namespace

bool enabled(Level level) {
  int t = g_threshold.load(std::memory_order_relaxed);
  if (t == kUnread) t = read_threshold();  // racing first readers compute the same value
  return static_cast<int>(level) <= t;
}

void write(Level level, const char* fmt, ...) {
  if (!enabled(level)) return;
  // Locked in (sandbox.h), a line could be what kills the program: sshd's
  // child sets RLIMIT_FSIZE 0 (a write to a file raises SIGXFSZ) and its
  // filter refuses fstat. Nothing is written then.
  if (sandbox::locked_in()) return;
  // Saved before formatting touches anything, so "%m" still sees the caller's errno.
  ErrnoGuard keep;
  char buf[kLineCap];
  int n = snprintf(buf, sizeof buf, "slipstream[%ld]: %s: ", static_cast<long>(getpid()),
                   level_name(level));
  if (n < 0) n = 0;
  va_list ap;
  va_start(ap, fmt);
  // Room is left for the newline; a longer message is cut.
  int m = vsnprintf(buf + n, sizeof buf - static_cast<size_t>(n) - 1, fmt, ap);
  va_end(ap);
  if (m < 0) m = 0;
  size_t len = static_cast<size_t>(n) + static_cast<size_t>(m);
  if (len > sizeof buf - 2) len = sizeof buf - 2;
  while (len > static_cast<size_t>(n) && buf[len - 1] == '\n') --len;  // one line only
  buf[len++] = '\n';
  if (g_file.append(buf, len)) return;
  if (!stderr_is_socket()) write_all(STDERR_FILENO, buf, len);  // nowhere else to report a failure
}

int set_file(const char* path) { return g_file.set(path); }

void reload() { read_threshold(); }

void set_threshold(int level) {
  g_threshold.store(level, std::memory_order_relaxed);
  g_fixed.store(true, std::memory_order_relaxed);
}

}  // namespace ss::log
