/* What the steering program (steer.bpf.c) and prov/xdp share: the flow
 * key, the actions and the counter slots. C, so both compilers read it. */
#ifndef SS_PROV_XDP_STEER_ABI_H
#define SS_PROV_XDP_STEER_ABI_H

#include <linux/types.h>

/* One steered flow: IP version, destination address and port (network
 * byte order) and IP protocol. An IPv4 address fills ip[0..3] (the rest
 * stays 0); all zero is the wildcard (a socket bound to any address). */
struct ss_flow_key {
  __u8 ip[16];
  __u16 port;
  __u8 proto;
  __u8 version; /* 4 or 6; the key is hashed as raw bytes, no padding */
};

/* One TCP connection of a steered flow, the key of two maps. In
 * kernel_conns its frames go to the kernel although the flow is steered:
 * one the rings handed to a kernel socket (a listener's flow still brings
 * the rest of its connections); value 1 passes, 0 not yet (the entry made
 * before the kernel took the connection); a SYN without ACK removes it (a
 * new connection of that 4-tuple). In ring_conns it is one of the rings'
 * connections that a SS_FLOW_RING_CONNS flow still brings. Local is the
 * frame's destination, remote its source; addresses as in ss_flow_key,
 * ports in network byte order. */
struct ss_conn_key {
  __u8 local[16];
  __u8 remote[16];
  __u16 local_port;
  __u16 remote_port;
  __u8 version;
  __u8 pad[3]; /* zero: the key is hashed as raw bytes */
};

/* What a steered flow's frames get. */
enum ss_flow_action {
  SS_FLOW_REDIRECT = 1, /* to the XSK of the frame's rx queue (kernel if none) */
  SS_FLOW_DROP = 2,     /* dropped (tests inject loss with it) */
  /* Only the frames of its connections in ring_conns, as REDIRECT; the
   * rest (new connections) to the kernel: a listener that left the rings
   * while connections it accepted stay there. */
  SS_FLOW_RING_CONNS = 3,
};

/* Per-CPU counter slots. */
enum ss_counter {
  SS_CNT_REDIRECTED = 0, /* handed to an XSK */
  SS_CNT_PASSED = 1,     /* not steered: to the kernel */
  SS_CNT_DROPPED = 2,    /* a SS_FLOW_DROP flow */
  SS_CNT_NO_SOCKET = 3,  /* steered, but no XSK on that queue: to the kernel */
  SS_CNT_TOO_LONG = 4,   /* a UDP frame longer than an XSK frame: to the kernel */
  SS_CNT_MAX = 5,
};

/* The processes of a family (a parent and the fork children that joined
 * its queues) that take a steered TCP port's connections: a SYN goes to
 * slots[hash of its 4-tuple % n], and so does every later frame of a
 * connection without an entry in conn_owners. */
/* A power of two (the program masks a pick with it): 255 children, as
 * nginx's `worker_processes auto` makes on 255 CPUs. */
#define SS_MAX_SLOTS 256
struct ss_group {
  __u32 n; /* 0: no group (slot 0 takes all) */
  __u32 slots[SS_MAX_SLOTS];
};

/* One per bound port and per active TCP open: tens of thousands of
 * connections. */
#define SS_MAX_FLOWS 65536
/* Least recently used first out: a connection that long carried no frame. */
#define SS_MAX_KERNEL_CONNS 16384
#define SS_MAX_QUEUES 64
/* The XSKMAP's key of a process's socket on an rx queue: slot 0 is the
 * process that made the rings (UDP and ungrouped flows go there). */
#define SS_XSK_INDEX(slot, queue) ((slot)*SS_MAX_QUEUES + (queue))

#endif
