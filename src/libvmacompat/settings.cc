// The VMA face's table: one row per settings::Id, in Id order, each read
// from libvma's variable name. Defaults are libvma's code defaults (where
// its README differs, the code wins: VMA_FORK 1, VMA_MEM_ALLOC_TYPE 2).
// Enumerations list every spelling libvma accepts as a choice; the
// accessors below turn a choice into libvma's number.
#include "libvmacompat/settings.h"

#include <cstdlib>

#include "core/base/config_parse.h"

#include "libvmacompat/settings_choices.h"

// Makefile.am passes ${sysconfdir}/libvma.conf; a build without it falls
// back to libvma's location.
#ifndef SS_VMA_CONF_FILE
#define SS_VMA_CONF_FILE "/etc/libvma.conf"
#endif

namespace ss::vma::settings {
namespace {

using config::Setting;
using config::Type;
using config::Unit;

constexpr int64_t kI32Max = 0x7FFFFFFFll;
// Ring entries: a ConnectX queue pair's limit, libvma's practical one; it
// keeps a queue's UMEM within 256 MiB (ring_depth.h).
constexpr int64_t kMaxWre = 32768;

// libvma forces a zero VMA_RX_POLL to one poll.
constexpr int64_t at_least_one_poll(int64_t v) { return v == 0 ? 1 : v; }

constexpr Setting kRows[] = {
    {.id = int(Id::kTraceLevel),
     .name = "tracelevel",
     .env = {"VMA_TRACELEVEL"},
     .type = Type::kEnum,
     .def = kTraceInfoChoice,
     .str_def = kTraceChoices,
     .help = "log level: none, panic (0), error (1), warn (2), info (3), details, debug (4), "
             "fine (5), finer (6), all; numbers are libvma's, not its internal levels"},
    {.id = int(Id::kLogDetails),
     .name = "log_details",
     .env = {"VMA_LOG_DETAILS"},
     .def = 0,
     .max = 3,
     .help = "log line prefix: 0 basic, 1 thread id, 2 pid too, 3 time too"},
    {.id = int(Id::kLogColors),
     .name = "log_colors",
     .env = {"VMA_LOG_COLORS"},
     .def = 1,
     .max = 1,
     .help = "colour log lines on a terminal"},
    {.id = int(Id::kLogFile),
     .name = "log_file",
     .env = {"VMA_LOG_FILE"},
     .type = Type::kString,
     .str_def = "",
     .help = "log to this file instead of stderr (\"\"); a %d is replaced by the pid",
     .empty_ok = true},
    {.id = int(Id::kConfigFile),
     .name = "config_file",
     .env = {"VMA_CONFIG_FILE"},
     .type = Type::kString,
     .str_def = SS_VMA_CONF_FILE,
     .help = "the libvma.conf rules file (libvma.conf(5))"},
    {.id = int(Id::kApplicationId),
     .name = "application_id",
     .env = {"VMA_APPLICATION_ID"},
     .type = Type::kString,
     .str_def = "VMA_DEFAULT_APPLICATION_ID",
     .help = "selects libvma.conf's application-id sections; with the default only "
             "sections whose id is * apply"},
    {.id = int(Id::kStatsFile),
     .name = "stats_file",
     .env = {"VMA_STATS_FILE"},
     .type = Type::kString,
     .str_def = "",
     .help = "per-socket statistics written here at close (\"\": none); a %d is replaced "
             "by the pid",
     .empty_ok = true},
    {.id = int(Id::kStatsShmemDir),
     .name = "stats_shmem_dir",
     .env = {"VMA_STATS_SHMEM_DIR"},
     .type = Type::kString,
     .str_def = "/tmp/",
     .help = "directory of the vmastat.<pid> shared-memory statistics (\"\": none)",
     .empty_ok = true},
    {.id = int(Id::kStatsFdNum),
     .name = "stats_fd_num",
     .env = {"VMA_STATS_FD_NUM"},
     .def = 100,
     .max = 1024,
     .help = "sockets tracked in the shared-memory statistics"},
    {.id = int(Id::kSpec),
     .name = "spec",
     .env = {"VMA_SPEC"},
     .type = Type::kEnum,
     .def = 0,
     .str_def = kSpecChoices,
     .help = "a tuning profile, by name or number (latency = 15, ultra-latency = 10, ...); "
             "its values are defaults an explicit variable overrides"},
    {.id = int(Id::kOffloadedSockets),
     .name = "offloaded_sockets",
     .env = {"VMA_OFFLOADED_SOCKETS"},
     .def = 1,
     .max = 1,
     .help = "new sockets are offloaded (1) or kernel sockets until thread_offload (0)"},
    {.id = int(Id::kRxBufs),
     .name = "rx_bufs",
     .env = {"VMA_RX_BUFS"},
     .def = 200000,
     .min = 1,
     .max = kI32Max,
     .help = "receive buffers in the global pool"},
    {.id = int(Id::kTxBufs),
     .name = "tx_bufs",
     .env = {"VMA_TX_BUFS"},
     .def = 200000,
     .min = 1,
     .max = kI32Max,
     .help = "send buffers in the global pool"},
    {.id = int(Id::kRxWre),
     .name = "rx_wre",
     .env = {"VMA_RX_WRE"},
     .def = 16000,
     .min = 1,
     .max = kMaxWre,
     .help = "entries of each receive queue's AF_XDP fill and rx rings, rounded up to a "
             "power of two (at least 64); 1024 with VMA_SOCKETXTREME=1"},
    {.id = int(Id::kTxWre),
     .name = "tx_wre",
     .env = {"VMA_TX_WRE"},
     .def = 2048,
     .min = 1,
     .max = kMaxWre,
     .help = "entries of each queue's AF_XDP tx and completion rings, rounded the same way"},
    {.id = int(Id::kRxPoll),
     .name = "rx_poll",
     .env = {"VMA_RX_POLL"},
     .def = 100000,
     .min = -1,
     .max = kI32Max,
     .help = "ring polls in a blocking receive before it sleeps (-1: poll forever; 0 is "
             "taken as 1)",
     .adjust = at_least_one_poll},
    {.id = int(Id::kRxPollInit),
     .name = "rx_poll_init",
     .env = {"VMA_RX_POLL_INIT"},
     .def = 0,
     .min = -1,
     .max = kI32Max,
     .help = "polls of a UDP socket before its first IP_ADD_MEMBERSHIP"},
    {.id = int(Id::kRxUdpPollOsRatio),
     .name = "rx_udp_poll_os_ratio",
     .env = {"VMA_RX_UDP_POLL_OS_RATIO"},
     .def = 100,
     .max = kI32Max,
     .help = "a blocking receive checks the kernel socket once per this many ring polls "
             "(0: never)"},
    {.id = int(Id::kRxBytesMin),
     .name = "rx_bytes_min",
     .env = {"VMA_RX_BYTES_MIN"},
     .unit = Unit::kBytes,
     .def = 65536,
     .max = kI32Max,
     .help = "smallest receive queue per socket, whatever SO_RCVBUF says"},
    {.id = int(Id::kSelectPoll),
     .name = "select_poll",
     .env = {"VMA_SELECT_POLL"},
     .unit = Unit::kUs,
     .def = 100000,
     .min = -1,
     .max = kI32Max,
     .help = "busy polling in select, poll and epoll_wait before they sleep (-1: forever, "
             "0: sleep at once)"},
    {.id = int(Id::kSelectPollOsRatio),
     .name = "select_poll_os_ratio",
     .env = {"VMA_SELECT_POLL_OS_RATIO"},
     .def = 10,
     .max = kI32Max,
     .help = "select/poll/epoll check kernel descriptors once per this many ring polls "
             "(0: never while polling)"},
    {.id = int(Id::kSelectSkipOs),
     .name = "select_skip_os",
     .env = {"VMA_SELECT_SKIP_OS"},
     .def = 4,
     .max = kI32Max,
     .help = "select/poll/epoll skip the kernel check this many times in a row"},
    {.id = int(Id::kProgressEngineInterval),
     .name = "progress_engine_interval",
     .env = {"VMA_PROGRESS_ENGINE_INTERVAL"},
     .unit = Unit::kMs,
     .def = 10,
     .max = kI32Max,
     .help = "how often the internal thread drains the rings (0: never)"},
    {.id = int(Id::kRingAllocationLogicRx),
     .name = "ring_allocation_logic_rx",
     .env = {"VMA_RING_ALLOCATION_LOGIC_RX"},
     .type = Type::kEnum,
     .def = 0,
     .str_def = kRingLogicChoices,
     .help = "receive rings: 0 per interface, 1 per IP, 10 per socket, 20 per thread, "
             "30 per core, 31 per core with attached threads"},
    {.id = int(Id::kRingAllocationLogicTx),
     .name = "ring_allocation_logic_tx",
     .env = {"VMA_RING_ALLOCATION_LOGIC_TX"},
     .type = Type::kEnum,
     .def = 0,
     .str_def = kRingLogicChoices,
     .help = "send rings, as ring_allocation_logic_rx"},
    {.id = int(Id::kThreadMode),
     .name = "thread_mode",
     .env = {"VMA_THREAD_MODE"},
     .def = 1,
     .max = 3,
     .help = "0 single thread, 1 multi (spin locks), 2 multi (mutexes), 3 more threads "
             "than cores"},
    {.id = int(Id::kMemAllocType),
     .name = "mem_alloc_type",
     .env = {"VMA_MEM_ALLOC_TYPE"},
     .def = 2,
     .max = 2,
     .help = "buffer memory: 0 anonymous, 1 contiguous, 2 hugepages (falls back to "
             "anonymous with a warning)"},
    {.id = int(Id::kFork),
     .name = "fork",
     .env = {"VMA_FORK"},
     .def = 1,
     .max = 1,
     .help = "prepare for fork() so a child's inherited sockets keep working"},
    {.id = int(Id::kCloseOnDup2),
     .name = "close_on_dup2",
     .env = {"VMA_CLOSE_ON_DUP2"},
     .def = 1,
     .max = 1,
     .help = "dup2 onto an offloaded socket closes it first"},
    {.id = int(Id::kMtu),
     .name = "mtu",
     .env = {"VMA_MTU"},
     .def = 0,
     .max = 65535,
     .help = "largest IP datagram sent on the rings (0: the route's MTU); larger ones go "
             "through the kernel, which fragments them"},
    {.id = int(Id::kMss),
     .name = "mss",
     .env = {"VMA_MSS"},
     .def = 0,
     .max = 65535,
     .help = "TCP MSS (0: MTU - 40)"},
    {.id = int(Id::kTxMcLoopback),
     .name = "tx_mc_loopback",
     .env = {"VMA_TX_MC_LOOPBACK"},
     .def = 1,
     .max = 1,
     .help = "initial IP_MULTICAST_LOOP of a socket"},
    {.id = int(Id::kTxNonblockedEagains),
     .name = "tx_nonblocked_eagains",
     .env = {"VMA_TX_NONBLOCKED_EAGAINS"},
     .def = 0,
     .max = 1,
     .help = "a UDP send the ring has no room for fails with EAGAIN (1) or is dropped (0)"},
    {.id = int(Id::kSocketXtreme),
     .name = "socketxtreme",
     .env = {"VMA_SOCKETXTREME"},
     .def = 0,
     .max = 1,
     .help = "socketXtreme mode (the Extra API's ring polling)"},
    {.id = int(Id::kHandleSigintr),
     .name = "handle_sigintr",
     .env = {"VMA_HANDLE_SIGINTR"},
     .def = 0,
     .max = 1,
     .help = "intercept SIGINT handlers"},
    {.id = int(Id::kTcpOffload),
     .name = "tcp_offload",
     .env = {"SLIPSTREAM_VMA_TCP"},
     .def = 1,
     .max = 1,
     .help = "TCP connections a program opens or accepts, on the rings (0: the kernel's)"},
    {.id = int(Id::kTcpCcAlgo),
     .name = "tcp_cc_algo",
     .env = {"VMA_TCP_CC_ALGO"},
     .def = 0,
     .max = 2,
     .help = "TCP congestion control: 0 NewReno, 1 CUBIC, 2 none"},
    {.id = int(Id::kTcpNodelay),
     .name = "tcp_nodelay",
     .env = {"VMA_TCP_NODELAY"},
     .def = 0,
     .max = 1,
     .help = "TCP_NODELAY on every offloaded connection (no Nagle)"},
    {.id = int(Id::kTcpQuickack),
     .name = "tcp_quickack",
     .env = {"VMA_TCP_QUICKACK"},
     .def = 0,
     .max = 1,
     .help = "acknowledge every TCP segment at once (no delayed ACK)"},
    {.id = int(Id::kTcpTimestampOption),
     .name = "tcp_timestamp_option",
     .env = {"VMA_TCP_TIMESTAMP_OPTION"},
     .def = 0,
     .max = 2,
     .help = "TCP timestamps (RFC 7323: RTT and PAWS): 0 off, 1 on, 2 as the kernel's "
             "net.ipv4.tcp_timestamps"},
    {.id = int(Id::kTcpTimerResolution),
     .name = "tcp_timer_resolution_msec",
     .env = {"VMA_TCP_TIMER_RESOLUTION_MSEC"},
     .unit = Unit::kMs,
     .def = 100,
     .max = kI32Max,
     .help = "read for libvma's sake: TCP timers here fire at their microsecond"},
    {.id = int(Id::kTcpMaxSynRate),
     .name = "tcp_max_syn_rate",
     .env = {"VMA_TCP_MAX_SYN_RATE"},
     .def = 0,
     .max = 100000,
     .help = "new SYNs an offloaded listener takes a second, the rest dropped (0: any)"},
    {.id = int(Id::kTcpCtlThread),
     .name = "tcp_ctl_thread",
     .env = {"VMA_TCP_CTL_THREAD"},
     .def = 0,
     .max = 2,
     .help = "read for libvma's sake: the vma-tcp thread serves TCP while the program "
             "does not call"},
    {.id = int(Id::kTxSegsTcp),
     .name = "tx_segs_tcp",
     .env = {"VMA_TX_SEGS_TCP"},
     .def = 1000000,
     .max = kI32Max,
     .help = "read for libvma's sake: TCP segments are not taken from a pool"},
    {.id = int(Id::kRxPollOnTxTcp),
     .name = "rx_poll_on_tx_tcp",
     .env = {"VMA_RX_POLL_ON_TX_TCP"},
     .def = 0,
     .max = 1,
     .help = "read for libvma's sake: a TCP send reads the rings first always (its ACKs)"},
    {.id = int(Id::kTcpMsl),
     .name = "tcp_msl",
     .env = {"SLIPSTREAM_VMA_TCP_MSL"},
     .unit = Unit::kMs,
     .def = 30000,
     .min = 1,
     .max = kI32Max,
     .help = "maximum segment lifetime: TIME-WAIT lasts twice this (Linux: 60 s in all)"},
    {.id = int(Id::kTcpMinRto),
     .name = "tcp_min_rto",
     .env = {"SLIPSTREAM_VMA_TCP_MIN_RTO"},
     .unit = Unit::kMs,
     .def = 200,
     .min = 1,
     .max = 120000,
     .help = "the TCP retransmission timeout's floor (Linux's: 200 ms)"},
    {.id = int(Id::kTcpSack),
     .name = "tcp_sack",
     .env = {"SLIPSTREAM_VMA_TCP_SACK"},
     .def = 1,
     .max = 1,
     .help = "TCP selective acknowledgments (RFC 2018) offered and taken"},
    {.id = int(Id::kTcpGso),
     .name = "tcp_gso",
     .env = {"SLIPSTREAM_VMA_TCP_GSO"},
     .def = 1,
     .max = 1,
     .help = "where the rings copy, TCP segments leave by a packet socket, bursts merged for GSO"},
    {.id = int(Id::kTcpForkJoin),
     .name = "tcp_fork_join",
     .env = {"SLIPSTREAM_VMA_TCP_FORK_JOIN"},
     .def = 1,
     .max = 2,
     .help = "a fork child's inherited listener, or a connection its parent closed, gets rings "
             "of its own beside its parent's (0: they go to the kernel; 2: only in a child that "
             "kept its parent's user)"},
};
static_assert(config::in_id_order(kRows));

}  // namespace

constinit config::Table<Id> table{"vma", kRows};
const config::Enlisted enlisted{table};

TraceLevel trace_level() {
  const int64_t i = get(Id::kTraceLevel);
  return i >= 0 && i < int64_t(sizeof kTraceLevels / sizeof kTraceLevels[0])
             ? static_cast<TraceLevel>(kTraceLevels[i])
             : TraceLevel::kInfo;
}

Spec spec() { return spec_of_choice(static_cast<int>(get(Id::kSpec))); }

int ring_allocation_logic(Id id) {
  char text[8];
  if (!config::choice_at(kRingLogicChoices, get(id), text, sizeof text)) return 0;
  return atoi(text);
}

std::string path_with_pid(Id id, long pid) {
  std::string path = get_string(id);
  const size_t at = path.find("%d");
  if (at != std::string::npos) path.replace(at, 2, std::to_string(pid));
  return path;
}

}  // namespace ss::vma::settings
