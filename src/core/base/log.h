// Logging with levels (VMA_TRACELEVEL numbering), written with the raw
// write(2) syscall so a preload never recurses into itself, and errno is
// preserved across every call.
#pragma once
#include <atomic>

#include "core/base/api.h"

namespace ss::log {

enum class Level : int {
  kPanic = 0,
  kError = 1,
  kWarn = 2,
  kInfo = 3,
  kDetails = 4,
  kDebug = 5,
  kFine = 6,
};

// True when messages at `level` are printed (threshold from SLIPSTREAM_LOG_LEVEL).
SS_API bool enabled(Level level);
// Formats and writes one line "slipstream[pid] LEVEL: message\n" to stderr.
SS_API void write(Level level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// Re-reads the threshold (tests).
void reload();
// Replaces the threshold for the rest of the process (a face whose own
// setting names it: the VMA preload's VMA_TRACELEVEL; -1 prints nothing).
SS_API void set_threshold(int level);
// Lines go to the file at `path` (appended, made 0644 if missing) instead
// of stderr, for the rest of the process (the VMA preload's VMA_LOG_FILE).
// The file is opened for each line, never held: a program that closes
// descriptors it did not open cannot turn the log into writes to one of
// its own. A relative path is taken from the current directory now.
// -ENAMETOOLONG, or -errno when the file cannot be opened now (stderr
// stays).
SS_API int set_file(const char* path);

}  // namespace ss::log

#define SS_LOG(level, ...)                                               \
  do {                                                                   \
    if (::ss::log::enabled(level)) ::ss::log::write(level, __VA_ARGS__); \
  } while (0)
#define SS_ERROR(...) SS_LOG(::ss::log::Level::kError, __VA_ARGS__)
#define SS_WARN(...) SS_LOG(::ss::log::Level::kWarn, __VA_ARGS__)
#define SS_INFO(...) SS_LOG(::ss::log::Level::kInfo, __VA_ARGS__)
#define SS_DEBUG(...) SS_LOG(::ss::log::Level::kDebug, __VA_ARGS__)
// A warning said once per call site (per template instance) and process:
// a misuse the program may repeat in a loop.
#define SS_WARN_ONCE(...)                                                              \
  do {                                                                                 \
    static std::atomic<bool> ss_said_once{false};                                      \
    if (!ss_said_once.exchange(true, std::memory_order_relaxed)) SS_WARN(__VA_ARGS__); \
  } while (0)
