// The Extra API's receive entries (vma_extra(7)): recvfrom_zcopy,
// free_packets and register_recv_callback, over a recorded UDP socket's
// RxExtras (rx_extras.h) and its offloaded path (udp_offload.h).
#pragma once
#include <mellanox/vma_extra.h>

namespace ss::vma::preload {

// Puts the three entries into the table the preload builds.
void add_rx_entries(vma_api_t* given);

}  // namespace ss::vma::preload
