// Loading, the registry and the lookups. One lock for every component: it
// guards the registry, the strings and origins, and each load. A loaded
// component's numbers are read without it (Component::get_int).
//
// Recursion: a bad value is reported through the logger while the lock is
// held. The logger reads its own threshold with env_int(), which touches
// neither the cache nor the lock, so that can never wait on itself.
#include "core/base/config.h"

#include <stdlib.h>

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

// A one-value file or rules entry holds one short value; longer is not one.
constexpr size_t kTextCap = 256;
// How much of a rejected value the warning shows.
constexpr size_t kShowCap = 64;

// Static storage with constant initialisation: usable from other libraries'
// constructors and never destroyed under a late caller.
constinit std::mutex g_mu;
constinit Component* g_first = nullptr;  // the registry, guarded by g_mu

// Setuid programs ignore the environment: it must not point them at files.
// The first of the row's names that is set, or nullptr.
const char* env_value(const Setting& s, const char** name) {
  for (const char* n : s.env) {
    if (!n) break;
    if (const char* v = secure_getenv(n)) {
      if (name) *name = n;
      return v;
    }
  }
  return nullptr;
}

// The component's directory of one-value files, as upstream's
// /etc/rdma/rsocket: file `s.file` holds the value of row `s`.
class DirFiles final : public ValueSource {
 public:
  Source kind() const override { return Source::kFile; }
  long lookup(const Component& c, const Setting& s, char* text, size_t cap, char* origin,
              size_t ocap) const override {
    if (!s.file || c.dir_row() < 0) return -ENOENT;
    snprintf(origin, ocap, "%s/%s", c.dir_locked(), s.file);
    const long n = read_small_file(origin, text, cap);
    return n == -ENOTDIR ? -ENOENT : n;  // a missing directory is a missing file
  }
};
constinit const DirFiles g_dir_files{};

// A number of row `s` as shown: its unit's suffix for times ("500ms").
void number_text(const Setting& s, int64_t v, char* out, size_t cap) {
  snprintf(out, cap, "%" PRId64 "%s", v, unit_suffix(s.unit));
}

// The default as the warning prints it.
void default_text(const Setting& s, char* out, size_t cap) {
  switch (s.type) {
    case Type::kInt:
      return number_text(s, s.def, out, cap);
    case Type::kEnum:
      if (!choice_at(s.str_def, s.def, out, cap)) snprintf(out, cap, "%" PRId64, s.def);
      return;
    case Type::kString:
      snprintf(out, cap, "\"%s\"", s.str_def ? s.str_def : "");
      return;
  }
}

// What the row accepts, e.g. "0..6 or panic|error|..." or
// "0..4294967295 us; or with a unit: ns, us, ms, s".
void expected_text(const Setting& s, char* out, size_t cap) {
  switch (s.type) {
    case Type::kInt:
      snprintf(out, cap, "%" PRId64 "..%" PRId64 "%s%s%s%s", s.min, s.max,
               s.unit == Unit::kNone ? "" : " ", unit_text(s.unit), s.str_def ? " or " : "",
               s.str_def ? s.str_def : "");
      return;
    case Type::kEnum:
      snprintf(out, cap, "one of %s", s.str_def);
      return;
    case Type::kString:
      snprintf(out, cap, "a %spath under %zu bytes", s.empty_ok ? "" : "non-empty ", kStrCap);
      return;
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

void set_default(const Setting& s, Value& v) {
  v.num.store(s.type == Type::kString ? 0 : s.def, std::memory_order_relaxed);
  v.src.store(static_cast<int>(Source::kDefault), std::memory_order_relaxed);
  if (s.type == Type::kString) snprintf(v.str, sizeof v.str, "%s", s.str_def);
  snprintf(v.origin, sizeof v.origin, "default");
}

// Where a row's text was found.
struct Found {
  const char* text = nullptr;
  size_t len = 0;
  Source src = Source::kDefault;
  bool too_long = false;  // a source's text larger than its buffer: shown by its start
};

}  // namespace

// Resolves rows; a friend of Component. Caller holds g_mu.
struct Loader {
  Component& c;

  // The first source with a value for row i; false: the default applies
  // (quietly when no source had one, after a warning when one failed).
  bool find(int i, bool sources, char* buf, Found* f) {
    const Setting& s = c.rows_[i];
    Value& v = c.values_[i];
    const char* name = nullptr;
    if ((f->text = env_value(s, &name))) {
      f->len = strlen(f->text), f->src = Source::kEnv;
      snprintf(v.origin, sizeof v.origin, "env %s", name);
      return true;
    }
    if (!sources) return false;
    const ValueSource* const* added = c.sources_;
    for (int k = 0; k <= kMaxSources; ++k) {
      const ValueSource* src = k < kMaxSources ? added[k] : &g_dir_files;
      if (!src) continue;
      const long n = src->lookup(c, s, buf, kTextCap, v.origin, sizeof v.origin);
      if (n == -ENOENT) continue;
      if (n < 0 && n != -EFBIG) {
        char def[kShowCap], err[128];
        default_text(s, def, sizeof def);
        const char* msg = strerror_r(static_cast<int>(-n), err, sizeof err);
        SS_WARN("%s: cannot read %s (%s); using default %s", s.name, v.origin, msg, def);
        return false;
      }
      f->text = buf, f->src = src->kind(), f->too_long = n == -EFBIG;
      f->len = f->too_long ? strnlen(buf, kTextCap - 1) : static_cast<size_t>(n);
      return true;
    }
    return false;
  }

  // Row i from its first source, else its default. `sources` false: the
  // environment only (the directory row, which the files depend on).
  void load_one(int i, bool sources) {
    const Setting& s = c.rows_[i];
    Value& v = c.values_[i];
    char buf[kTextCap];
    Found f;
    if (!find(i, sources, buf, &f)) return set_default(s, v);
    int64_t num = 0;
    const Check chk =
        f.too_long ? Check::kTooLong : parse_value(s, f.text, f.len, &num, v.str, sizeof v.str);
    if (chk != Check::kOk) {
      char shown[kShowCap + 4], def[kShowCap], expect[192];
      shown_text(f.text, f.len, shown, sizeof shown);
      default_text(s, def, sizeof def);
      expected_text(s, expect, sizeof expect);
      SS_WARN("%s: bad value \"%s\" from %s (%s; expected %s); using default %s", s.name, shown,
              v.origin, check_text(chk), expect, def);
      return set_default(s, v);
    }
    v.num.store(num, std::memory_order_relaxed);
    v.src.store(static_cast<int>(f.src), std::memory_order_relaxed);
  }

  // The directory first: the files live under it.
  void load() {
    if (c.dir_row_ >= 0) load_one(c.dir_row_, false);
    for (int i = 0; i < c.count_; ++i)
      if (i != c.dir_row_) load_one(i, true);
    c.loaded_.store(true, std::memory_order_release);
  }

  void enlist() {
    if (c.listed_) return;
    Component** p = &g_first;
    while (*p) p = &(*p)->next_;
    *p = &c;
    c.next_ = nullptr;
    c.listed_ = true;
  }
};

int Component::find(const char* name) const {
  for (int i = 0; i < count_; ++i)
    if (!strcmp(rows_[i].name, name)) return i;
  return -1;
}

void Component::load() {
  ErrnoGuard keep;
  std::lock_guard<std::mutex> lock(g_mu);
  Loader l{*this};
  l.enlist();
  if (!loaded_.load(std::memory_order_relaxed)) l.load();
}

std::string Component::get_string(int i) {
  const Setting* s = row(i);
  if (!s) return {};
  const int64_t num = get_int(i);
  char buf[kShowCap];
  switch (s->type) {
    case Type::kInt:
      snprintf(buf, sizeof buf, "%" PRId64, num);
      return buf;
    case Type::kEnum:
      if (!choice_at(s->str_def, num, buf, sizeof buf)) return {};
      return buf;
    case Type::kString: {
      std::lock_guard<std::mutex> lock(g_mu);
      return values_[i].str;
    }
  }
  return {};
}

Source Component::source(int i) {
  if (!valid(i)) return Source::kDefault;
  get_int(i);  // loads
  return static_cast<Source>(values_[i].src.load(std::memory_order_relaxed));
}

std::string Component::origin(int i) {
  if (!valid(i)) return {};
  get_int(i);
  std::lock_guard<std::mutex> lock(g_mu);
  return values_[i].origin;
}

int64_t Component::env_int(int i) const {
  const Setting* s = row(i);
  if (!s || s->type == Type::kString) return 0;
  ErrnoGuard keep;
  const char* text = env_value(*s, nullptr);
  int64_t v = s->def;
  if (text && parse_value(*s, text, strlen(text), &v, nullptr, 0) != Check::kOk) v = s->def;
  return v;
}

int Component::add_source(const ValueSource* src) {
  ErrnoGuard keep;
  std::lock_guard<std::mutex> lock(g_mu);
  Loader l{*this};
  l.enlist();
  for (const ValueSource*& slot : sources_) {
    if (slot) continue;
    slot = src;
    // Values already read change now; a table not read yet takes the
    // source at its first read (sources added one after another at load
    // would otherwise warn about one bad value once per source).
    if (loaded_.load(std::memory_order_acquire)) l.load();
    return 0;
  }
  return -ENOSPC;
}

void Component::remove_source(const ValueSource* src) {
  ErrnoGuard keep;
  std::lock_guard<std::mutex> lock(g_mu);
  for (const ValueSource*& slot : sources_)
    if (slot == src) slot = nullptr;
  Loader{*this}.load();
}

void Component::enlist() {
  std::lock_guard<std::mutex> lock(g_mu);
  Loader{*this}.enlist();
}

void Component::delist() {
  std::lock_guard<std::mutex> lock(g_mu);
  for (Component** p = &g_first; *p; p = &(*p)->next_) {
    if (*p != this) continue;
    *p = next_;
    break;
  }
  next_ = nullptr;
  listed_ = false;
}

int components(Component** out, int cap) {
  std::lock_guard<std::mutex> lock(g_mu);
  int n = 0;
  for (Component* c = g_first; c; c = c->next_, ++n)
    if (n < cap) out[n] = c;
  return n;
}

Component* find_component(const char* name) {
  std::lock_guard<std::mutex> lock(g_mu);
  for (Component* c = g_first; c; c = c->next_)
    if (!strcmp(c->name(), name)) return c;
  return nullptr;
}

void reload() {
  ErrnoGuard keep;
  // The logger first, so warnings from this load use the new threshold.
  log::reload();
  std::lock_guard<std::mutex> lock(g_mu);
  for (Component* c = g_first; c; c = c->next_) Loader{*c}.load();
}

}  // namespace ss::config
