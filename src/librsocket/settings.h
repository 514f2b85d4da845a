// rsocket's settings: the defaults librdmacm reads from /etc/rdma/rsocket
// (each also settable from the environment), Slipstream's close linger and
// connect timeout.
// Reads are cached: get() is two atomic loads once the table is loaded.
#pragma once
#include <cstdint>

#include "core/base/config.h"

namespace ss::rs::settings {

enum class Id : int {
  kConfDir,           // SLIPSTREAM_RS_CONF_DIR: directory of the one-value files
  kPollingTime,       // polling_time (us)
  kWakeUpInterval,    // wake_up_interval (ms)
  kInlineDefault,     // inline_default (bytes)
  kSqsizeDefault,     // sqsize_default (entries)
  kRqsizeDefault,     // rqsize_default (entries)
  kMemDefault,        // mem_default (rbuf bytes)
  kWmemDefault,       // wmem_default (sbuf bytes)
  kIomapSize,         // iomap_size (entries)
  kCloseLinger,       // SLIPSTREAM_RS_CLOSE_LINGER (ms)
  kConnectTimeout,    // SLIPSTREAM_RS_CONNECT_TIMEOUT (ms)
  kDgramKernelRatio,  // SLIPSTREAM_RS_DGRAM_KERNEL_RATIO (ring looks per kernel look)
  kCount
};

extern config::Table<Id> table;

inline int64_t get(Id id) { return table.get_int(id); }

}  // namespace ss::rs::settings
