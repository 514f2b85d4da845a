/* Slipstream's steering program: frames of offloaded flows ({protocol,
 * destination IPv4 address, destination port}, or the same with address 0)
 * go to the AF_XDP socket of the queue they arrived on; everything else
 * (ARP, IPv6 for now, fragments, other protocols and ports) goes to the
 * kernel. Counts what it did per CPU. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "steer_abi.h"

struct {
  __uint(type, BPF_MAP_TYPE_XSKMAP);
  __uint(max_entries, SS_MAX_QUEUES);
  __type(key, __u32);
  __type(value, __u32);
} xsks SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, SS_MAX_FLOWS);
  __type(key, struct ss_flow_key);
  __type(value, __u32);
} flows SEC(".maps");

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

SEC("xdp")
int ss_steer(struct xdp_md *ctx) {
  void *data = (void *)(long)ctx->data;
  void *end = (void *)(long)ctx->data_end;
  struct ethhdr *eth = data;
  if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
    return count(SS_CNT_PASSED, XDP_PASS);
  struct iphdr *ip = (void *)(eth + 1);
  if ((void *)(ip + 1) > end || ip->ihl < 5) return count(SS_CNT_PASSED, XDP_PASS);
  /* A fragment (more fragments, or an offset) carries no whole datagram. */
  if (ip->frag_off & bpf_htons(0x3fff)) return count(SS_CNT_PASSED, XDP_PASS);
  if (ip->protocol != IPPROTO_UDP && ip->protocol != IPPROTO_TCP)
    return count(SS_CNT_PASSED, XDP_PASS);
  /* Both UDP and TCP start with the source and destination ports. */
  struct udphdr *l4 = (void *)ip + ip->ihl * 4;
  if ((void *)(l4 + 1) > end) return count(SS_CNT_PASSED, XDP_PASS);

  struct ss_flow_key key = {.ip = ip->daddr, .port = l4->dest, .proto = ip->protocol};
  __u32 *action = bpf_map_lookup_elem(&flows, &key);
  if (!action) {
    key.ip = 0;
    action = bpf_map_lookup_elem(&flows, &key);
  }
  if (!action) return count(SS_CNT_PASSED, XDP_PASS);
  if (*action == SS_FLOW_DROP) return count(SS_CNT_DROPPED, XDP_DROP);
  int verdict = bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
  return count(verdict == XDP_REDIRECT ? SS_CNT_REDIRECTED : SS_CNT_NO_SOCKET, verdict);
}

char LICENSE[] SEC("license") = "GPL";
