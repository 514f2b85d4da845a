// Linux's struct tcp_info (include/uapi/linux/tcp.h) as far as Linux 6.7
// declares it: glibc's <netinet/tcp.h> stops at tcpi_total_retrans, and
// TCP_INFO answers as many bytes as the running kernel's struct has (the
// program's room permitting).
#pragma once
#include <netinet/tcp.h>

#include <cstddef>
#include <cstdint>

namespace ss::vma::preload {

struct LinuxTcpInfo {
  tcp_info base;
  uint64_t pacing_rate, max_pacing_rate, bytes_acked, bytes_received;
  uint32_t segs_out, segs_in, notsent_bytes, min_rtt, data_segs_in, data_segs_out;
  uint64_t delivery_rate, busy_time, rwnd_limited, sndbuf_limited;
  uint32_t delivered, delivered_ce;
  uint64_t bytes_sent, bytes_retrans;
  uint32_t dsack_dups, reord_seen, rcv_ooopack, snd_wnd, rcv_wnd, rehash;
  uint16_t total_rto, total_rto_recoveries;
  uint32_t total_rto_time;
};
static_assert(offsetof(LinuxTcpInfo, pacing_rate) == 104 && sizeof(LinuxTcpInfo) == 248,
              "Linux's layout");

}  // namespace ss::vma::preload
