// Text -> value by one table row's rules (units included), and the raw file
// read behind one-value files. Pure functions: no state, no logging, no
// allocation.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/base/api.h"
#include "core/base/config.h"

namespace ss::config {

// Why a text was rejected; kOk when it was accepted.
enum class Check {
  kOk,
  kEmpty,
  kNotNumber,
  kOutOfRange,
  kNotChoice,
  kTooLong,
  kBadUnit,
  kNotWhole
};

// Narrows [*text, *text + *len) to drop ASCII whitespace at both ends.
void trim(const char** text, size_t* len);

// Human words for a Check, e.g. "not an integer".
const char* check_text(Check c);

// A decimal (or 0x-prefixed hex) integer with an optional sign, surrounded by
// optional ASCII whitespace; the whole text must be consumed.
Check parse_int(const char* text, size_t len, int64_t* out);

// A number with an optional unit suffix of `unit`'s family (see Unit),
// converted to `unit`: "64k" -> 65536 for kBytes, "10ms" -> 10000 for kUs.
// kNone takes a bare integer only.
Check parse_scaled(const char* text, size_t len, Unit unit, int64_t* out);

// The unit's short name as values are shown ("us", "ms"; "" for kNone and
// kBytes, whose plain numbers need none).
const char* unit_suffix(Unit unit);
// What the unit accepts, for warnings and the listing, e.g.
// "us; or with a unit: ns, us, ms, s".
SS_API const char* unit_text(Unit unit);

// Index of `text` (trimmed, case-insensitive) among "a|b|c", or -1.
SS_API int parse_choice(const char* text, size_t len, const char* choices);

// Copies choice number `index` of "a|b|c" into out[cap]; false if none.
SS_API bool choice_at(const char* choices, int64_t index, char* out, size_t cap);

// Parses `text` as row `s` wants it, bounds included. kInt/kEnum store *iv;
// kString copies the trimmed text into str[cap]. The row's `adjust` (an
// upstream quirk) is applied to an accepted kInt.
Check parse_value(const Setting& s, const char* text, size_t len, int64_t* iv, char* str,
                  size_t cap);

// Reads the whole of a small file into buf (NUL-terminated) with raw
// syscalls, so a preload's own open/read wrappers are never entered.
// Returns the length, or -errno; -EFBIG when it does not fit in cap-1 bytes
// (buf then holds the first cap-1 bytes).
long read_small_file(const char* path, char* buf, size_t cap);

}  // namespace ss::config
