// The settings table: every Slipstream setting declared once with its
// environment variable, its file, type, default, bounds and help. Parsing,
// bounds checks and the listing tool all read the same table.
#pragma once
#include <cstdint>
#include <string>

namespace ss::config {

enum class Id : int {
  kProvider,          // SLIPSTREAM_PROVIDER: auto|shm|tcp|verbs
  kLogLevel,          // SLIPSTREAM_LOG_LEVEL: 0..6
  kRsConfDir,         // SLIPSTREAM_RS_CONF_DIR: directory of the rsocket files
  kRsPollingTime,     // polling_time (us)
  kRsWakeUpInterval,  // wake_up_interval (ms)
  kRsInlineDefault,   // inline_default
  kRsSqsizeDefault,   // sqsize_default
  kRsRqsizeDefault,   // rqsize_default
  kRsMemDefault,      // mem_default (rbuf bytes)
  kRsWmemDefault,     // wmem_default (sbuf bytes)
  kRsIomapSize,       // iomap_size
  kRsCloseLinger,     // SLIPSTREAM_RS_CLOSE_LINGER (ms)
  kRsConnectTimeout,  // SLIPSTREAM_RS_CONNECT_TIMEOUT (ms)
  kCount
};

enum class Type { kInt, kString, kEnum };
enum class Source { kDefault, kFile, kEnv };

struct Setting {
  Id id;
  const char* name;         // short name, e.g. "polling_time"
  const char* env;          // environment variable, or nullptr
  const char* file;         // file name under the rsocket conf dir, or nullptr
  Type type;
  int64_t def;              // default (kInt, and the index for kEnum)
  int64_t min, max;         // bounds (kInt)
  const char* str_def;      // default for kString; "a|b|c" choices for kEnum
  const char* help;
};

// The whole table, in declaration order.
const Setting* table(int* count);

// Current values; the table is read lazily on first use.
int64_t get_int(Id id);             // kInt, and the choice index of a kEnum
std::string get_string(Id id);      // kString, and the choice name of a kEnum
Source source(Id id);
// Where the value came from, e.g. "env SLIPSTREAM_PROVIDER" or "/etc/rdma/rsocket/polling_time".
std::string origin(Id id);

// Re-reads environment and files (tests change them between cases).
void reload();

// The row of `id`, or nullptr when `id` is out of range. (A kInt row with a
// non-null str_def accepts the names "a|b|c" for the values min, min+1, ...)
const Setting* setting(Id id);

// Value of a kInt/kEnum setting from its environment variable alone, else its
// default, by the table's rules, without logging and without the cache or its
// lock. The logger reads its threshold this way, so a config warning logged
// while the table loads never waits on the table.
int64_t env_int(Id id);

}  // namespace ss::config
