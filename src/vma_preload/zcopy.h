// The Extra API's receive entries (vma_extra(7)): recvfrom_zcopy,
// free_packets and register_recv_callback, over a recorded socket's
// RxExtras (rx_extras.h) and its offloaded path (udp_offload.h, or a TCP
// connection's tcp_offload.h).
#pragma once
#include <mellanox/vma_extra.h>

#include <memory>

namespace ss::vma::preload {

struct SocketRecord;

// fd's record when it is a UDP or TCP socket the preload may offload
// (libvma's "offloaded socket": the Extra API's socket entries take it,
// bound or not; TCP with SLIPSTREAM_VMA_TCP on), else null with errno
// EINVAL; _udp: a UDP one only.
std::shared_ptr<SocketRecord> extra_api_socket(int fd);
std::shared_ptr<SocketRecord> extra_api_udp_socket(int fd);

// Puts the three entries into the table the preload builds.
void add_rx_entries(vma_api_t* given);

}  // namespace ss::vma::preload
