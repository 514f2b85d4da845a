// What libvma would do with a new socket (its start-up and rule order):
// VMA_OFFLOADED_SOCKETS, flipped for a thread that thread_offload() named,
// then libvma.conf's rules at socket() (conf_socket_transport). The
// decision is recorded and logged; a UDP socket decided "vma" is offloaded
// once bound where a netdev has rings (socket_record.h), a TCP socket at
// connect or listen (tcp_offload.h, tcp_listen.h).
#pragma once
#include <pthread.h>

#include "libvmacompat/rules.h"

namespace ss::vma::preload {

struct Decision {
  Transport wanted;  // what VMA would do
  const char* why;   // why the kernel serves it, for the log and dump_fd_stats
};

// For a socket() of IPPROTO_UDP or IPPROTO_TCP made by the calling thread.
Decision decide_socket(int protocol);

// At bind() of a UDP socket VMA would offload: libvma.conf's udp_receiver
// rules for the local address (a port rule such as `use os udp_receiver
// *:1234` decides here). kVma keeps the socket's decision.
Decision decide_udp_bind(const sockaddr* local, socklen_t len);

// At connect() and listen() of a TCP socket VMA would offload: libvma.conf's
// tcp_client rules (the peer, and the local address the socket is bound
// to, if any) and tcp_server rules (the local address). kVma keeps the
// socket's decision.
Decision decide_tcp_connect(const sockaddr* local, socklen_t local_len, const sockaddr* remote,
                            socklen_t remote_len);
Decision decide_tcp_listen(const sockaddr* local, socklen_t len);

// The Extra API's thread_offload: sockets `tid` creates later are
// offloaded (1) or not (0), overriding VMA_OFFLOADED_SOCKETS for it. 0.
int thread_offload(int offload, pthread_t tid);

}  // namespace ss::vma::preload
