/* The tests' lossy wire out of namespace b: a tc egress program on b's
 * end of the veth that drops TCP frames at random, per_mille of them in
 * a thousand. It runs after b's TCP sent them, and says it sent them
 * (TC_ACT_STOLEN): netfilter's drops in b's output are reported to the
 * sender, which sends again at once, so they lose nothing on the wire.
 * A GSO burst is one frame here (veth cuts it later). */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

const volatile __u32 per_mille = 0;
__u64 dropped = 0;

SEC("tc")
int ss_lose(struct __sk_buff *skb) {
  void *data = (void *)(long)skb->data;
  void *end = (void *)(long)skb->data_end;
  struct ethhdr *eth = data;
  if ((void *)(eth + 1) > end) return TC_ACT_OK;
  if (eth->h_proto == bpf_htons(ETH_P_IP)) {
    struct iphdr *ip = (void *)(eth + 1);
    if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_TCP) return TC_ACT_OK;
  } else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
    struct ipv6hdr *ip6 = (void *)(eth + 1);
    if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_TCP) return TC_ACT_OK;
  } else {
    return TC_ACT_OK;
  }
  if (bpf_get_prandom_u32() % 1000 >= per_mille) return TC_ACT_OK;
  __sync_fetch_and_add(&dropped, 1);
  return TC_ACT_STOLEN;
}

char LICENSE[] SEC("license") = "GPL";
