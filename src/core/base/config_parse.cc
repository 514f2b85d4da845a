// Parsing by the table's rules. Kept free of state so the cache (config.cc)
// and the logger's lock-free threshold read (env_int) share one set of rules.
#include "core/base/config_parse.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ss::config {
namespace {

bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

int digit(char c, int base) {
  int d = -1;
  if (c >= '0' && c <= '9')
    d = c - '0';
  else if (lower(c) >= 'a' && lower(c) <= 'f')
    d = lower(c) - 'a' + 10;
  return d < base ? d : -1;
}

// Length of the number at the start of [text, text + len): sign, then
// 0x-prefixed hex or decimal digits. What follows is a unit suffix.
size_t number_length(const char* text, size_t len) {
  size_t i = 0;
  if (i < len && (text[i] == '+' || text[i] == '-')) ++i;
  int base = 10;
  if (i + 2 < len && text[i] == '0' && lower(text[i + 1]) == 'x') base = 16, i += 2;
  while (i < len && digit(text[i], base) >= 0) ++i;
  return i;
}

bool same_word(const char* text, size_t len, const char* word) {
  size_t i = 0;
  for (; i < len && word[i]; ++i)
    if (lower(text[i]) != word[i]) return false;
  return i == len && !word[i];
}

// One suffix and its size in the family's base (bytes, or nanoseconds).
struct Suffix {
  const char* name;
  int64_t scale;
};
constexpr Suffix kSizes[] = {
    {"k", int64_t{1} << 10}, {"m", int64_t{1} << 20}, {"g", int64_t{1} << 30}};
constexpr Suffix kTimes[] = {
    {"ns", 1}, {"us", 1000}, {"ms", 1000 * 1000}, {"s", 1000 * 1000 * 1000}};

// The row's own unit in its family's base; 0 for kNone.
int64_t unit_scale(Unit unit) {
  switch (unit) {
    case Unit::kNone:
      return 0;
    case Unit::kBytes:
      return 1;
    case Unit::kUs:
      return 1000;
    case Unit::kMs:
      return 1000 * 1000;
  }
  return 0;
}

// Scale of `suffix` in `unit`'s family, or 0 when the family has no such unit.
template <size_t N>
int64_t find_suffix(const Suffix (&table)[N], const char* suffix, size_t len) {
  for (const Suffix& s : table)
    if (same_word(suffix, len, s.name)) return s.scale;
  return 0;
}

}  // namespace

void trim(const char** text, size_t* len) {
  while (*len && is_space(**text)) ++*text, --*len;
  while (*len && is_space((*text)[*len - 1])) --*len;
}

const char* check_text(Check c) {
  switch (c) {
    case Check::kOk:
      return "ok";
    case Check::kEmpty:
      return "empty";
    case Check::kNotNumber:
      return "not an integer";
    case Check::kOutOfRange:
      return "out of range";
    case Check::kNotChoice:
      return "not a known choice";
    case Check::kTooLong:
      return "too long";
    case Check::kBadUnit:
      return "unknown unit";
    case Check::kNotWhole:
      return "not a whole number of the setting's unit";
  }
  return "invalid";
}

Check parse_int(const char* text, size_t len, int64_t* out) {
  trim(&text, &len);
  if (!len) return Check::kEmpty;
  bool neg = false;
  if (*text == '+' || *text == '-') neg = (*text == '-'), ++text, --len;
  int base = 10;
  if (len > 2 && text[0] == '0' && lower(text[1]) == 'x') base = 16, text += 2, len -= 2;
  if (!len) return Check::kNotNumber;
  // Accumulate the magnitude unsigned so INT64_MIN parses and overflow is exact.
  uint64_t mag = 0;
  bool overflow = false;
  for (size_t i = 0; i < len; ++i) {
    const int d = digit(text[i], base);
    if (d < 0) return Check::kNotNumber;
    if (mag > (UINT64_MAX - static_cast<uint64_t>(d)) / static_cast<uint64_t>(base))
      overflow = true;
    else
      mag = mag * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
  }
  const uint64_t limit = neg ? (uint64_t{1} << 63) : static_cast<uint64_t>(INT64_MAX);
  if (overflow || mag > limit) return Check::kOutOfRange;
  *out = neg ? static_cast<int64_t>(0 - mag) : static_cast<int64_t>(mag);
  return Check::kOk;
}

Check parse_scaled(const char* text, size_t len, Unit unit, int64_t* out) {
  trim(&text, &len);
  const size_t n = number_length(text, len);
  if (unit == Unit::kNone || n == len || n == 0) return parse_int(text, len, out);
  int64_t v = 0;
  if (const Check c = parse_int(text, n, &v); c != Check::kOk) return c;
  const char* suffix = text + n;
  size_t slen = len - n;
  trim(&suffix, &slen);  // "10 ms" reads as "10ms"
  const int64_t scale =
      unit == Unit::kBytes ? find_suffix(kSizes, suffix, slen) : find_suffix(kTimes, suffix, slen);
  if (!scale) return Check::kBadUnit;
  const int64_t per = unit_scale(unit);
  int64_t base = 0;  // the value in bytes or nanoseconds
  if (__builtin_mul_overflow(v, scale, &base)) return Check::kOutOfRange;
  if (base % per) return Check::kNotWhole;
  *out = base / per;
  return Check::kOk;
}

const char* unit_suffix(Unit unit) {
  switch (unit) {
    case Unit::kUs:
      return "us";
    case Unit::kMs:
      return "ms";
    case Unit::kNone:
    case Unit::kBytes:
      return "";
  }
  return "";
}

const char* unit_text(Unit unit) {
  switch (unit) {
    case Unit::kNone:
      return "";
    case Unit::kBytes:
      return "bytes; or with a unit: k, m, g (powers of 1024)";
    case Unit::kUs:
      return "us; or with a unit: ns, us, ms, s";
    case Unit::kMs:
      return "ms; or with a unit: ns, us, ms, s";
  }
  return "";
}

int parse_choice(const char* text, size_t len, const char* choices) {
  trim(&text, &len);
  if (!choices || !len) return -1;
  int index = 0;
  for (const char* p = choices;; ++index) {
    const char* end = std::strchr(p, '|');
    const size_t n = end ? static_cast<size_t>(end - p) : std::strlen(p);
    if (n == len) {
      size_t i = 0;
      while (i < n && lower(p[i]) == lower(text[i])) ++i;
      if (i == n) return index;
    }
    if (!end) return -1;
    p = end + 1;
  }
}

bool choice_at(const char* choices, int64_t index, char* out, size_t cap) {
  if (!choices || index < 0 || !cap) return false;
  const char* p = choices;
  for (; index > 0; --index) {
    p = std::strchr(p, '|');
    if (!p) return false;
    ++p;
  }
  const char* end = std::strchr(p, '|');
  size_t n = end ? static_cast<size_t>(end - p) : std::strlen(p);
  if (n >= cap) n = cap - 1;
  std::memcpy(out, p, n);
  out[n] = '\0';
  return true;
}

Check parse_value(const Setting& s, const char* text, size_t len, int64_t* iv, char* str,
                  size_t cap) {
  trim(&text, &len);
  if (!len && !(s.type == Type::kString && s.empty_ok)) return Check::kEmpty;
  switch (s.type) {
    case Type::kEnum: {
      const int i = parse_choice(text, len, s.str_def);
      if (i < 0) return Check::kNotChoice;
      *iv = i;
      return Check::kOk;
    }
    case Type::kString:
      if (len >= cap) return Check::kTooLong;
      std::memcpy(str, text, len);
      str[len] = '\0';
      return Check::kOk;
    case Type::kInt: {
      int64_t v = 0;
      Check c = parse_scaled(text, len, s.unit, &v);
      if (c == Check::kNotNumber && s.str_def) {
        const int i = parse_choice(text, len, s.str_def);
        if (i >= 0) v = s.min + i, c = Check::kOk;
      }
      if (c != Check::kOk) return c;
      if (v < s.min || v > s.max) return Check::kOutOfRange;
      *iv = s.adjust ? s.adjust(v) : v;
      return Check::kOk;
    }
  }
  return Check::kNotNumber;
}

long read_small_file(const char* path, char* buf, size_t cap) {
  if (!cap) return -EINVAL;
  buf[0] = '\0';
  // O_NONBLOCK: a FIFO dropped into the conf dir must not hang the caller.
  const long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return -errno;
  size_t len = 0;
  long ret = 0;
  for (;;) {
    char spill;
    const bool full = len == cap - 1;
    const long r =
        full ? syscall(SYS_read, fd, &spill, 1) : syscall(SYS_read, fd, buf + len, cap - 1 - len);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      ret = -errno;
      break;
    }
    if (r == 0) {
      ret = static_cast<long>(len);
      break;
    }
    if (full) {
      ret = -EFBIG;
      break;
    }
    len += static_cast<size_t>(r);
  }
  buf[len] = '\0';
  syscall(SYS_close, fd);
  return ret;
}

}  // namespace ss::config
