// The settings table itself: one row per setting, in Id order. Everything
// else (parsing, bounds, the listing tool) reads these rows.
#include "core/base/config.h"

// Makefile.am passes the configured ${sysconfdir}/rdma/rsocket; a build
// without it falls back to upstream's usual location.
#ifndef SS_RS_CONF_DIR
#define SS_RS_CONF_DIR "/etc/rdma/rsocket"
#endif

namespace ss::config {
namespace {

constexpr int64_t kU16Max = 0xFFFE;  // upstream reads %hu; 0xFFFF is reserved
constexpr int64_t kU32Max = 0xFFFFFFFFll;
constexpr int64_t kI32Max = 0x7FFFFFFFll;

// For a kInt row, a non-null str_def lists names accepted in place of the
// numbers min, min+1, ... (log levels by name).
constexpr Setting kTable[] = {
    {Id::kProvider, "provider", "SLIPSTREAM_PROVIDER", nullptr, Type::kEnum, 0, 0, 3,
     "auto|shm|tcp|verbs",
     "connection provider; auto picks verbs for an RDMA route, shm for a "
     "peer on this host, tcp otherwise"},
    {Id::kLogLevel, "log_level", "SLIPSTREAM_LOG_LEVEL", nullptr, Type::kInt, 2, 0, 6,
     "panic|error|warn|info|details|debug|fine",
     "log threshold, a number or a name: 0 panic, 1 error, 2 warn, 3 info, "
     "4 details, 5 debug, 6 fine"},
    {Id::kRsConfDir, "rs_conf_dir", "SLIPSTREAM_RS_CONF_DIR", nullptr, Type::kString, 0, 0, 0,
     SS_RS_CONF_DIR, "directory holding the rsocket configuration files"},
    {Id::kRsPollingTime, "polling_time", "SLIPSTREAM_RS_POLLING_TIME", "polling_time",
     Type::kInt, 10, 0, kU32Max, nullptr,
     "microseconds of busy polling before a blocking call sleeps"},
    {Id::kRsWakeUpInterval, "wake_up_interval", "SLIPSTREAM_RS_WAKE_UP_INTERVAL",
     "wake_up_interval", Type::kInt, 500, 0, kI32Max, nullptr,
     "longest sleep, in ms, inside rpoll before it re-checks its sockets"},
    {Id::kRsInlineDefault, "inline_default", "SLIPSTREAM_RS_INLINE_DEFAULT", "inline_default",
     Type::kInt, 64, 0, kU16Max, nullptr, "default inline data size, in bytes"},
    {Id::kRsSqsizeDefault, "sqsize_default", "SLIPSTREAM_RS_SQSIZE_DEFAULT", "sqsize_default",
     Type::kInt, 384, 1, kU16Max, nullptr, "default send queue size, in entries"},
    {Id::kRsRqsizeDefault, "rqsize_default", "SLIPSTREAM_RS_RQSIZE_DEFAULT", "rqsize_default",
     Type::kInt, 384, 1, kU16Max, nullptr, "default receive queue size, in entries"},
    {Id::kRsMemDefault, "mem_default", "SLIPSTREAM_RS_MEM_DEFAULT", "mem_default", Type::kInt,
     131072, 1, kU32Max, nullptr, "default receive buffer size, in bytes"},
    {Id::kRsWmemDefault, "wmem_default", "SLIPSTREAM_RS_WMEM_DEFAULT", "wmem_default",
     Type::kInt, 131072, 0, kU32Max, nullptr,
     "default send buffer size, in bytes; below 2048 it becomes 4096, as upstream"},
    {Id::kRsIomapSize, "iomap_size", "SLIPSTREAM_RS_IOMAP_SIZE", "iomap_size", Type::kInt, 0,
     0, 32512, nullptr,
     "default RDMA_IOMAPSIZE, in entries (sent in 8 bits: above 128, rounded "
     "down to a multiple of 256)"},
    {Id::kRsCloseLinger, "close_linger", "SLIPSTREAM_RS_CLOSE_LINGER", nullptr, Type::kInt, 500,
     0, 60000, nullptr,
     "ms a closed connection waits, in the background, for a peer that may "
     "still be reading to close its end before it is torn down (0: at once, "
     "as upstream); SO_LINGER overrides it per socket"},
    {Id::kRsConnectTimeout, "connect_timeout", "SLIPSTREAM_RS_CONNECT_TIMEOUT", nullptr,
     Type::kInt, 127000, 1, kI32Max, nullptr,
     "ms a connect waits for the peer's answer before it fails with ETIMEDOUT "
     "(default: Linux TCP's connect to a silent host, 6 SYN retries)"},
};

static_assert(sizeof(kTable) / sizeof(kTable[0]) == static_cast<size_t>(Id::kCount),
              "one row per Id");

// Rows must sit at their Id's index: lookups index the table directly.
constexpr bool rows_in_order() {
  for (size_t i = 0; i < sizeof(kTable) / sizeof(kTable[0]); ++i)
    if (static_cast<size_t>(kTable[i].id) != i) return false;
  return true;
}
static_assert(rows_in_order(), "table rows in Id order");

}  // namespace

const Setting* table(int* count) {
  if (count) *count = static_cast<int>(Id::kCount);
  return kTable;
}

const Setting* setting(Id id) {
  const int i = static_cast<int>(id);
  if (i < 0 || i >= static_cast<int>(Id::kCount)) return nullptr;
  return &kTable[i];
}

}  // namespace ss::config
