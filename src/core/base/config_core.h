// Core's own settings (what every face shares). Each face declares its own
// table beside its code (librsocket: src/librsocket/settings.h).
#pragma once
#include "core/base/config.h"

namespace ss::config::core {

enum class Id : int {
  kProvider,          // SLIPSTREAM_PROVIDER: auto|shm|tcp|verbs
  kLogLevel,          // SLIPSTREAM_LOG_LEVEL: 0..6 or a name
  kSideProbeTimeout,  // SLIPSTREAM_SIDE_PROBE_TIMEOUT: ms a side-channel probe waits
  kSideProbeMemory,   // SLIPSTREAM_SIDE_PROBE_MEMORY: ms a peer that did not answer is remembered
  kCount
};

extern Table<Id> table;

}  // namespace ss::config::core
