// The settings layer: each component (core, each face) declares one table of
// rows (name, environment names, file, type, unit, default, bounds, help) and
// registers it; parsing, bounds, warnings and the listing tool all read the
// rows. A value comes from the first of:
//   1. the row's environment names, in the order the row lists them (the
//      first one that is set wins, even when its value is bad);
//   2. the component's added sources (the VMA face's VMA_SPEC profile), in
//      the order they were added;
//   3. the row's one-value file in the component's directory (as
//      /etc/rdma/rsocket);
//   4. the row's default.
// A bad value is warned once, naming the setting, the value, where it came
// from and the default used instead; it does not fall through to a lower
// source.
#pragma once
#include <limits.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/base/api.h"

namespace ss::config {

enum class Type { kInt, kString, kEnum };

// What a kInt row counts in. A bare number is in that unit; a suffix of the
// same family is converted to it: sizes k, m, g (powers of 1024, as libvma
// and rsocket users expect), times ns, us, ms, s. A time that is not a whole
// number of the row's unit is rejected, not rounded.
enum class Unit { kNone, kBytes, kUs, kMs };

// Where a current value came from.
enum class Source { kDefault, kFile, kEnv, kRules };

constexpr int kMaxEnv = 4;
constexpr int kMaxSources = 4;
// A string value (a directory) leaves room for "/<file name>" within PATH_MAX.
constexpr size_t kStrCap = PATH_MAX - 64;
constexpr size_t kOriginCap = PATH_MAX + 16;

// One row. Written with designated initializers; what a row leaves out is
// off (no file, no unit, no quirk).
struct Setting {
  int id;                         // int(its Id): rows sit at their Id's index
  const char* name;               // short name, e.g. "polling_time"
  const char* env[kMaxEnv] = {};  // environment names, first set wins
  const char* file = nullptr;     // one-value file in the component's directory
  Type type = Type::kInt;
  Unit unit = Unit::kNone;
  int64_t def = 0;                // default (kInt; the choice index of a kEnum)
  int64_t min = 0, max = 0;       // bounds (kInt), in `unit`
  const char* str_def = nullptr;  // kString default; kEnum "a|b|c"; kInt names for min, min+1...
  const char* help = nullptr;
  int64_t (*adjust)(int64_t) = nullptr;  // upstream quirk applied to an accepted kInt
  bool empty_ok = false;                 // kString: "" is a value (libvma's "disabled")
};

// True when every row sits at its Id's index (lookups index directly).
template <size_t N>
constexpr bool in_id_order(const Setting (&rows)[N]) {
  for (size_t i = 0; i < N; ++i)
    if (rows[i].id != static_cast<int>(i)) return false;
  return true;
}

// The current value of one row. Numbers are atomics, so a loaded table is
// read without a lock; strings and origins change only under the lock.
struct Value {
  std::atomic<int64_t> num{0};
  std::atomic<int> src{0};
  char str[kStrCap]{};
  char origin[kOriginCap]{};  // "default", "env NAME", a file path, "VMA_SPEC=latency"
};

class Component;

// A place values come from besides the environment. The component's
// directory of one-value files is one (built in); a face implements another
// such as the VMA face's VMA_SPEC profile. Called with the settings lock held:
// it must not read settings itself.
class ValueSource {
 public:
  // What values found here count as (kFile or kRules).
  virtual Source kind() const = 0;
  // Row `s` of `c`: copies its text into text[cap] (NUL-terminated) and where
  // it was found into origin[ocap], and returns the text's length; -ENOENT
  // when this source has nothing for the row; -EFBIG when the text does not
  // fit (text then holds its start); another -errno when the source could not
  // be read (warned, the default used).
  virtual long lookup(const Component& c, const Setting& s, char* text, size_t cap, char* origin,
                      size_t ocap) const = 0;

 protected:
  ~ValueSource() = default;
};

// One component's table and its current values. Loaded lazily on first
// use and registered then at the latest; `Enlisted` registers it at load
// time so the listing sees it before any use. Trivially destructible, so a
// late caller after exit() still reads it.
class Component {
 public:
  constexpr Component(const char* name, const Setting* rows, Value* values, int count, int dir_row)
      : name_(name), rows_(rows), values_(values), count_(count), dir_row_(dir_row) {}
  Component(const Component&) = delete;
  Component& operator=(const Component&) = delete;

  const char* name() const { return name_; }
  int count() const { return count_; }
  // Row i, or nullptr when i is out of range.
  const Setting* row(int i) const { return valid(i) ? &rows_[i] : nullptr; }
  // Index of the row called `name`, or -1.
  SS_API int find(const char* name) const;
  // The row naming the directory of one-value files, or -1.
  int dir_row() const { return dir_row_; }

  // The hot path: one acquire load and one relaxed load once loaded.
  int64_t get_int(int i) {
    if (!loaded_.load(std::memory_order_acquire)) load();
    return valid(i) ? values_[i].num.load(std::memory_order_relaxed) : 0;
  }
  SS_API std::string get_string(int i);  // any row as text (an enum by its choice name)
  SS_API Source source(int i);
  SS_API std::string origin(int i);
  // The directory of one-value files in effect ("" without one). With the
  // settings lock held (a ValueSource).
  const char* dir_locked() const { return dir_row_ >= 0 ? values_[dir_row_].str : ""; }

  // Value of a kInt/kEnum row from its environment names alone, else its
  // default, without logging, the cache or its lock. The logger reads its
  // threshold this way, so a warning logged while a table loads never waits
  // on the table.
  int64_t env_int(int i) const;

  // Consults `src` after the environment and before the directory, then
  // re-reads this component. 0, or -ENOSPC beyond kMaxSources.
  SS_API int add_source(const ValueSource* src);
  void remove_source(const ValueSource* src);

  // Registry membership (idempotent).
  SS_API void enlist();
  SS_API void delist();

 private:
  friend struct Loader;
  friend int components(Component** out, int cap);
  friend Component* find_component(const char* name);
  friend void reload();
  bool valid(int i) const { return i >= 0 && i < count_; }
  SS_API void load();  // first use: registers and reads the table

  const char* name_;
  const Setting* rows_;
  Value* values_;
  int count_;
  int dir_row_;
  std::atomic<bool> loaded_{false};
  // Below: guarded by the settings lock.
  const ValueSource* sources_[kMaxSources] = {};
  Component* next_ = nullptr;
  bool listed_ = false;
};

template <size_t N>
struct ValueStore {
  Value values[N];
};

// A component's table typed by its Id enum (which ends in kCount). Declare
// it constinit at namespace scope, e.g.
//   constinit config::Table<Id> table{"rsocket", kRows, Id::kConfDir};
//   static_assert(config::in_id_order(kRows));
//   const config::Enlisted enlisted{table};
template <typename IdT>
class Table : private ValueStore<static_cast<size_t>(IdT::kCount)>, public Component {
  static constexpr int kN = static_cast<int>(IdT::kCount);

 public:
  constexpr Table(const char* name, const Setting (&rows)[kN], IdT dir_row = IdT::kCount)
      : Component(name, rows, this->values, kN,
                  dir_row == IdT::kCount ? -1 : static_cast<int>(dir_row)) {}
  using Component::env_int;
  using Component::get_int;
  using Component::get_string;
  using Component::origin;
  using Component::source;
  int64_t get_int(IdT id) { return Component::get_int(static_cast<int>(id)); }
  std::string get_string(IdT id) { return Component::get_string(static_cast<int>(id)); }
  Source source(IdT id) { return Component::source(static_cast<int>(id)); }
  std::string origin(IdT id) { return Component::origin(static_cast<int>(id)); }
  int64_t env_int(IdT id) const { return Component::env_int(static_cast<int>(id)); }
};

// Registers a component while it lives (a library's load to its unload).
class Enlisted {
 public:
  explicit Enlisted(Component& c) : c_(c) { c_.enlist(); }
  ~Enlisted() { c_.delist(); }
  Enlisted(const Enlisted&) = delete;
  Enlisted& operator=(const Enlisted&) = delete;

 private:
  Component& c_;
};

// Registered components in registration order (core first): copies up to
// cap pointers into out and returns how many there are.
SS_API int components(Component** out, int cap);
// The registered component called `name`, or nullptr.
SS_API Component* find_component(const char* name);

// Re-reads every registered component (tests change env and files).
SS_API void reload();

}  // namespace ss::config
