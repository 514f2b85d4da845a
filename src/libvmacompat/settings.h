// The VMA face's settings: libvma's VMA_* environment variables that
// Slipstream reads, with libvma's defaults and value syntax (libvma.7),
// registered as the "vma" table so slipstream-config lists
// them. VMA_SPEC's profile (settings_spec.cc) supplies defaults that an
// explicit variable overrides, as libvma applies the profile first.
// Reads are cached: get() is two atomic loads once the table is loaded.
#pragma once
#include "core/base/api.h"
#include <cstdint>
#include <string>

#include "core/base/config.h"

namespace ss::vma::settings {

enum class Id : int {
  kTraceLevel,              // VMA_TRACELEVEL: a level name or 0..6 (libvma's numbering)
  kLogDetails,              // VMA_LOG_DETAILS
  kLogColors,               // VMA_LOG_COLORS
  kLogFile,                 // VMA_LOG_FILE ("": stderr; %d: the pid)
  kConfigFile,              // VMA_CONFIG_FILE
  kApplicationId,           // VMA_APPLICATION_ID
  kStatsFile,               // VMA_STATS_FILE
  kStatsShmemDir,           // VMA_STATS_SHMEM_DIR ("": no shared-memory statistics)
  kStatsFdNum,              // VMA_STATS_FD_NUM
  kSpec,                    // VMA_SPEC: a profile name or its number
  kOffloadedSockets,        // VMA_OFFLOADED_SOCKETS
  kRxBufs,                  // VMA_RX_BUFS
  kTxBufs,                  // VMA_TX_BUFS
  kRxWre,                   // VMA_RX_WRE: the AF_XDP fill and rx rings (ring_depth.h)
  kTxWre,                   // VMA_TX_WRE: the tx and completion rings
  kRxPoll,                  // VMA_RX_POLL (-1: forever; 0 becomes 1)
  kRxPollInit,              // VMA_RX_POLL_INIT
  kRxUdpPollOsRatio,        // VMA_RX_UDP_POLL_OS_RATIO
  kRxBytesMin,              // VMA_RX_BYTES_MIN
  kSelectPoll,              // VMA_SELECT_POLL (us; -1: forever)
  kSelectPollOsRatio,       // VMA_SELECT_POLL_OS_RATIO
  kSelectSkipOs,            // VMA_SELECT_SKIP_OS
  kProgressEngineInterval,  // VMA_PROGRESS_ENGINE_INTERVAL (ms)
  kRingAllocationLogicRx,   // VMA_RING_ALLOCATION_LOGIC_RX: 0, 1, 10, 20, 30, 31
  kRingAllocationLogicTx,   // VMA_RING_ALLOCATION_LOGIC_TX
  kThreadMode,              // VMA_THREAD_MODE
  kMemAllocType,            // VMA_MEM_ALLOC_TYPE: 0 anonymous, 1 contiguous, 2 hugepages
  kFork,                    // VMA_FORK
  kCloseOnDup2,             // VMA_CLOSE_ON_DUP2
  kMtu,                     // VMA_MTU (0: the interface's)
  kMss,                     // VMA_MSS (0: MTU - 40)
  kTxMcLoopback,            // VMA_TX_MC_LOOPBACK
  kTxNonblockedEagains,     // VMA_TX_NONBLOCKED_EAGAINS
  kSocketXtreme,            // VMA_SOCKETXTREME
  kHandleSigintr,           // VMA_HANDLE_SIGINTR
  kTcpOffload,              // SLIPSTREAM_VMA_TCP: TCP on the rings (0: the kernel's)
  kTcpCcAlgo,               // VMA_TCP_CC_ALGO: 0 NewReno, 1 CUBIC, 2 none
  kTcpNodelay,              // VMA_TCP_NODELAY: TCP_NODELAY on every offloaded connection
  kTcpQuickack,             // VMA_TCP_QUICKACK: every segment acknowledged at once
  kTcpTimestampOption,      // VMA_TCP_TIMESTAMP_OPTION: 0 off, 1 on, 2 the kernel's tcp_timestamps
  kTcpTimerResolution,      // VMA_TCP_TIMER_RESOLUTION_MSEC (ms): read; timers are exact
  kTcpMaxSynRate,           // VMA_TCP_MAX_SYN_RATE: SYNs a listener takes a second (0: any)
  kTcpCtlThread,            // VMA_TCP_CTL_THREAD: read; the vma-tcp thread serves
  kTxSegsTcp,               // VMA_TX_SEGS_TCP: read; segments are not pooled
  kRxPollOnTxTcp,           // VMA_RX_POLL_ON_TX_TCP: read; a send reads the rings always
  kTcpMsl,                  // SLIPSTREAM_VMA_TCP_MSL (ms): TIME-WAIT lasts twice this
  kTcpMinRto,               // SLIPSTREAM_VMA_TCP_MIN_RTO (ms): the RTO's floor
  kTcpSack,                 // SLIPSTREAM_VMA_TCP_SACK: SACK offered and taken
  kTcpGso,                  // SLIPSTREAM_VMA_TCP_GSO: copy-mode rings' TCP by packet socket, GSO
  kTcpForkJoin,             // SLIPSTREAM_VMA_TCP_FORK_JOIN: a fork child's listener joins the rings
  kCount
};

SS_API extern config::Table<Id> table;

inline int64_t get(Id id) { return table.get_int(id); }
inline std::string get_string(Id id) { return table.get_string(id); }

// libvma's internal log levels (VLOG_*), which VMA_TRACELEVEL's numbers are
// not: "4" means debug, internal 5.
enum class TraceLevel : int {
  kNone = -1,
  kPanic,
  kError,
  kWarn,
  kInfo,
  kDetails,
  kDebug,
  kFine,
  kFiner,
  kAll
};
SS_API TraceLevel trace_level();

// VMA_SPEC's profiles, by libvma's enum order (its numeric form).
enum class Spec : int {
  kNone,
  kUltraLatency,
  kLatency,
  k29West,
  kWombatFh,
  kMcd,
  kMcdIrq,
  kRti,
  k7750,
  kMultiRingLatency
};
Spec spec();

// VMA_RING_ALLOCATION_LOGIC_RX/_TX as libvma's numbers (0, 1, 10, 20, 30, 31).
SS_API int ring_allocation_logic(Id id);

// A path setting with its first "%d" replaced by `pid` (VMA_LOG_FILE,
// VMA_STATS_FILE), as libvma does.
SS_API std::string path_with_pid(Id id, long pid);

}  // namespace ss::vma::settings
