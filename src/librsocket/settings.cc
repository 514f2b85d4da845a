// rsocket's table: one row per settings::Id, in Id order. A row with a file
// is read from the conf dir under upstream's file name; its environment
// name is SLIPSTREAM_RS_ plus that name in capitals.
#include "librsocket/settings.h"

// Makefile.am passes the configured ${sysconfdir}/rdma/rsocket; a build
// without it falls back to upstream's usual location.
#ifndef SS_RS_CONF_DIR
#define SS_RS_CONF_DIR "/etc/rdma/rsocket"
#endif

namespace ss::rs::settings {
namespace {

using config::Setting;
using config::Type;
using config::Unit;

constexpr int64_t kU16Max = 0xFFFE;  // upstream reads %hu; 0xFFFF is reserved
constexpr int64_t kU32Max = 0xFFFFFFFFll;
constexpr int64_t kI32Max = 0x7FFFFFFFll;

// Upstream (rs_configure) turns a send buffer below RS_SNDLOWAT into twice it.
constexpr int64_t wmem_quirk(int64_t v) {
  constexpr int64_t kSndLowat = 2048;
  return v < kSndLowat ? kSndLowat << 1 : v;
}

constexpr Setting kRows[] = {
    {.id = int(Id::kConfDir),
     .name = "rs_conf_dir",
     .env = {"SLIPSTREAM_RS_CONF_DIR"},
     .type = Type::kString,
     .str_def = SS_RS_CONF_DIR,
     .help = "directory holding the rsocket configuration files"},
    {.id = int(Id::kPollingTime),
     .name = "polling_time",
     .env = {"SLIPSTREAM_RS_POLLING_TIME"},
     .file = "polling_time",
     .unit = Unit::kUs,
     .def = 10,
     .max = kU32Max,
     .help = "busy polling before a blocking call sleeps"},
    {.id = int(Id::kWakeUpInterval),
     .name = "wake_up_interval",
     .env = {"SLIPSTREAM_RS_WAKE_UP_INTERVAL"},
     .file = "wake_up_interval",
     .unit = Unit::kMs,
     .def = 500,
     .max = kI32Max,
     .help = "longest sleep inside rpoll before it re-checks its sockets"},
    {.id = int(Id::kInlineDefault),
     .name = "inline_default",
     .env = {"SLIPSTREAM_RS_INLINE_DEFAULT"},
     .file = "inline_default",
     .unit = Unit::kBytes,
     .def = 64,
     .max = kU16Max,
     .help = "default inline data size"},
    {.id = int(Id::kSqsizeDefault),
     .name = "sqsize_default",
     .env = {"SLIPSTREAM_RS_SQSIZE_DEFAULT"},
     .file = "sqsize_default",
     .def = 384,
     .min = 1,
     .max = kU16Max,
     .help = "default send queue size, in entries"},
    {.id = int(Id::kRqsizeDefault),
     .name = "rqsize_default",
     .env = {"SLIPSTREAM_RS_RQSIZE_DEFAULT"},
     .file = "rqsize_default",
     .def = 384,
     .min = 1,
     .max = kU16Max,
     .help = "default receive queue size, in entries"},
    {.id = int(Id::kMemDefault),
     .name = "mem_default",
     .env = {"SLIPSTREAM_RS_MEM_DEFAULT"},
     .file = "mem_default",
     .unit = Unit::kBytes,
     .def = 131072,
     .min = 1,
     .max = kU32Max,
     .help = "default receive buffer size"},
    {.id = int(Id::kWmemDefault),
     .name = "wmem_default",
     .env = {"SLIPSTREAM_RS_WMEM_DEFAULT"},
     .file = "wmem_default",
     .unit = Unit::kBytes,
     .def = 131072,
     .max = kU32Max,
     .help = "default send buffer size; below 2048 it becomes 4096, as upstream",
     .adjust = wmem_quirk},
    {.id = int(Id::kIomapSize),
     .name = "iomap_size",
     .env = {"SLIPSTREAM_RS_IOMAP_SIZE"},
     .file = "iomap_size",
     .def = 0,
     .max = 32512,
     .help = "default RDMA_IOMAPSIZE, in entries (sent in 8 bits: above 128, rounded down "
             "to a multiple of 256)"},
    {.id = int(Id::kCloseLinger),
     .name = "close_linger",
     .env = {"SLIPSTREAM_RS_CLOSE_LINGER"},
     .unit = Unit::kMs,
     .def = 500,
     .max = 60000,
     .help = "how long a closed connection waits, in the background, for a peer that may "
             "still be reading to close its end before it is torn down (0: at once, as "
             "upstream); SO_LINGER overrides it per socket"},
    {.id = int(Id::kConnectTimeout),
     .name = "connect_timeout",
     .env = {"SLIPSTREAM_RS_CONNECT_TIMEOUT"},
     .unit = Unit::kMs,
     .def = 127000,
     .min = 1,
     .max = kI32Max,
     .help = "how long a connect waits for the peer's answer before it fails with ETIMEDOUT "
             "(default: Linux TCP's connect to a silent host, 6 SYN retries)"},
    {.id = int(Id::kDgramKernelRatio),
     .name = "dgram_kernel_ratio",
     .env = {"SLIPSTREAM_RS_DGRAM_KERNEL_RATIO"},
     .def = 64,
     .min = 1,
     .max = 1 << 20,
     .help = "a datagram rsocket with a shared-memory ring looks at its ring this many "
             "times per look at its kernel socket while it polls, and answers its "
             "rendezvous every this-many-th kernel look (1: every time; as "
             "VMA_RX_POLL_OS_RATIO); readiness the kernel reported, non-blocking calls "
             "and every sleep look at both"},
};
static_assert(config::in_id_order(kRows));

}  // namespace

constinit config::Table<Id> table{"rsocket", kRows, Id::kConfDir};
const config::Enlisted enlisted{table};

}  // namespace ss::rs::settings
