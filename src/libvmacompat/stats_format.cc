#include "libvmacompat/stats_format.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <iterator>

namespace ss::vma::stats {

namespace {

constexpr uint64_t kK = 1024;  // libvma's BYTES_TRAFFIC_UNIT
constexpr char kLine[] = "======================================================\n";

bool selected(const ViewOptions& v, int fd) {
  if (v.fd_ranges.empty()) return true;
  for (const auto& [lo, hi] : v.fd_ranges)
    if (fd >= lo && fd <= hi) return true;
  return false;
}

const char* type_name(int type) {
  switch (type) {
    case SOCK_STREAM:
      return "TCP";
    case SOCK_DGRAM:
      return "UDP";
    case SOCK_RAW:
      return "RAW";
    default:
      return "???";
  }
}

std::string address(int family, const uint8_t (&addr)[16], uint16_t port_n) {
  char text[INET6_ADDRSTRLEN] = "*";
  if (family == AF_INET || family == AF_INET6) inet_ntop(family, addr, text, sizeof text);
  const std::string port = port_n ? std::to_string(ntohs(port_n)) : "*";
  return family == AF_INET6 ? "[" + std::string(text) + "]:" + port
                            : std::string(text) + ":" + port;
}

bool any_address(const uint8_t (&addr)[16], uint16_t port) {
  static const uint8_t zero[16] = {};
  return port || memcmp(addr, zero, sizeof zero) != 0;
}

// Linux's TCP state numbers (netinet/tcp.h, TCP_ESTABLISHED = 1 ...) by name.
const char* tcp_state_name(uint64_t state) {
  static const char* const kNames[] = {"?",          "ESTABLISHED", "SYN_SENT",  "SYN_RECV",
                                       "FIN_WAIT1",  "FIN_WAIT2",   "TIME_WAIT", "CLOSE",
                                       "CLOSE_WAIT", "LAST_ACK",    "LISTEN",    "CLOSING"};
  return state < std::size(kNames) ? kNames[state] : "?";
}

std::string poll_percent(uint64_t hit, uint64_t miss) {
  if (hit + miss == 0) return "-";
  char buf[16];
  snprintf(buf, sizeof buf, "%.1f",
           100.0 * static_cast<double>(hit) / static_cast<double>(hit + miss));
  return buf;
}

void print_basic(FILE* out, const Snapshot& s, const ViewOptions& v) {
  const bool queue = v.level == 2;
  // Each label spans its columns below: 44, 17 and 37 characters.
  fprintf(out, " %-7s %s%s %s\n", "fd", "---------------- offloaded -----------------",
          queue ? " --- rx queue ----" : "", "---------------- os -----------------");
  fprintf(out, " %-6s %10s %8s %8s %8s %6s%s %10s %8s %8s %8s\n", "", "pkt", "Kbyte", "eagain",
          "error", "poll%", queue ? "   cur   max  drop" : "", "pkt", "Kbyte", "eagain", "error");
  for (const SocketEntry& e : s.sockets) {
    const SocketBlock& b = e.block;
    if (!selected(v, b.fd)) continue;
    const uint64_t* c = b.c;
    char q[32] = "";
    if (queue)
      snprintf(q, sizeof q, " %5" PRIu64 " %5" PRIu64 " %5" PRIu64, c[kRxReadyPktCount],
               c[kRxReadyPktMax], c[kRxReadyPktDrop]);
    fprintf(out,
            " %-3d %-3s %10" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %6s%s %10" PRIu64
            " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 "\n",
            b.fd, "Rx:", c[kRxPackets], c[kRxBytes] / kK, c[kRxEagain], c[kRxErrors],
            poll_percent(c[kRxPollHit], c[kRxPollMiss]).c_str(), q, c[kRxOsPackets],
            c[kRxOsBytes] / kK, c[kRxOsEagain], c[kRxOsErrors]);
    fprintf(out,
            " %-3s %-3s %10" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %6s%s %10" PRIu64
            " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 "\n",
            "", "Tx:", c[kTxPackets], c[kTxBytes] / kK, c[kTxEagain], c[kTxErrors], "",
            queue ? "                  " : "", c[kTxOsPackets], c[kTxOsBytes] / kK, c[kTxOsEagain],
            c[kTxOsErrors]);
  }
}

}  // namespace

bool socket_active(const SocketBlock& b) {
  for (const SocketCounter c :
       {kTxBytes, kTxPackets, kTxDrops, kTxErrors, kTxOsBytes, kTxOsPackets, kTxOsEagain,
        kTxOsErrors, kTxDummy, kRxBytes, kRxPackets, kRxEagain, kRxErrors, kRxOsBytes, kRxOsPackets,
        kRxOsEagain, kRxOsErrors, kRxPollHit, kRxPollMiss})
    if (b.c[c]) return true;
  return false;
}

void print_socket_full(FILE* out, const SocketBlock& b) {
  const uint64_t* c = b.c;
  fprintf(out, "%s\tFd=[%d]\n", kLine, b.fd);
  fprintf(out, "- %s, %s, %s", type_name(b.socket_type),
          b.offloaded ? "Offloaded" : "Not offloaded", b.blocking ? "Blocked" : "Non-blocked");
  if (b.socket_type == SOCK_DGRAM) {
    fprintf(out, ", MC Loop %s", b.mc_loop ? "Enabled" : "Disabled");
    if (any_address(b.mc_tx_if, 0))
      fprintf(out, ", MC IF = [%s]", address(b.family, b.mc_tx_if, 0).c_str());
  }
  fprintf(out, "\n");
  if (any_address(b.bound_addr, b.bound_port))
    fprintf(out, "- Local Address   = [%s]\n",
            address(b.family, b.bound_addr, b.bound_port).c_str());
  if (any_address(b.connected_addr, b.connected_port))
    fprintf(out, "- Foreign Address = [%s]\n",
            address(b.family, b.connected_addr, b.connected_port).c_str());
  if (c[kLastRxTid] || c[kLastTxTid])
    fprintf(out, "- Thread Id Rx: %5" PRIu64 ", Tx: %5" PRIu64 "\n", c[kLastRxTid], c[kLastTxTid]);
  bool active = false;
  auto line = [&](bool show, const char* fmt, auto... args) {
    if (!show) return;
    fprintf(out, fmt, args...);
    active = true;
  };
  line(c[kTxBytes] || c[kTxPackets] || c[kTxDrops] || c[kTxErrors],
       "Tx Offload: %" PRIu64 " KB / %" PRIu64 " / %" PRIu64 " / %" PRIu64
       " [kilobytes/packets/drops/errors]\n",
       c[kTxBytes] / kK, c[kTxPackets], c[kTxDrops], c[kTxErrors]);
  line(c[kTxOsBytes] || c[kTxOsPackets] || c[kTxOsEagain] || c[kTxOsErrors],
       "Tx OS info: %" PRIu64 " KB / %" PRIu64 " / %" PRIu64 " / %" PRIu64
       " [kilobytes/packets/eagains/errors]\n",
       c[kTxOsBytes] / kK, c[kTxOsPackets], c[kTxOsEagain], c[kTxOsErrors]);
  line(c[kTxDummy] != 0, "Tx Dummy messages: %" PRIu64 "\n", c[kTxDummy]);
  line(c[kRxBytes] || c[kRxPackets] || c[kRxEagain] || c[kRxErrors],
       "Rx Offload: %" PRIu64 " KB / %" PRIu64 " / %" PRIu64 " / %" PRIu64
       " [kilobytes/packets/eagains/errors]\n",
       c[kRxBytes] / kK, c[kRxPackets], c[kRxEagain], c[kRxErrors]);
  line(c[kRxOsBytes] || c[kRxOsPackets] || c[kRxOsEagain] || c[kRxOsErrors],
       "Rx OS info: %" PRIu64 " KB / %" PRIu64 " / %" PRIu64 " / %" PRIu64
       " [kilobytes/packets/eagains/errors]\n",
       c[kRxOsBytes] / kK, c[kRxOsPackets], c[kRxOsEagain], c[kRxOsErrors]);
  if (c[kRxPackets] || c[kRxReadyPktCount]) {
    line(true,
         "Rx byte: cur %" PRIu64 " / max %" PRIu64 " / dropped %" PRIu64 " / limit %" PRIu64 "\n",
         c[kRxReadyByteCount], c[kRxReadyByteMax], c[kRxReadyByteDrop], c[kRxReadyByteLimit]);
    line(true, "Rx pkt : cur %" PRIu64 " / max %" PRIu64 " / dropped %" PRIu64 "\n",
         c[kRxReadyPktCount], c[kRxReadyPktMax], c[kRxReadyPktDrop]);
  }
  line(c[kRxZcopyPktCount] != 0, "Rx zero copy buffers: cur %" PRIu64 "\n", c[kRxZcopyPktCount]);
  line(c[kRxPollHit] || c[kRxPollMiss], "Rx poll: %" PRIu64 " / %" PRIu64 " (%s%%) [miss/hit]\n",
       c[kRxPollMiss], c[kRxPollHit], poll_percent(c[kRxPollHit], c[kRxPollMiss]).c_str());
  line(c[kRxMigrations] || c[kTxMigrations], "Ring migrations Rx: %" PRIu64 ", Tx: %" PRIu64 "\n",
       c[kRxMigrations], c[kTxMigrations]);
  if (b.socket_type == SOCK_STREAM && c[kTcpState]) {  // our TCP's connection
    line(true, "TCP state: %s\n", tcp_state_name(c[kTcpState]));
    line(true, "TCP rtt: %" PRIu64 " / %" PRIu64 " / %" PRIu64 " [usec srtt/rttvar/rto]\n",
         c[kTcpSrttUs], c[kTcpRttVarUs], c[kTcpRtoUs]);
    line(true,
         "TCP window: %" PRIu64 " / %" PRIu64 " / %" PRIu64
         " [cwnd segments/send bytes/receive bytes]\n",
         c[kTcpCwnd], c[kTcpSndWnd], c[kTcpRcvWnd]);
    line(true,
         "TCP loss: %" PRIu64 " / %" PRIu64 " / %" PRIu64 " / %" PRIu64
         " [retransmits/RTO expiries/SACK recoveries/dup-ACK recoveries]\n",
         c[kTxRetransmits], c[kTcpRtoExpiries], c[kTcpSackRecoveries], c[kTcpDupackRecoveries]);
    line(true, "TCP out of order: %" PRIu64 ", zero window probes: %" PRIu64 "\n",
         c[kTcpOutOfOrder], c[kTcpZeroWindowProbes]);
  }
  if (!active) fprintf(out, "Rx and Tx were not active\n");
}

namespace {

void print_group(FILE* out, const GroupBlock& g) {
  const uint64_t* c = g.c;
  const std::string name(g.name, strnlen(g.name, sizeof g.name));
  fprintf(out, "%s", kLine);
  switch (g.kind) {
    case kRing:
      fprintf(out, "\tRING_XDP=[%d] %s\n", g.id, name.c_str());
      fprintf(out, "Rx Offload: %" PRIu64 " KB / %" PRIu64 " [kilobytes/packets]\n",
              c[kRingRxBytes] / kK, c[kRingRxPackets]);
      fprintf(out, "Tx Offload: %" PRIu64 " KB / %" PRIu64 " [kilobytes/packets]\n",
              c[kRingTxBytes] / kK, c[kRingTxPackets]);
      fprintf(out, "Retransmissions: %" PRIu64 "\n", c[kRingTxRetransmits]);
      fprintf(out,
              "XDP: %" PRIu64 " / %" PRIu64 " [redirected/dropped], malformed dropped %" PRIu64
              "\n",
              c[kRingXdpRedirected], c[kRingXdpDropped], c[kRingRxMalformed]);
      fprintf(out, "Interrupts: %" PRIu64 " / %" PRIu64 " [requests/received]\n",
              c[kRingInterruptRequests], c[kRingInterruptsReceived]);
      fprintf(out, "Moderation: %" PRIu64 " / %" PRIu64 " [frames/usec period]\n",
              c[kRingModerationCount], c[kRingModerationPeriodUs]);
      break;
    case kBufferPool:
      fprintf(out, "\tBUFFER_POOL=[%d] %s\n", g.id, name.c_str());
      fprintf(out, "Size: %" PRIu64 "\nNo buffers error: %" PRIu64 "\n", c[kPoolSize],
              c[kPoolNoBuffers]);
      break;
    default:
      if (g.id == -1)
        fprintf(out, "\tPOLL\n");
      else if (g.id == -2)
        fprintf(out, "\tSELECT\n");
      else
        fprintf(out, "\tEPOLL=[%d]\n", g.id);
      fprintf(out,
              "Polling: %" PRIu64 " / %" PRIu64 " / %" PRIu64 " / %" PRIu64
              " [hit/miss/timeouts/errors]\n",
              c[kIomuxPollHit], c[kIomuxPollMiss], c[kIomuxTimeouts], c[kIomuxErrors]);
      fprintf(out, "Ready fds: %" PRIu64 " / %" PRIu64 " [os/offloaded]\n", c[kIomuxOsReady],
              c[kIomuxOffloadedReady]);
      break;
  }
}

void print_netstat(FILE* out, const Snapshot& s, const ViewOptions& v) {
  fprintf(out, "%-5s %-9s %-47s %-47s %s\n", "Proto", "Offloaded", "Local Address",
          "Foreign Address", "PID/Program name");
  for (const SocketEntry& e : s.sockets) {
    const SocketBlock& b = e.block;
    if (!selected(v, b.fd)) continue;
    std::string proto = b.socket_type == SOCK_STREAM  ? "tcp"
                        : b.socket_type == SOCK_DGRAM ? "udp"
                                                      : "raw";
    if (b.family == AF_INET6) proto += "6";
    fprintf(out, "%-5s %-9s %-47s %-47s %d/%s\n", proto.c_str(), b.offloaded ? "Yes" : "No",
            address(b.family, b.bound_addr, b.bound_port).c_str(),
            address(b.family, b.connected_addr, b.connected_port).c_str(), s.pid,
            s.app_name.c_str());
  }
}

bool socket_cumulative(uint32_t c) {
  return c < kRxReadyPktCount && c != kRxReadyPktMax && c != kRxReadyByteMax;
}

bool group_cumulative(uint32_t kind, uint32_t c) {
  switch (kind) {
    case kRing:
      return c < kRingCounters && c != kRingModerationCount && c != kRingModerationPeriodUs;
    case kBufferPool:
      return c == kPoolNoBuffers;
    default:
      return c < kIomuxCounters;
  }
}

uint64_t rate(uint64_t now, uint64_t before, double seconds) {
  return now < before ? 0
                      : static_cast<uint64_t>(static_cast<double>(now - before) / seconds + 0.5);
}

}  // namespace

Snapshot per_second(const Snapshot& before, const Snapshot& now, double seconds) {
  Snapshot out = now;
  if (seconds < 1e-3) seconds = 1e-3;
  auto rates = [&](const auto& was, auto& is, auto cumulative) {
    if (was.seq != is.seq) return false;  // reopened since
    for (uint32_t c = 0; c < std::size(is.c); ++c)
      if (cumulative(is, c)) is.c[c] = rate(is.c[c], was.c[c], seconds);
    return true;
  };
  keep_matching(before.sockets, &out.sockets, [&](const SocketBlock& was, SocketBlock& is) {
    return rates(was, is, [](const SocketBlock&, uint32_t c) { return socket_cumulative(c); });
  });
  keep_matching(before.groups, &out.groups, [&](const GroupBlock& was, GroupBlock& is) {
    return rates(was, is,
                 [](const GroupBlock& g, uint32_t c) { return group_cumulative(g.kind, c); });
  });
  return out;
}

bool parse_fd_list(const std::string& text, std::vector<std::pair<int, int>>* ranges) {
  ranges->clear();
  const char* p = text.c_str();
  while (true) {
    char* end;
    errno = 0;
    const long lo = strtol(p, &end, 10);
    if (end == p || !isdigit(static_cast<unsigned char>(*p)) || errno || lo > 1 << 30) return false;
    long hi = lo;
    p = end;
    if (*p == '-') {
      ++p;
      hi = strtol(p, &end, 10);
      if (end == p || !isdigit(static_cast<unsigned char>(*p)) || errno || hi < lo || hi > 1 << 30)
        return false;
      p = end;
    }
    ranges->emplace_back(static_cast<int>(lo), static_cast<int>(hi));
    if (*p == '\0') return true;
    if (*p++ != ',') return false;
  }
}

void print_view(FILE* out, const Snapshot& s, const ViewOptions& v) {
  fprintf(out, "%s", kLine);
  fprintf(out, "vma_stats: process %d (%s), Slipstream %u.%u.%u, %zu of %u fd blocks in use%s\n",
          s.pid, s.app_name.c_str(), s.ver_info[0], s.ver_info[1], s.ver_info[2], s.sockets.size(),
          s.fd_blocks, v.per_second ? ", counters per second" : "");
  if (s.garbled) fprintf(out, "vma_stats: %u garbled blocks skipped\n", s.garbled);
  switch (v.level) {
    case 1:
    case 2:
      print_basic(out, s, v);
      break;
    case 3:
      for (const SocketEntry& e : s.sockets)
        if (selected(v, e.block.fd)) print_socket_full(out, e.block);
      for (const GroupEntry& g : s.groups) print_group(out, g.block);
      break;
    default:
      print_netstat(out, s, v);
      break;
  }
  fflush(out);
}

}  // namespace ss::vma::stats
