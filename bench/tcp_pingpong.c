/* 64 B TCP ping-pong for bench/vma_tcp_pingpong.sh, built against the
 * installed <mellanox/vma_extra.h>.
 *   pong MODE ADDR PORT
 *       serves one connection, echoing each 64 B message as it comes, the
 *       receive spinning (never asleep) with MODE:
 *         recv    recv(MSG_DONTWAIT) (under libvma.so: the rings'; on the
 *                 kernel with SO_BUSY_POLL 50 us set on the connection)
 *         zcopy   recvfrom_zcopy(MSG_DONTWAIT), echoed from the frames,
 *                 then free_packets
 *         xtreme  socketxtreme_poll on the listener's ring descriptor
 *                 (VMA_SOCKETXTREME=1): the connection auto-accepted, its
 *                 packets echoed from the frames and freed
 *       "ready" once listening; ends with the connection.
 *   ping ADDR PORT COUNT spin|block [IDLE]
 *       connects (then IDLE more connections, left idle, each completed
 *       before the timing), sends COUNT messages one at a time after 1000 not
 *       counted, each echo checked, its receive spinning (spin:
 *       recv(MSG_DONTWAIT), SO_BUSY_POLL 50 us on a kernel socket, the
 *       kernel's fastest) or a blocking recv (block: under libvma.so the
 *       library spins, VMA_RX_POLL, as libvma's users run), and prints "rtt_us p50 P p99 Q" (the
 *       round trips' percentiles, microseconds, CLOCK_MONOTONIC). */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <mellanox/vma_extra.h>

#include "../tests/ext/test_addr.h"

enum { kMsg = 64, kWarm = 1000, kBacklog = 4096 };

static int listener(const char *ip, const char *port)
{
	struct sockaddr_storage at;
	socklen_t len = make_addr(ip, (unsigned short)atoi(port), &at);
	int one = 1, l = socket(at.ss_family, SOCK_STREAM, 0);

	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (l < 0 || bind(l, (struct sockaddr *)&at, len) != 0) {
		perror("bind");
		exit(1);
	}
	return l;
}

static void send_all(int fd, const void *p, size_t n)
{
	while (n) {
		ssize_t k = send(fd, p, n, 0);

		if (k <= 0) {
			perror("send");
			exit(1);
		}
		p = (const char *)p + k;
		n -= (size_t)k;
	}
}

static int pong_xtreme(struct vma_api_t *api, int l)
{
	int ring = -1, done = 0;

	if (api->get_socket_rings_fds(l, &ring, 1) != 1 || listen(l, kBacklog) != 0) {
		perror("ring");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (!done) {
		struct vma_completion_t c[8];
		int n = api->socketxtreme_poll(ring, c, 8, 0);

		for (int i = 0; i < n; i++) {
			if (c[i].events & VMA_SOCKETXTREME_PACKET) {
				for (struct vma_buff_t *b = c[i].packet.buff_lst; b; b = b->next)
					send_all((int)c[i].user_data, b->payload, b->len);
				api->socketxtreme_free_vma_packets(&c[i].packet, 1);
			}
			if (c[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
				close((int)c[i].user_data);
				done = 1;
			}
		}
	}
	return 0;
}

static int pong(const char *mode, const char *ip, const char *port)
{
	struct vma_api_t *api = vma_get_api();
	int l = listener(ip, port), c;
	static char buf[65536];

	if (!strcmp(mode, "xtreme"))
		return api ? pong_xtreme(api, l) : 1;
	if (listen(l, kBacklog) != 0)
		return 1;
	printf("ready\n");
	fflush(stdout);
	c = accept(l, NULL, NULL);
	if (c < 0)
		return 1;
	if (!api) {
		int us = 50, one = 1;

		setsockopt(c, SOL_SOCKET, SO_BUSY_POLL, &us, sizeof us);
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	}
	for (;;) {
		int flags = MSG_DONTWAIT;
		ssize_t n;

		if (!strcmp(mode, "zcopy") && api) {
			struct vma_packets_t *p = (struct vma_packets_t *)buf;
			const unsigned char *at;

			n = api->recvfrom_zcopy(c, buf, sizeof buf, &flags, NULL, NULL);
			if (n > 0 && (flags & MSG_VMA_ZCOPY)) {
				at = (const unsigned char *)p->pkts;
				for (size_t i = 0; i < p->n_packet_num; i++) {
					const struct vma_packet_t *pk = (const void *)at;

					for (size_t v = 0; v < pk->sz_iov; v++)
						send_all(c, pk->iov[v].iov_base, pk->iov[v].iov_len);
					at += sizeof *pk + pk->sz_iov * sizeof(struct iovec);
				}
				api->free_packets(c, p->pkts, p->n_packet_num);
				continue;
			}
		} else {
			n = recv(c, buf, sizeof buf, MSG_DONTWAIT);
		}
		if (n > 0)
			send_all(c, buf, (size_t)n);
		else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			break;
	}
	close(c);
	return 0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* n connections to `to` left idle (each completed first), or NULL. */
static int *idle_connections(const struct sockaddr_storage *to, socklen_t len, int n)
{
	int *fds = calloc((size_t)n + 1, sizeof *fds);

	for (int i = 0; fds && i < n; i++) {
		struct pollfd p = {socket(to->ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0), POLLOUT, 0};
		int err = 0;
		socklen_t el = sizeof err;

		fds[i] = p.fd;
		if (p.fd < 0 || (connect(p.fd, (const struct sockaddr *)to, len) != 0 &&
				 errno != EINPROGRESS) ||
		    poll(&p, 1, 10000) != 1 ||
		    getsockopt(p.fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err) {
			fprintf(stderr, "idle connection %d: %s\n", i, strerror(err ? err : errno));
			return NULL;
		}
	}
	return fds;
}

static int ping(const char *ip, const char *port, long count, int spin, int idle)
{
	struct sockaddr_storage to;
	socklen_t len = make_addr(ip, (unsigned short)atoi(port), &to);
	int fd = socket(to.ss_family, SOCK_STREAM, 0), one = 1, busy_us = 50;
	unsigned char out[kMsg], in[kMsg];
	double *rtt = calloc((size_t)count, sizeof *rtt);

	if (!rtt || fd < 0 || connect(fd, (struct sockaddr *)&to, len) != 0) {
		perror("connect");
		return 1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &busy_us, sizeof busy_us);
	int *idle_fds = idle_connections(&to, len, idle);

	if (!idle_fds)
		return 1;
	for (long m = -kWarm; m < count; m++) {
		struct timespec a, b;
		size_t got = 0;

		memset(out, (int)(m & 0xff), sizeof out);
		clock_gettime(CLOCK_MONOTONIC, &a);
		send_all(fd, out, sizeof out);
		while (got < sizeof in) {
			ssize_t k = recv(fd, in + got, sizeof in - got, spin ? MSG_DONTWAIT : 0);

			if (k < 0 && errno == EAGAIN)
				continue;
			if (k <= 0) {
				perror("recv");
				return 1;
			}
			got += (size_t)k;
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (memcmp(in, out, sizeof in)) {
			printf("FAIL: echo %ld differs\n", m);
			return 1;
		}
		if (m >= 0)
			rtt[m] = (double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3;
	}
	close(fd);
	for (int i = 0; i < idle; i++)
		close(idle_fds[i]);
	qsort(rtt, (size_t)count, sizeof *rtt, cmp);
	printf("rtt_us p50 %.1f p99 %.1f\n", rtt[count / 2], rtt[count * 99 / 100]);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "pong"))
		return pong(argv[2], argv[3], argv[4]);
	if ((argc == 6 || argc == 7) && !strcmp(argv[1], "ping"))
		return ping(argv[2], argv[3], atol(argv[4]), !strcmp(argv[5], "spin"),
			    argc == 7 ? atoi(argv[6]) : 0);
	fprintf(stderr,
		"usage: %s pong recv|zcopy|xtreme ADDR PORT | ping ADDR PORT COUNT spin|block [IDLE]\n",
		argv[0]);
	return 2;
}
