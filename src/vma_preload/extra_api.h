// The Extra API the preload hands out (getsockopt(-1, SOL_SOCKET,
// SO_VMA_GET_API)): libvmacompat's table with what is real so far, so its
// mask has exactly these bits: add_conf_rule (the rule decides later
// sockets), thread_offload (the thread's later sockets), dump_fd_stats,
// the receive entries of zcopy.h (recvfrom_zcopy, free_packets,
// register_recv_callback) and the ring entries of ring_fds.h
// (get_socket_rings_num, get_socket_rings_fds), and socketxtreme.h's four
// (set always, as libvma: they fail with EOPNOTSUPP unless VMA_SOCKETXTREME=1).
// Every other entry fails with -1/EOPNOTSUPP.
#pragma once
#include <mellanox/vma_extra.h>

namespace ss::vma::preload {

// The process's one table, built on first use.
vma_api_t* extra_api();

// dump_fd_stats(fd, level): fd's record (0: every recorded socket) written
// through the logger at libvma's internal level `level` (-1 none ... 8
// all), framed as libvma frames it. 0.
int dump_fd_stats(int fd, int level);

}  // namespace ss::vma::preload
