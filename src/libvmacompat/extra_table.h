// The Extra API table (<mellanox/vma_extra.h>'s struct vma_api_t) built
// from what the library implements, with an honest capability mask: an
// entry the library has keeps its function and sets its VMA_EXTRA_API_*
// bit; every other entry gets a function of that slot's signature that
// warns once (per entry, per process) and fails with -1/EOPNOTSUPP, and
// its bit stays clear.  Internal: the preload hands the table out through
// getsockopt(-1, SOL_SOCKET, SO_VMA_GET_API); nothing here is exported.
#pragma once
#include "core/base/api.h"
#include <mellanox/vma_extra.h>

// Every function slot of vma_api_t with its mask bit, in table order: the
// one list the table is built from and its tests walk (extra_table.cc ties
// it to the struct's size).
#define SS_VMA_EXTRA_SLOTS(X)                                                   \
  X(register_recv_callback, VMA_EXTRA_API_REGISTER_RECV_CALLBACK)               \
  X(recvfrom_zcopy, VMA_EXTRA_API_RECVFROM_ZCOPY)                               \
  X(free_packets, VMA_EXTRA_API_FREE_PACKETS)                                   \
  X(add_conf_rule, VMA_EXTRA_API_ADD_CONF_RULE)                                 \
  X(thread_offload, VMA_EXTRA_API_THREAD_OFFLOAD)                               \
  X(socketxtreme_poll, VMA_EXTRA_API_SOCKETXTREME_POLL)                         \
  X(get_socket_rings_num, VMA_EXTRA_API_GET_SOCKET_RINGS_NUM)                   \
  X(get_socket_rings_fds, VMA_EXTRA_API_GET_SOCKET_RINGS_FDS)                   \
  X(get_socket_tx_ring_fd, VMA_EXTRA_API_GET_SOCKET_TX_RING_FD)                 \
  X(socketxtreme_free_vma_packets, VMA_EXTRA_API_SOCKETXTREME_FREE_VMA_PACKETS) \
  X(socketxtreme_ref_vma_buff, VMA_EXTRA_API_SOCKETXTREME_REF_VMA_BUFF)         \
  X(socketxtreme_free_vma_buff, VMA_EXTRA_API_SOCKETXTREME_FREE_VMA_BUFF)       \
  X(dump_fd_stats, VMA_EXTRA_API_DUMP_FD_STATS)                                 \
  X(vma_add_ring_profile, VMA_EXTRA_API_ADD_RING_PROFILE)                       \
  X(get_socket_network_header, VMA_EXTRA_API_GET_SOCKET_NETWORK_HEADER)         \
  X(get_ring_direct_descriptors, VMA_EXTRA_API_GET_RING_DIRECT_DESCRIPTORS)     \
  X(register_memory_on_ring, VMA_EXTRA_API_REGISTER_MEMORY_ON_RING)             \
  X(deregister_memory_on_ring, VMA_EXTRA_API_DEREGISTER_MEMORY_ON_RING)         \
  X(vma_modify_ring, VMA_EXTRA_API_MODIFY_RING)                                 \
  X(ioctl, VMA_EXTRA_API_IOCTL)

namespace ss::vma {

// `provided`: the library's entries (null: not implemented); its
// vma_extra_supported_mask is ignored.  Every slot of the result is
// callable.
SS_API vma_api_t build_extra_table(const vma_api_t& provided);

}  // namespace ss::vma
