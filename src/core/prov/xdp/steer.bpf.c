/* Slipstream's steering program: frames of offloaded flows ({IP version,
 * protocol, destination address, destination port}, or the same with
 * address 0, but not for a group) go to the AF_XDP socket of the queue
 * they arrived on, of the process whose slot the frame's TCP connection
 * has (conn_owners, else its port's group; slot 0 otherwise);
 * everything else (ARP, ND, fragments, IPv6 extension headers, other
 * protocols and ports) goes to the kernel, and so do the TCP connections
 * of a steered port the rings handed to the kernel (kernel_conns) and,
 * on a SS_FLOW_RING_CONNS flow, those not in ring_conns. Counts what it
 * did per CPU. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "steer_abi.h"

struct {
  __uint(type, BPF_MAP_TYPE_XSKMAP);
  __uint(max_entries, SS_MAX_QUEUES * SS_MAX_SLOTS);
  __type(key, __u32);
  __type(value, __u32);
} xsks SEC(".maps");

/* A connection's process, by slot: one that a fork child took. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, SS_MAX_FLOWS);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct ss_conn_key);
  __type(value, __u32);
} conn_owners SEC(".maps");

/* A listening port's processes (ss_group), by its flow key. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1024);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct ss_flow_key);
  __type(value, struct ss_group);
} groups SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, SS_MAX_FLOWS);
  __uint(map_flags, BPF_F_NO_PREALLOC); /* entries as flows come: most programs have few */
  __type(key, struct ss_flow_key);
  __type(value, __u32);
} flows SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, SS_MAX_KERNEL_CONNS);
  __type(key, struct ss_conn_key);
  __type(value, __u8);
} kernel_conns SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, SS_MAX_FLOWS);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct ss_conn_key);
  __type(value, __u8);
} ring_conns SEC(".maps");

/* Set once kernel_conns has an entry: until then a TCP frame costs no
 * second lookup. */
volatile __u32 kernel_conns_used = 0;
/* Set once a fork child joined (conn_owners or groups may have entries):
 * until then every frame goes to slot 0 with no lookup. */
volatile __u32 slots_used = 0;
/* The longest frame an XSK frame holds (0: not set). A longer UDP
 * datagram goes to the kernel, where the socket's kernel twin receives
 * it: the UDP stack takes a datagram in one frame only. A longer TCP
 * segment spans frames on a multi-buffer socket (XDP_USE_SG, Linux 6.6;
 * the program is frags-aware, so veth keeps a jumbo MTU native); a socket
 * without it drops one, and the MSS announced keeps peers from sending
 * it. */
volatile __u32 frame_room = 0;

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, SS_CNT_MAX);
  __type(key, __u32);
  __type(value, __u64);
} counters SEC(".maps");

static __always_inline int count(__u32 slot, int action) {
  __u64 *c = bpf_map_lookup_elem(&counters, &slot);
  if (c) *c += 1;
  return action;
}

/* A group address (224.0.0.0/4, ff00::/8): only its own flow takes it. */
static __always_inline int group_dst(const struct ss_flow_key *key) {
  return key->version == 4 ? (key->ip[0] & 0xf0) == 0xe0 : key->ip[0] == 0xff;
}

/* A connection's 4-tuple, mixed (murmur3's finalizer: every input bit
 * moves every output bit, so a remainder by a small n spreads by the
 * peer's port alone): the same for every frame of it. */
static __always_inline __u32 conn_hash(const struct ss_conn_key *c) {
  __u32 h = ((__u32)c->local_port << 16 | c->remote_port), a;
  __builtin_memcpy(&a, c->remote, 4);
  h ^= a;
  __builtin_memcpy(&a, c->remote + 12, 4);
  h ^= a * 0x9e3779b1u;
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  return h ^ (h >> 16);
}

/* The slot whose socket takes a TCP frame of flow key (conn: its
 * connection): its owner's, else its group's pick, else 0. */
static __always_inline __u32 slot_of(const struct ss_flow_key *key,
                                     const struct ss_conn_key *conn) {
  if (!conn || !slots_used) return 0;
  __u32 *owner = bpf_map_lookup_elem(&conn_owners, conn);
  if (owner) return *owner;
  struct ss_group *g = bpf_map_lookup_elem(&groups, key);
  if (!g || !g->n || g->n > SS_MAX_SLOTS) return 0;
  __u32 i = conn_hash(conn) % g->n;
  /* Below SS_MAX_SLOTS already; the mask, which the compiler may not
   * drop past the barrier, says so to the verifier. */
  asm volatile("" : "+r"(i));
  return g->slots[i & (SS_MAX_SLOTS - 1)];
}

/* The flow's frame to its socket, or to the kernel when not steered. A
 * group's frame is steered by the group's flow only (a join), never by a
 * wildcard bind: kernel sockets of this host may have joined it. conn:
 * a TCP frame's connection, else 0; syn: it is a SYN without ACK. */
static __always_inline int steer(struct xdp_md *ctx, struct ss_flow_key *key,
                                 const struct ss_conn_key *conn, int syn) {
  __u32 *action = bpf_map_lookup_elem(&flows, key);
  if (!action && !group_dst(key)) {
    __builtin_memset(key->ip, 0, sizeof key->ip);
    action = bpf_map_lookup_elem(&flows, key);
  }
  if (!action) return count(SS_CNT_PASSED, XDP_PASS);
  if (*action == SS_FLOW_DROP) return count(SS_CNT_DROPPED, XDP_DROP);
  if (conn && kernel_conns_used) {
    if (!syn) {
      __u8 *pass = bpf_map_lookup_elem(&kernel_conns, conn);
      if (pass && *pass) return count(SS_CNT_PASSED, XDP_PASS);
    } else if (*action != SS_FLOW_RING_CONNS) {
      /* A new connection of the 4-tuple: the rings' again (on a
       * RING_CONNS flow it is the kernel's, and so are its frames). */
      bpf_map_delete_elem(&kernel_conns, conn);
    }
  }
  if (*action == SS_FLOW_RING_CONNS && (!conn || !bpf_map_lookup_elem(&ring_conns, conn)))
    return count(SS_CNT_PASSED, XDP_PASS);
  if (!conn && frame_room && bpf_xdp_get_buff_len(ctx) > frame_room)
    return count(SS_CNT_TOO_LONG, XDP_PASS);
  const __u32 slot = slot_of(key, conn);
  if (slot >= SS_MAX_SLOTS || ctx->rx_queue_index >= SS_MAX_QUEUES)
    return count(SS_CNT_NO_SOCKET, XDP_PASS);
  int verdict = bpf_redirect_map(&xsks, SS_XSK_INDEX(slot, ctx->rx_queue_index), XDP_PASS);
  return count(verdict == XDP_REDIRECT ? SS_CNT_REDIRECTED : SS_CNT_NO_SOCKET, verdict);
}

static __always_inline int l4_proto(__u8 p) { return p == IPPROTO_UDP || p == IPPROTO_TCP; }

SEC("xdp.frags")
int ss_steer(struct xdp_md *ctx) {
  void *data = (void *)(long)ctx->data;
  void *end = (void *)(long)ctx->data_end;
  struct ethhdr *eth = data;
  struct ss_flow_key key = {};
  struct ss_conn_key conn = {};
  struct udphdr *l4; /* UDP and TCP both start with the two ports */
  if ((void *)(eth + 1) > end) return count(SS_CNT_PASSED, XDP_PASS);
  if (eth->h_proto == bpf_htons(ETH_P_IP)) {
    struct iphdr *ip = (void *)(eth + 1);
    if ((void *)(ip + 1) > end || ip->ihl < 5) return count(SS_CNT_PASSED, XDP_PASS);
    /* A fragment (more fragments, or an offset) carries no whole datagram. */
    if (ip->frag_off & bpf_htons(0x3fff)) return count(SS_CNT_PASSED, XDP_PASS);
    if (!l4_proto(ip->protocol)) return count(SS_CNT_PASSED, XDP_PASS);
    l4 = (void *)ip + ip->ihl * 4;
    __builtin_memcpy(key.ip, &ip->daddr, 4);
    key.proto = ip->protocol;
    key.version = 4;
    __builtin_memcpy(conn.local, &ip->daddr, 4);
    __builtin_memcpy(conn.remote, &ip->saddr, 4);
  } else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
    struct ipv6hdr *ip6 = (void *)(eth + 1);
    if ((void *)(ip6 + 1) > end) return count(SS_CNT_PASSED, XDP_PASS);
    /* Extension headers (fragments among them) are the kernel's. */
    if (!l4_proto(ip6->nexthdr)) return count(SS_CNT_PASSED, XDP_PASS);
    l4 = (void *)(ip6 + 1);
    __builtin_memcpy(key.ip, &ip6->daddr, 16);
    key.proto = ip6->nexthdr;
    key.version = 6;
    __builtin_memcpy(conn.local, &ip6->daddr, 16);
    __builtin_memcpy(conn.remote, &ip6->saddr, 16);
  } else {
    return count(SS_CNT_PASSED, XDP_PASS);
  }
  if ((void *)(l4 + 1) > end) return count(SS_CNT_PASSED, XDP_PASS);
  key.port = l4->dest;
  if (key.proto != IPPROTO_TCP) return steer(ctx, &key, 0, 0);
  conn.local_port = l4->dest;
  conn.remote_port = l4->source;
  conn.version = key.version;
  struct tcphdr *th = (void *)l4;
  if ((void *)(th + 1) > end) return steer(ctx, &key, &conn, 0);
  return steer(ctx, &key, &conn, th->syn && !th->ack);
}

char LICENSE[] SEC("license") = "GPL";
