// The preload's settings table (component "preload"). It lives in
// librsocket, which slipstream-config loads, so the tool lists it without
// loading the preload itself (that would interpose on the tool).
#include <cerrno>
#include <cstring>
#include <string>

#include "core/base/config.h"
#include "librsocket/preload_hooks.h"

#define SS_EXPORT extern "C" __attribute__((visibility("default")))

namespace ss::rs::preload_settings {
namespace {

enum class Id : int { kEnabled, kSqSize, kRqSize, kInline, kStatsDir, kKernelPorts, kCount };
static_assert(int(Id::kCount) == SS_RSPRELOAD_SETTING_COUNT);

using config::Setting;
using config::Type;
using config::Unit;

constexpr int64_t kU16Max = 0xFFFE;

constexpr Setting kRows[] = {
    {.id = int(Id::kEnabled),
     .name = "enabled",
     .env = {"SLIPSTREAM_PRELOAD"},
     .def = 1,
     .min = 0,
     .max = 1,
     .help = "0: librspreload leaves every socket to the kernel (the program runs as "
             "without it)"},
    {.id = int(Id::kSqSize),
     .name = "sq_size",
     .env = {"RS_SQ_SIZE", "SLIPSTREAM_PRELOAD_SQ_SIZE"},
     .def = 0,
     .max = kU16Max,
     .help = "RDMA_SQSIZE of each rsocket the preload makes (0: rsocket's sqsize_default)"},
    {.id = int(Id::kRqSize),
     .name = "rq_size",
     .env = {"RS_RQ_SIZE", "SLIPSTREAM_PRELOAD_RQ_SIZE"},
     .def = 0,
     .max = kU16Max,
     .help = "RDMA_RQSIZE of each rsocket the preload makes (0: rsocket's rqsize_default)"},
    {.id = int(Id::kInline),
     .name = "inline",
     .env = {"RS_INLINE", "SLIPSTREAM_PRELOAD_INLINE"},
     .unit = Unit::kBytes,
     .def = 0,
     .max = kU16Max,
     .help = "RDMA_INLINE of each rsocket the preload makes (0: rsocket's inline_default)"},
    {.id = int(Id::kStatsDir),
     .name = "stats_dir",
     .env = {"SLIPSTREAM_PRELOAD_STATS"},
     .type = Type::kString,
     .str_def = "",
     .help = "directory where each process keeps rspreload.PID: its connections on "
             "rsockets and on kernel TCP (empty: none)"},
    {.id = int(Id::kKernelPorts),
     .name = "kernel_ports",
     .env = {"SLIPSTREAM_PRELOAD_KERNEL_PORTS"},
     .type = Type::kString,
     .str_def = "",
     .help = "ports left to kernel TCP: connects to them and listeners on them "
             "(22,5432,8000-8099; empty: none)"},
};
static_assert(config::in_id_order(kRows));

constinit config::Table<Id> table{"preload", kRows};
const config::Enlisted enlisted{table};

}  // namespace
}  // namespace ss::rs::preload_settings

using ss::rs::preload_settings::Id;
using ss::rs::preload_settings::table;

SS_EXPORT long long ss_rspreload_setting(int id) {
  if (id < 0 || id >= SS_RSPRELOAD_SETTING_COUNT) return 0;
  return table.get_int(static_cast<Id>(id));
}

SS_EXPORT long ss_rspreload_setting_str(int id, char* buf, unsigned long cap) {
  if ((id != SS_RSPRELOAD_STATS_DIR && id != SS_RSPRELOAD_KERNEL_PORTS) || !buf || !cap) {
    errno = EINVAL;
    return -1;
  }
  try {
    std::string v = table.get_string(static_cast<Id>(id));
    size_t n = v.size() < cap - 1 ? v.size() : cap - 1;
    memcpy(buf, v.data(), n);
    buf[n] = 0;
    return static_cast<long>(n);
  } catch (...) {
    errno = ENOMEM;
    return -1;
  }
}
