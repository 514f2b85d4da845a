// Core's table: one row per core::Id, in Id order.
#include "core/base/config_core.h"

#include <type_traits>

namespace ss::config::core {
namespace {

// For a kInt row, a non-null str_def lists names accepted in place of the
// numbers min, min+1, ... (log levels by name).
constexpr Setting kRows[] = {
    {.id = int(Id::kProvider),
     .name = "provider",
     .env = {"SLIPSTREAM_PROVIDER"},
     .type = Type::kEnum,
     .def = 0,
     .min = 0,
     .max = 3,
     .str_def = "auto|shm|tcp|verbs",
     .help = "connection provider; auto picks verbs for an RDMA route, shm for a peer on "
             "this host, tcp otherwise"},
    {.id = int(Id::kLogLevel),
     .name = "log_level",
     .env = {"SLIPSTREAM_LOG_LEVEL"},
     .def = 2,
     .min = 0,
     .max = 6,
     .str_def = "panic|error|warn|info|details|debug|fine",
     .help = "log threshold, a number or a name: 0 panic, 1 error, 2 warn, 3 info, "
             "4 details, 5 debug, 6 fine"},
    {.id = int(Id::kSideProbeTimeout),
     .name = "side_probe_timeout",
     .env = {"SLIPSTREAM_SIDE_PROBE_TIMEOUT"},
     .unit = Unit::kMs,
     .def = 50,
     .min = 0,
     .max = 10000,
     .help = "librspreload, a peer on another host: how long a connect waits for the "
             "peer's answer on the side channel before it goes over kernel TCP "
             "(an ICMP port unreachable ends it at once); 0: never ask, kernel TCP"},
    {.id = int(Id::kSideProbeMemory),
     .name = "side_probe_memory",
     .env = {"SLIPSTREAM_SIDE_PROBE_MEMORY"},
     .unit = Unit::kMs,
     .def = 30000,
     .min = 0,
     .max = 3600000,
     .help = "how long a peer that did not answer a side-channel probe is remembered, "
             "so connects to it go straight to kernel TCP; 0: ask every time"},
};
static_assert(in_id_order(kRows));

}  // namespace

// Never destroyed under a late caller (a service thread at exit).
static_assert(std::is_trivially_destructible_v<Table<Id>>);
constinit Table<Id> table{"core", kRows};
const Enlisted enlisted{table};

}  // namespace ss::config::core
