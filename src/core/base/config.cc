// The cache of current values: loaded once on first use (double-checked
// under one mutex), re-read by reload(). Integers are atomics so get_int()
// takes no lock once loaded; strings and origins are read under the lock.
//
// Recursion: a bad value is reported through the logger while the lock is
// held. The logger reads its own threshold with env_int(), which touches
// neither the cache nor the lock, so that can never wait on itself.
#include "core/base/config.h"

#include <limits.h>
#include <stdlib.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "core/base/config_parse.h"
#include "core/base/errno_guard.h"
#include "core/base/log.h"

namespace ss::config {
namespace {

constexpr int kCount = static_cast<int>(Id::kCount);
// A conf dir leaves room for "/<file name>" within PATH_MAX.
constexpr size_t kStrCap = PATH_MAX - 64;
constexpr size_t kOriginCap = PATH_MAX + 16;
// An rsocket file holds one integer; anything longer is not one.
constexpr size_t kFileCap = 256;
// How much of a rejected value the warning shows.
constexpr size_t kShowCap = 64;

struct Slot {
  char str[kStrCap];        // kString value
  char origin[kOriginCap];  // "default", "env NAME" or a file path
};

// Static storage with constant initialisation: usable from other libraries'
// constructors and never destroyed under a late caller.
constinit std::mutex g_mu;
constinit std::atomic<bool> g_loaded{false};
constinit std::atomic<int64_t> g_int[kCount];
constinit std::atomic<int> g_src[kCount];
constinit Slot g_slot[kCount]{};  // guarded by g_mu

// Setuid programs ignore the environment: it must not point them at files.
const char* env_value(const Setting& s) { return s.env ? secure_getenv(s.env) : nullptr; }

// The default as the warning prints it.
void default_text(const Setting& s, char* out, size_t cap) {
  switch (s.type) {
    case Type::kInt: snprintf(out, cap, "%" PRId64, s.def); return;
    case Type::kEnum:
      if (!choice_at(s.str_def, s.def, out, cap)) snprintf(out, cap, "%" PRId64, s.def);
      return;
    case Type::kString: snprintf(out, cap, "\"%s\"", s.str_def ? s.str_def : ""); return;
  }
}

// What the row accepts, e.g. "0..6 or panic|error|...".
void expected_text(const Setting& s, char* out, size_t cap) {
  switch (s.type) {
    case Type::kInt:
      if (s.str_def)
        snprintf(out, cap, "%" PRId64 "..%" PRId64 " or %s", s.min, s.max, s.str_def);
      else
        snprintf(out, cap, "%" PRId64 "..%" PRId64, s.min, s.max);
      return;
    case Type::kEnum: snprintf(out, cap, "one of %s", s.str_def); return;
    case Type::kString: snprintf(out, cap, "a non-empty path under %zu bytes", kStrCap); return;
  }
}

// A rejected value made safe for one log line: trimmed, control characters
// and quotes replaced, cut with "..." when longer than the room (cap >= 4).
void shown_text(const char* text, size_t len, char* out, size_t cap) {
  trim(&text, &len);
  const size_t room = cap - 4;
  size_t n = 0;
  for (; n < len && n < room; ++n) {
    const unsigned char c = static_cast<unsigned char>(text[n]);
    out[n] = (c < 0x20 || c == 0x7f || c == '"') ? '?' : static_cast<char>(c);
  }
  if (n < len) memcpy(out + n, "...", 3), n += 3;
  out[n] = '\0';
}

void set_default(const Setting& s, Slot& slot) {
  const int i = static_cast<int>(s.id);
  g_int[i].store(s.type == Type::kString ? 0 : s.def, std::memory_order_relaxed);
  g_src[i].store(static_cast<int>(Source::kDefault), std::memory_order_relaxed);
  if (s.type == Type::kString) snprintf(slot.str, sizeof slot.str, "%s", s.str_def);
  snprintf(slot.origin, sizeof slot.origin, "default");
}

// Resolves one row: env, else its file under `dir`, else the default.
void load_one(const Setting& s, const char* dir) {
  const int i = static_cast<int>(s.id);
  Slot& slot = g_slot[i];
  char file[kFileCap];
  const char* text = env_value(s);
  size_t len = 0;
  bool too_big = false;  // a file larger than kFileCap: shown by its start
  Source src = Source::kEnv;
  if (text) {
    len = strlen(text);
    snprintf(slot.origin, sizeof slot.origin, "env %s", s.env);
  } else if (s.file && dir) {
    src = Source::kFile;
    snprintf(slot.origin, sizeof slot.origin, "%s/%s", dir, s.file);
    const long n = read_small_file(slot.origin, file, sizeof file);
    if (n == -ENOENT || n == -ENOTDIR) return set_default(s, slot);  // absent: quietly
    if (n < 0 && n != -EFBIG) {
      char def[kShowCap], err[128];
      default_text(s, def, sizeof def);
      const char* msg = strerror_r(static_cast<int>(-n), err, sizeof err);
      SS_WARN("%s: cannot read %s (%s); using default %s", s.name, slot.origin, msg, def);
      return set_default(s, slot);
    }
    text = file;
    len = n < 0 ? sizeof file - 1 : static_cast<size_t>(n);
    too_big = n == -EFBIG;
  } else {
    return set_default(s, slot);
  }
  int64_t v = 0;
  const Check c =
      too_big ? Check::kTooLong : parse_value(s, text, len, &v, slot.str, sizeof slot.str);
  if (c != Check::kOk) {
    char shown[kShowCap + 4], def[kShowCap], expect[160];
    shown_text(text, len, shown, sizeof shown);
    default_text(s, def, sizeof def);
    expected_text(s, expect, sizeof expect);
    SS_WARN("%s: bad value \"%s\" from %s (%s; expected %s); using default %s", s.name, shown,
            slot.origin, check_text(c), expect, def);
    return set_default(s, slot);
  }
  g_int[i].store(v, std::memory_order_relaxed);
  g_src[i].store(static_cast<int>(src), std::memory_order_relaxed);
}

// Caller holds g_mu. The conf dir first: the rsocket files live under it.
void load_locked() {
  int n = 0;
  const Setting* rows = table(&n);
  const int dir_i = static_cast<int>(Id::kRsConfDir);
  load_one(rows[dir_i], nullptr);
  for (int i = 0; i < n; ++i)
    if (i != dir_i) load_one(rows[i], g_slot[dir_i].str);
  g_loaded.store(true, std::memory_order_release);
}

void ensure_loaded() {
  if (g_loaded.load(std::memory_order_acquire)) return;
  ErrnoGuard keep;
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_loaded.load(std::memory_order_relaxed)) load_locked();
}

bool valid(Id id) { return setting(id) != nullptr; }

}  // namespace

int64_t get_int(Id id) {
  if (!valid(id)) return 0;
  ensure_loaded();
  return g_int[static_cast<int>(id)].load(std::memory_order_relaxed);
}

std::string get_string(Id id) {
  const Setting* s = setting(id);
  if (!s) return {};
  ensure_loaded();
  const int i = static_cast<int>(id);
  char buf[kShowCap];
  switch (s->type) {
    case Type::kInt:
      snprintf(buf, sizeof buf, "%" PRId64, g_int[i].load(std::memory_order_relaxed));
      return buf;
    case Type::kEnum:
      if (!choice_at(s->str_def, g_int[i].load(std::memory_order_relaxed), buf, sizeof buf))
        return {};
      return buf;
    case Type::kString: {
      std::lock_guard<std::mutex> lock(g_mu);
      return g_slot[i].str;
    }
  }
  return {};
}

Source source(Id id) {
  if (!valid(id)) return Source::kDefault;
  ensure_loaded();
  return static_cast<Source>(g_src[static_cast<int>(id)].load(std::memory_order_relaxed));
}

std::string origin(Id id) {
  if (!valid(id)) return {};
  ensure_loaded();
  std::lock_guard<std::mutex> lock(g_mu);
  return g_slot[static_cast<int>(id)].origin;
}

void reload() {
  ErrnoGuard keep;
  // The logger first, so warnings from this load use the new threshold.
  log::reload();
  std::lock_guard<std::mutex> lock(g_mu);
  load_locked();
}

int64_t env_int(Id id) {
  const Setting* s = setting(id);
  if (!s || s->type == Type::kString) return 0;
  ErrnoGuard keep;
  const char* text = env_value(*s);
  int64_t v = s->def;
  if (text && parse_value(*s, text, strlen(text), &v, nullptr, 0) != Check::kOk) v = s->def;
  return v;
}

}  // namespace ss::config
