/* A 64 B UDP source fast enough to find a receiver's limit
 * (bench/vma_zcopy.sh):
 *   udp_blast DSTIP PORT SECONDS send         send() in a loop (one kernel
 *       socket: the UDP/IP stack per datagram and a syscall per datagram)
 *   udp_blast DSTIP PORT SECONDS mmsg         sendmmsg(), BURST per call
 *   udp_blast DSTIP PORT SECONDS packet IF DSTMAC
 *       prebuilt Ethernet/IPv4/UDP frames (checksums computed here: the
 *       veth's checksum offload is off, and a receiver drops bad ones) on an
 *       AF_PACKET socket bound to IF with PACKET_QDISC_BYPASS, BURST per
 *       sendmmsg(): no UDP/IP stack, no qdisc; IF's own MAC and IPv4
 *       address are the source.
 *   udp_blast DSTIP PORT SECONDS xdp IF DSTMAC
 *       the same frame sent by the kernel's XDP live-frames test run
 *       (BPF_F_TEST_XDP_LIVE_FRAMES, Linux 5.18): a two-instruction XDP
 *       program answers XDP_TX, so each repetition leaves IF by its
 *       ndo_xdp_xmit, no socket and no skb on the sending side (the
 *       fastest source this machine has: for a veth, straight into the
 *       peer's ring; the peer needs NAPI: XDP attached, GRO or threaded).
 * Prints "sent N in S s: R/s" (N: datagrams the kernel took; a frame the
 * device refused ends its burst and is not counted; for xdp, the frames
 * the program ran on: those the peer's full ring dropped are in its
 * counters). IPv4 for packet and xdp. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAYLOAD 64
#define BURST 64
#define SRC_PORT 40000

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The Internet checksum's one's-complement sum of LEN bytes, added to SUM. */
static uint32_t sum16(const void *p, size_t len, uint32_t sum)
{
	const uint8_t *b = p;

	for (; len > 1; b += 2, len -= 2)
		sum += (uint32_t)(b[0] << 8 | b[1]);
	if (len)
		sum += (uint32_t)(b[0] << 8);
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons((uint16_t)~sum);
}

/* Frame = Ethernet + IPv4 (no options, DF) + UDP + PAYLOAD bytes of 'x'
 * from IF's MAC and address to DSTMAC, DST:PORT; returns its length. */
static size_t build_frame(uint8_t *f, const uint8_t src_mac[6], const uint8_t dst_mac[6],
			  struct in_addr src, struct in_addr dst, int port)
{
	struct ether_header *eth = (struct ether_header *)f;
	struct iphdr *ip = (struct iphdr *)(eth + 1);
	struct udphdr *udp = (struct udphdr *)(ip + 1);
	uint8_t *data = (uint8_t *)(udp + 1);
	const uint16_t udp_len = sizeof *udp + PAYLOAD;

	memcpy(eth->ether_dhost, dst_mac, 6);
	memcpy(eth->ether_shost, src_mac, 6);
	eth->ether_type = htons(ETHERTYPE_IP);
	memset(ip, 0, sizeof *ip);
	ip->version = 4;
	ip->ihl = 5;
	ip->tot_len = htons((uint16_t)(sizeof *ip + udp_len));
	ip->frag_off = htons(IP_DF);
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->saddr = src.s_addr;
	ip->daddr = dst.s_addr;
	ip->check = fold(sum16(ip, sizeof *ip, 0));
	udp->source = htons(SRC_PORT);
	udp->dest = htons((uint16_t)port);
	udp->len = htons(udp_len);
	udp->check = 0;
	memset(data, 'x', PAYLOAD);
	/* pseudo header: addresses, protocol, UDP length; then header and data */
	uint32_t s = sum16(&ip->saddr, 8, IPPROTO_UDP + udp_len);
	uint16_t c = fold(sum16(udp, udp_len, s));
	udp->check = c ? c : 0xffff; /* 0 would mean "no checksum" */
	return sizeof *eth + sizeof *ip + udp_len;
}

/* An AF_PACKET socket on IF sending one prebuilt frame; -1 on failure. */
static int packet_socket(const char *ifname, const char *dst_mac_text, struct in_addr dst, int port,
			 uint8_t *frame, size_t *len)
{
	const int fd = socket(AF_PACKET, SOCK_RAW, 0);
	struct ifreq ifr;
	uint8_t src_mac[6], dst_mac[6];
	struct in_addr src;
	int one = 1;

	if (fd < 0) {
		perror("socket(AF_PACKET)");
		return -1;
	}
	if (sscanf(dst_mac_text, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &dst_mac[0], &dst_mac[1],
		   &dst_mac[2], &dst_mac[3], &dst_mac[4], &dst_mac[5]) != 6) {
		fprintf(stderr, "bad MAC %s\n", dst_mac_text);
		return -1;
	}
	memset(&ifr, 0, sizeof ifr);
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", ifname);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
		perror("SIOCGIFHWADDR");
		return -1;
	}
	memcpy(src_mac, ifr.ifr_hwaddr.sa_data, 6);
	if (ioctl(fd, SIOCGIFADDR, &ifr) < 0) {
		perror("SIOCGIFADDR");
		return -1;
	}
	src = ((struct sockaddr_in *)&ifr.ifr_addr)->sin_addr;
	struct sockaddr_ll ll = {.sll_family = AF_PACKET, .sll_ifindex = (int)if_nametoindex(ifname)};
	if (!ll.sll_ifindex || bind(fd, (struct sockaddr *)&ll, sizeof ll) < 0) {
		perror("bind(AF_PACKET)");
		return -1;
	}
	if (setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one) < 0)
		perror("PACKET_QDISC_BYPASS (going on through the qdisc)");
	*len = build_frame(frame, src_mac, dst_mac, src, dst, port);
	return fd;
}

/* An XDP program that answers XDP_TX; -1 on failure. */
static int xdp_tx_program(void)
{
	const struct bpf_insn insns[] = {
		{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = XDP_TX},
		{.code = BPF_JMP | BPF_EXIT},
	};
	union bpf_attr a;
	memset(&a, 0, sizeof a);
	a.prog_type = BPF_PROG_TYPE_XDP;
	a.insns = (uintptr_t)insns;
	a.insn_cnt = 2;
	a.license = (uintptr_t) "GPL";
	const int fd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof a);
	if (fd < 0)
		perror("BPF_PROG_LOAD");
	return fd;
}

/* `repeat` copies of FRAME out of IF by the live-frames test run: 0 or -1. */
static int xdp_send(int prog, int ifindex, uint8_t *frame, size_t len, unsigned repeat)
{
	struct xdp_md ctx = {.data_end = (uint32_t)len, .ingress_ifindex = (uint32_t)ifindex};
	union bpf_attr a;
	memset(&a, 0, sizeof a);
	a.test.prog_fd = (uint32_t)prog;
	a.test.data_in = (uintptr_t)frame;
	a.test.data_size_in = (uint32_t)len;
	a.test.ctx_in = (uintptr_t)&ctx;
	a.test.ctx_size_in = sizeof ctx;
	a.test.repeat = repeat;
	a.test.flags = BPF_F_TEST_XDP_LIVE_FRAMES;
	return (int)syscall(SYS_bpf, BPF_PROG_TEST_RUN, &a, sizeof a);
}

int main(int argc, char **argv)
{
	const int xdp = argc == 7 && !strcmp(argv[4], "xdp");
	const int packet = xdp || (argc == 7 && !strcmp(argv[4], "packet"));
	const int mmsg = argc == 5 && !strcmp(argv[4], "mmsg");
	uint8_t out[128];
	size_t len = PAYLOAD;
	struct in_addr dst;
	int fd;

	if (!(packet || mmsg || (argc == 5 && !strcmp(argv[4], "send"))) ||
	    inet_pton(AF_INET, argv[1], &dst) != 1) {
		fprintf(stderr, "usage: %s DSTIP PORT SECONDS send|mmsg|packet|xdp IF DSTMAC\n", argv[0]);
		return 2;
	}
	const int port = atoi(argv[2]);
	const double seconds = atof(argv[3]);
	if (packet) {
		fd = packet_socket(argv[5], argv[6], dst, port, out, &len);
	} else {
		struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr = dst};
		fd = socket(AF_INET, SOCK_DGRAM, 0);
		memset(out, 'x', sizeof out);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&to, sizeof to) < 0)
			fd = -1;
	}
	if (fd < 0)
		return 1;
	int prog = -1;
	const int ifindex = packet ? (int)if_nametoindex(argv[5]) : 0;
	if (xdp && (prog = xdp_tx_program()) < 0)
		return 1;

	struct iovec iov = {.iov_base = out, .iov_len = len};
	struct mmsghdr msgs[BURST];
	memset(msgs, 0, sizeof msgs);
	for (int i = 0; i < BURST; i++) {
		msgs[i].msg_hdr.msg_iov = &iov;
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	unsigned long n = 0, calls = 0;
	const double t0 = now();
	double t = t0;
	while (t - t0 < seconds) {
		if (xdp) {
			if (xdp_send(prog, ifindex, out, len, 1 << 16) < 0) {
				perror("BPF_PROG_TEST_RUN (live frames)");
				return 1;
			}
			n += 1 << 16;
		} else if (packet || mmsg) {
			const int r = sendmmsg(fd, msgs, BURST, 0);
			if (r > 0)
				n += (unsigned long)r;
		} else if (send(fd, out, len, 0) == (ssize_t)len) {
			n++;
		}
		if (xdp || (++calls & 63) == 0)
			t = now();
	}
	printf("sent %lu in %.2f s: %.0f/s\n", n, t - t0, (double)n / (t - t0));
	return 0;
}
