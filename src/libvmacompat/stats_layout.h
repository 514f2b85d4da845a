// The vmastat.<pid> file (libvma's layout): one per process in
// VMA_STATS_SHMEM_DIR, a header with the global blocks (rings, buffer
// pools, iomux) followed by `fd_blocks` socket blocks. The reference names
// libvma's fields but not their exact layout, and libvma's reader checks an
// md5 of its own header, so no layout of ours could satisfy a real
// vma_stats: this layout is Slipstream's, versioned (kVersion, kProtocol),
// with libvma's counters under libvma's names, widened to 64 bits.
//
// Plain data, fixed for LP64 (static_asserts below): the publisher writes it
// through std::atomic_ref, the reader copies it out of file bytes it read.
// Every block starts with `state` and `seq`: a block's identity (fd, type,
// addresses, name) is written with seq odd and is valid while seq is even
// and unchanged; its counters have one writer each and are read one by one.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ss::vma::stats {

inline constexpr char kMagic[8] = {'S', 'S', 'V', 'M', 'A', 'S', 'T', '\0'};
inline constexpr uint32_t kVersion = 2;
inline constexpr char kProtocol[] = "slipstream-vmastat-2";
inline constexpr char kFilePrefix[] = "vmastat.";
// libvma's defaults: VMA_STATS_SHMEM_DIR and VMA_STATS_FD_NUM (and its cap).
inline constexpr char kDefaultDir[] = "/tmp/";
inline constexpr uint32_t kDefaultFdBlocks = 100;
inline constexpr uint32_t kMaxFdBlocks = 1024;

// Header::state and every block's state.
enum : uint32_t { kFree = 0, kClaimed = 1, kLive = 2, kClosing = 3 };

// Counters of a socket block: libvma's socket_counters_t in its order, then
// tx eagain/retransmits/dummy, our TCP connection's counters (libvma has
// none), and the gauges socket_stats_t keeps beside them, then ours.
enum SocketCounter : uint32_t {
  kRxPackets,
  kRxBytes,
  kRxPollHit,
  kRxPollMiss,
  kRxReadyPktMax,
  kRxReadyByteDrop,
  kRxReadyPktDrop,
  kRxReadyByteMax,
  kRxErrors,
  kRxEagain,
  kRxOsPackets,
  kRxOsBytes,
  kRxPollOsHit,
  kRxOsErrors,
  kRxOsEagain,
  kRxMigrations,
  kTxPackets,
  kTxBytes,
  kTxErrors,
  kTxDrops,
  kTxOsPackets,
  kTxOsBytes,
  kTxOsErrors,
  kTxOsEagain,
  kTxMigrations,
  kTxEagain,
  kTxRetransmits,
  kTxDummy,
  kTcpRtoExpiries,
  kTcpOutOfOrder,        // segments that arrived ahead of a gap
  kTcpSackRecoveries,    // recoveries entered by SACK or RACK
  kTcpDupackRecoveries,  // recoveries entered by duplicate ACKs (no SACK)
  kTcpZeroWindowProbes,
  // Gauges (set, not added); with kRxReadyPktMax and kRxReadyByteMax, never
  // shown per second.
  kRxReadyPktCount,
  kRxReadyByteCount,
  kRxReadyByteLimit,
  kRxZcopyPktCount,
  kLastRxTid,
  kLastTxTid,
  kTcpState,  // Linux's TCP_ESTABLISHED ... (netinet/tcp.h); 0: none published yet
  kTcpSrttUs,
  kTcpRttVarUs,
  kTcpRtoUs,
  kTcpCwnd,    // segments
  kTcpSndWnd,  // bytes: the peer's window
  kTcpRcvWnd,  // bytes: ours, as advertised
  kSocketCounters
};

// Global blocks share one shape; what their counters mean depends on kind.
enum GroupKind : uint32_t { kRing = 1, kBufferPool = 2, kIomux = 3 };
enum RingCounter : uint32_t {
  kRingRxPackets,
  kRingRxBytes,
  kRingTxPackets,
  kRingTxBytes,
  kRingTxRetransmits,
  kRingInterruptRequests,
  kRingInterruptsReceived,
  kRingModerationCount,
  kRingModerationPeriodUs,
  kRingXdpRedirected,
  kRingXdpDropped,
  kRingRxMalformed,
  kRingCounters
};
enum PoolCounter : uint32_t { kPoolSize, kPoolNoBuffers, kPoolCounters };
enum IomuxCounter : uint32_t {
  kIomuxPollHit,
  kIomuxPollMiss,
  kIomuxTimeouts,
  kIomuxErrors,
  kIomuxOsReady,
  kIomuxOffloadedReady,
  kIomuxCounters
};
inline constexpr uint32_t kGroupCounters = 16;
static_assert(kRingCounters <= kGroupCounters && kIomuxCounters <= kGroupCounters);
inline constexpr uint32_t kRingGroups = 16, kPoolGroups = 2, kIomuxGroups = 34;

struct GroupBlock {
  uint32_t state;
  uint32_t seq;
  uint32_t kind;  // GroupKind
  int32_t id;     // ring: its number; iomux: the epoll fd, -1 poll, -2 select
  char name[16];  // ring: the interface; not NUL-terminated when full
  uint64_t c[kGroupCounters];
};

struct SocketBlock {
  uint32_t state;
  uint32_t seq;
  int32_t fd;
  uint8_t socket_type;  // SOCK_DGRAM, SOCK_STREAM, ...
  uint8_t family;       // AF_INET, AF_INET6 (addresses below), 0 unknown
  uint8_t offloaded;
  uint8_t blocking;
  uint8_t mc_loop;
  uint8_t pad0;
  uint16_t bound_port;      // network order
  uint16_t connected_port;  // network order
  uint16_t pad1;
  uint8_t bound_addr[16];  // 4 bytes used for AF_INET
  uint8_t connected_addr[16];
  uint8_t mc_tx_if[16];
  uint64_t c[kSocketCounters];
};

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t header_size;  // sizeof(Header): the socket blocks start here
  uint32_t block_size;   // sizeof(SocketBlock)
  uint32_t fd_blocks;
  uint64_t file_size;  // header_size + fd_blocks * block_size
  uint32_t state;      // kLive once filled; kClosing at exit
  int32_t pid;
  uint64_t start_ticks;     // the process's start (/proc/PID/stat field 22)
  uint32_t reader_counter;  // libvma's; unused: our counters are live, not copied for readers
  uint8_t ver_info[4];      // major, minor, revision, release
  char protocol[32];        // kProtocol
  char app_name[32];        // the process's name (comm), for `vma_stats -n`
  GroupBlock rings[kRingGroups];
  GroupBlock pools[kPoolGroups];
  GroupBlock iomux[kIomuxGroups];
};

static_assert(sizeof(GroupBlock) == 160);
static_assert(sizeof(SocketBlock) == 72 + 8 * kSocketCounters);
static_assert(offsetof(SocketBlock, c) % 8 == 0 && sizeof(SocketBlock) % 8 == 0);
static_assert(offsetof(Header, rings) == 120);
static_assert(sizeof(Header) == 120 + 160 * (kRingGroups + kPoolGroups + kIomuxGroups));

inline constexpr uint64_t file_size_for(uint32_t fd_blocks) {
  return sizeof(Header) + uint64_t{fd_blocks} * sizeof(SocketBlock);
}

}  // namespace ss::vma::stats
