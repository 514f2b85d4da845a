// The Extra API's ring descriptors (vma_extra(7)): get_socket_rings_num
// and get_socket_rings_fds give a UDP socket's AF_XDP sockets, one per rx
// queue of each netdev its offloaded path uses. Each is pollable: POLLIN
// while a frame waits on that ring. Rings are per netdev, shared by the
// sockets on it (libvma's per-interface ring logic): a frame may be
// another socket's, and frames another call already took off the ring
// into this socket's queue no longer show (read the socket until EAGAIN
// before sleeping on the ring again, as with libvma's ring fds).
#pragma once
#include <mellanox/vma_extra.h>

namespace ss::vma::preload {

// Puts the two entries into the table the preload builds.
void add_ring_entries(vma_api_t* given);

}  // namespace ss::vma::preload
