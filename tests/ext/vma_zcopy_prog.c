/* The Extra API's zero-copy receive and receive callbacks, built against
 * the installed <mellanox/vma_extra.h> only (tests/ext/vma_zcopy.sh).
 *   recv IP PORT COUNT  (under LD_PRELOAD=libvma.so, in the offloaded
 *       namespace) binds IP:PORT, prints "ready", then
 *       (1) recvfrom_zcopy: ENOBUFS for a short buffer; COUNT datagrams
 *           from the sender, each MSG_VMA_ZCOPY, one packet of one iovec
 *           whose payload is the datagram's (length and contents checked)
 *           and lies outside the program's own memory (/proc/self/maps:
 *           not the buffer, heap, stack or the program's image); each freed
 *           at once (COUNT exceeds the frames the rings have: they must
 *           recycle); free_packets with a made-up id, an id twice, an id
 *           freed already: -1/ENOENT and the good id still freeable;
 *       (2) a receive callback returning DROP, RECV or HOLD by the tag of
 *           each datagram: every datagram seen once by it (struct_sz,
 *           payload, source checked), recvfrom gets exactly the RECV ones,
 *           the HOLD ones freed by free_packets afterwards (once: again is
 *           -1/ENOENT); unregistered with NULL;
 *       (3) the socket's ring fds (get_socket_rings_num/_fds): poll on
 *           them quiet with nothing sent, POLLIN when the sender's one
 *           datagram arrives, quiet again once it is read; EINVAL for a
 *           NULL or empty array; a socket not bound yet has none;
 *       (4) copy fallback: a datagram from this host (through the kernel
 *           socket) comes copied, MSG_VMA_ZCOPY clear (with
 *           MSG_VMA_ZCOPY_FORCE: -1/EIO, the datagram left); a socket the
 *           preload leaves to the kernel (thread_offload(0)): copied, flag
 *           clear, register_recv_callback, free_packets and
 *           get_socket_rings_num -1/EINVAL.
 *       Prints "FAIL: ..." per failure, "PASS: N failure(s)", and
 *       "phase zcopy done" after (1) (the script reads the kernel's UDP
 *       counter around it).
 *   send IP PORT COUNT  (the kernel peer) sends (1) in batches of BATCH,
 *       each batch acknowledged by the receiver, then (2) and (3) on its
 *       signals.
 *   rate IP PORT SECONDS MODE  receives 64 B datagrams for SECONDS with
 *       recvfrom_zcopy + free_packets (MODE zcopy) or recv (copy), both
 *       MSG_DONTWAIT in a busy loop, prints "received N in S s: R/s (C
 *       copied, E empty, P ns each, B before ready)" (E: calls that found
 *       nothing, the sender being slower; P: what such a call cost before
 *       "ready"; B: datagrams those timing calls found, a sender started
 *       early: taken and, lent, freed like the others), and lingers 4 s
 *       (its stats block refreshes once a second: the bench reads it
 *       then). The sender: bench/udp_blast.c. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <mellanox/vma_extra.h>

#define BATCH 100
#define CB_EACH 40 /* datagrams of each verdict in (2) */

static int fails;
static int g_family; /* the receiving socket's */

static void expect(int ok, const char *what)
{
	if (!ok) {
		printf("FAIL: %s\n", what);
		fflush(stdout);
		fails++;
	}
}

/* An IPv4 or IPv6 address and port (by the text's form). */
static struct sockaddr_storage addr_of(const char *ip, int port)
{
	struct sockaddr_storage a;
	struct sockaddr_in *a4 = (struct sockaddr_in *)&a;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&a;

	memset(&a, 0, sizeof a);
	if (inet_pton(AF_INET, ip, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
	} else if (inet_pton(AF_INET6, ip, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
	} else {
		fprintf(stderr, "bad address %s\n", ip);
		exit(2);
	}
	return a;
}

static socklen_t alen(const struct sockaddr_storage *a)
{
	return a->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/* Datagram i of phase (1): 4 bytes of i, then a pattern of i. */
static size_t fill_datagram(uint8_t *out, uint32_t i, uint8_t tag)
{
	const size_t n = 8 + (size_t)(i * 37u) % 1000;
	const uint32_t be = htonl(i);

	memcpy(out, &be, 4);
	out[4] = tag;
	for (size_t k = 5; k < n; k++)
		out[k] = (uint8_t)('a' + (i + k) % 26);
	return n;
}

/* Whether p holds datagram i exactly (its tag in *tag). */
static int datagram_ok(const uint8_t *p, size_t n, uint32_t *i, uint8_t *tag)
{
	uint8_t want[1100];
	uint32_t be;

	if (n < 8)
		return 0;
	memcpy(&be, p, 4);
	*i = ntohl(be);
	*tag = p[4];
	return fill_datagram(want, *i, *tag) == n && memcmp(want + 5, p + 5, n - 5) == 0;
}

/* The /proc/self/maps line of the mapping holding p ("" if none). */
static void mapping_of(const void *p, char *line, size_t size)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo, hi, at = (unsigned long)p;

	line[0] = 0;
	if (!f)
		return;
	while (fgets(line, (int)size, f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && at >= lo && at < hi)
			break;
		else
			line[0] = 0;
	fclose(f);
}

/* Outside the program's own memory: not buf, not heap/stack/its image. */
static int outside_program(const void *p, const void *buf, size_t len)
{
	static char self[4096];
	char line[4096];

	if ((const char *)p >= (const char *)buf && (const char *)p < (const char *)buf + len)
		return 0;
	if (!self[0] && readlink("/proc/self/exe", self, sizeof self - 1) < 0)
		return 0;
	mapping_of(p, line, sizeof line);
	return line[0] && !strstr(line, "[heap]") && !strstr(line, "[stack]") && !strstr(line, self);
}

static void ack(int fd, const struct sockaddr_storage *to, const char *what)
{
	sendto(fd, what, strlen(what), 0, (const struct sockaddr *)to, alen(to));
}

static int free_one(struct vma_api_t *api, int fd, void *id)
{
	struct vma_packet_t p;

	memset(&p, 0, sizeof p);
	p.packet_id = id;
	p.sz_iov = 0;
	return api->free_packets(fd, &p, 1);
}

/* -1 with errno want from a call already made. */
static void expect_err(int r, int err, int want, const char *what)
{
	char m[200];

	snprintf(m, sizeof m, "%s: -1/%s (got %d, %s)", what, strerror(want), r, strerror(err));
	expect(r == -1 && err == want, m);
}

/* (1) COUNT datagrams through recvfrom_zcopy. */
static void zcopy_phase(struct vma_api_t *api, int fd, uint32_t count)
{
	static uint8_t seen[1 << 20];
	union {
		struct vma_packets_t pk;
		uint8_t raw[256];
	} buf;
	struct sockaddr_storage from;
	socklen_t flen;
	uint32_t got = 0, bad = 0, outside = 0;
	int flags = 0, r;
	char m[200];

	r = api->recvfrom_zcopy(fd, buf.raw, 16, &flags, NULL, NULL);
	expect_err(r, errno, ENOBUFS, "recvfrom_zcopy into 16 bytes");

	while (got < count) {
		flags = 0;
		flen = sizeof from;
		r = api->recvfrom_zcopy(fd, buf.raw, sizeof buf, &flags, (struct sockaddr *)&from, &flen);
		if (r < 0) {
			snprintf(m, sizeof m, "recvfrom_zcopy after %u: %s", got, strerror(errno));
			expect(0, m);
			return;
		}
		const struct vma_packet_t *p = buf.pk.pkts;
		uint32_t i = 0;
		uint8_t tag = 0;
		if (!(flags & MSG_VMA_ZCOPY) || buf.pk.n_packet_num != 1 || p->sz_iov != 1 ||
		    p->iov[0].iov_len != (size_t)r ||
		    !datagram_ok(p->iov[0].iov_base, p->iov[0].iov_len, &i, &tag) || i >= count ||
		    seen[i]) {
			if (bad++ < 5) {
				snprintf(m, sizeof m, "datagram %u: flags 0x%x, %zu packet(s), %zd bytes",
					 got, flags, (size_t)buf.pk.n_packet_num, (ssize_t)r);
				expect(0, m);
			}
		} else {
			seen[i] = 1;
		}
		outside += outside_program(p->iov[0].iov_base, &buf, sizeof buf);
		if (got == 0) {
			/* Bad frees lose nothing: then this one frees once. */
			void *id = p->packet_id;
			struct vma_packet_t two[2];
			char line[4096];

			mapping_of(p->iov[0].iov_base, line, sizeof line);
			printf("payload at %p in %s", p->iov[0].iov_base, line);
			r = free_one(api, fd, (void *)&buf);
			expect_err(r, errno, ENOENT, "free_packets(made-up id)");
			memset(two, 0, sizeof two);
			two[0].packet_id = id;
			two[1].packet_id = (void *)&two;
			r = api->free_packets(fd, two, 2);
			expect_err(r, errno, ENOENT, "free_packets(good id, made-up id)");
			two[1].packet_id = id;
			r = api->free_packets(fd, two, 2);
			expect_err(r, errno, ENOENT, "free_packets(the same id twice)");
			expect(free_one(api, fd, id) == 0, "free_packets(good id) after the bad frees");
			r = free_one(api, fd, id);
			expect_err(r, errno, ENOENT, "free_packets(id freed already)");
		} else {
			r = api->free_packets(fd, buf.pk.pkts, buf.pk.n_packet_num);
			if (r != 0 && bad++ < 5)
				expect(0, "free_packets of a datagram received");
		}
		got++;
		if (got % BATCH == 0 || got == count)
			ack(fd, &from, "ack");
	}
	snprintf(m, sizeof m, "%u datagrams zero copy, intact, each once (%u bad)", count, bad);
	expect(bad == 0, m);
	snprintf(m, sizeof m, "every payload outside the program's memory (%u of %u)", outside, count);
	expect(outside == count, m);
}

struct cb_state {
	int fd;
	unsigned seen[3], bad;
	void *held[CB_EACH];
	unsigned nheld;
};

static vma_recv_callback_retval_t on_packet(int fd, size_t sz_iov, struct iovec iov[],
					    struct vma_info_t *info, void *context)
{
	struct cb_state *st = context;
	uint32_t i;
	uint8_t tag;

	if (fd != st->fd || sz_iov != 1 || info->struct_sz < sizeof *info ||
	    info->payload_sz != iov[0].iov_len || !info->src || info->src->sin_family != g_family ||
	    !datagram_ok(iov[0].iov_base, iov[0].iov_len, &i, &tag) || tag > 2) {
		st->bad++;
		return VMA_PACKET_RECV;
	}
	st->seen[tag]++;
	if (tag == VMA_PACKET_HOLD && st->nheld < CB_EACH)
		st->held[st->nheld++] = info->packet_id;
	return (vma_recv_callback_retval_t)tag;
}

/* (2) the callback's verdicts. */
static void callback_phase(struct vma_api_t *api, int fd, const struct sockaddr_storage *peer)
{
	struct cb_state st;
	uint8_t in[2048];
	unsigned recvd = 0, bad = 0;
	char m[200];

	memset(&st, 0, sizeof st);
	st.fd = fd;
	expect(api->register_recv_callback(fd, on_packet, &st) == 0, "register_recv_callback");
	ack(fd, peer, "cb");
	while (recvd < CB_EACH) {
		const ssize_t r = recv(fd, in, sizeof in, 0);
		uint32_t i;
		uint8_t tag;

		if (r < 0) {
			expect(0, "recv in the callback phase");
			return;
		}
		if (!datagram_ok(in, (size_t)r, &i, &tag) || tag != VMA_PACKET_RECV)
			bad++;
		recvd++;
	}
	/* The last DROP/HOLD ones may come after the last RECV one: look
	 * (poll runs the callback too) until all were seen, 10 s at most. */
	for (int t = 0; t < 1000 && st.seen[0] + st.seen[1] + st.seen[2] + st.bad < 3 * CB_EACH; t++) {
		struct pollfd p = {fd, POLLIN, 0};
		if (poll(&p, 1, 10) == 1)
			bad++; /* nothing but DROP/HOLD ones is left to read */
	}
	snprintf(m, sizeof m, "callback saw DROP %u, RECV %u, HOLD %u of %u each (%u malformed)",
		 st.seen[0], st.seen[1], st.seen[2], CB_EACH, st.bad);
	expect(st.seen[0] == CB_EACH && st.seen[1] == CB_EACH && st.seen[2] == CB_EACH && !st.bad, m);
	snprintf(m, sizeof m, "recv got exactly the %u RECV datagrams (%u not)", CB_EACH, bad);
	expect(bad == 0, m);
	unsigned freed = 0;
	for (unsigned k = 0; k < st.nheld; k++)
		freed += free_one(api, fd, st.held[k]) == 0;
	snprintf(m, sizeof m, "free_packets of the %u HOLD packets (%u freed)", st.nheld, freed);
	expect(st.nheld == CB_EACH && freed == CB_EACH, m);
	if (st.nheld) {
		const int r = free_one(api, fd, st.held[0]);
		expect_err(r, errno, ENOENT, "free_packets(a HOLD packet freed already)");
	}
	expect(api->register_recv_callback(fd, NULL, NULL) == 0, "register_recv_callback(NULL)");
	ack(fd, peer, "done");
}

/* (3) the socket's ring descriptors: quiet while nothing waits, POLLIN
 * when the sender's one datagram arrives, quiet again once it is read. */
static void rings_phase(struct vma_api_t *api, int fd, const struct sockaddr_storage *peer)
{
	int rings[16], n, r, err, unbound;
	uint8_t in[2048];
	uint32_t i;
	uint8_t tag;
	char m[200];
	struct pollfd p[16];

	n = api->get_socket_rings_num(fd);
	snprintf(m, sizeof m, "get_socket_rings_num: at least one ring (%d)", n);
	expect(n >= 1 && n <= 16, m);
	if (n < 1 || n > 16)
		return;
	expect(api->get_socket_rings_fds(fd, rings, 16) == n, "get_socket_rings_fds gives them all");
	r = api->get_socket_rings_fds(fd, rings, 0);
	err = errno;
	expect_err(r, err, EINVAL, "get_socket_rings_fds(size 0)");
	r = api->get_socket_rings_fds(fd, NULL, 4);
	err = errno;
	expect_err(r, err, EINVAL, "get_socket_rings_fds(NULL)");
	unbound = socket(AF_INET, SOCK_DGRAM, 0);
	snprintf(m, sizeof m, "a socket not bound yet has no rings (%d)",
		 api->get_socket_rings_num(unbound));
	expect(api->get_socket_rings_num(unbound) == 0, m);
	close(unbound);
	for (int k = 0; k < n; k++)
		p[k] = (struct pollfd){rings[k], POLLIN, 0};
	snprintf(m, sizeof m, "the rings are quiet with nothing sent (poll: %d)", poll(p, (nfds_t)n, 0));
	expect(poll(p, (nfds_t)n, 0) == 0, m);
	ack(fd, peer, "rings");
	r = poll(p, (nfds_t)n, 10000);
	int readable = 0;
	for (int k = 0; k < n && r > 0; k++)
		readable += (p[k].revents & POLLIN) != 0;
	snprintf(m, sizeof m, "a ring is readable when the datagram arrives (poll %d, %d POLLIN)", r,
		 readable);
	expect(r >= 1 && readable >= 1, m);
	r = (int)recv(fd, in, sizeof in, MSG_DONTWAIT);
	expect(r > 0 && datagram_ok(in, (size_t)r, &i, &tag) && i == 99,
	       "the datagram the ring showed is read from the socket");
	snprintf(m, sizeof m, "the rings are quiet again once it is read (poll: %d)", poll(p, (nfds_t)n, 0));
	expect(poll(p, (nfds_t)n, 0) == 0, m);
	ack(fd, peer, "end");
}

/* One datagram from a kernel-path sender to fd, read with recvfrom_zcopy:
 * copied, flag clear. `force`: first asked with MSG_VMA_ZCOPY_FORCE,
 * -1/EIO and the datagram left for the next call, as libvma. */
static void copy_case(struct vma_api_t *api, int fd, const struct sockaddr_storage *to,
		      const char *what, int force)
{
	uint8_t out[1100], buf[1100];
	int flags = MSG_VMA_ZCOPY, r;
	const int s = socket(to->ss_family, SOCK_DGRAM, 0);
	const size_t n = fill_datagram(out, 7, 1);
	uint32_t i;
	uint8_t tag;
	char m[200];

	sendto(s, out, n, 0, (const struct sockaddr *)to, alen(to));
	if (force) {
		flags = MSG_VMA_ZCOPY_FORCE;
		errno = 0;
		r = api->recvfrom_zcopy(fd, buf, sizeof buf, &flags, NULL, NULL);
		snprintf(m, sizeof m, "%s: MSG_VMA_ZCOPY_FORCE gives -1/EIO (%d, %s)", what, r,
			 strerror(errno));
		expect(r == -1 && errno == EIO, m);
		flags = MSG_VMA_ZCOPY;
	}
	r = api->recvfrom_zcopy(fd, buf, sizeof buf, &flags, NULL, NULL);
	snprintf(m, sizeof m, "%s: recvfrom_zcopy copies it, MSG_VMA_ZCOPY clear (%d, flags 0x%x)",
		 what, r, flags);
	expect(r == (int)n && !(flags & MSG_VMA_ZCOPY) && datagram_ok(buf, n, &i, &tag) && i == 7,
	       m);
	close(s);
}

static int mode_recv(const char *ip, int port, uint32_t count)
{
	struct vma_api_t *api = vma_get_api();
	const uint64_t rx_bits = VMA_EXTRA_API_RECVFROM_ZCOPY | VMA_EXTRA_API_FREE_PACKETS |
				 VMA_EXTRA_API_REGISTER_RECV_CALLBACK |
				 VMA_EXTRA_API_GET_SOCKET_RINGS_NUM | VMA_EXTRA_API_GET_SOCKET_RINGS_FDS;
	struct sockaddr_storage a = addr_of(ip, port), peer;
	socklen_t plen = sizeof peer;
	char hello[16];

	if (!api) {
		printf("FAIL: vma_get_api() is NULL\n");
		return 1;
	}
	expect((api->vma_extra_supported_mask & rx_bits) == rx_bits,
	       "the mask has RECVFROM_ZCOPY, FREE_PACKETS, REGISTER_RECV_CALLBACK, "
	       "GET_SOCKET_RINGS_NUM and GET_SOCKET_RINGS_FDS");
	g_family = a.ss_family;
	const int fd = socket(a.ss_family, SOCK_DGRAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, alen(&a)) < 0) {
		perror("socket/bind");
		return 1;
	}
	printf("ready %d %d\n", (int)getpid(), fd);
	fflush(stdout);
	/* The sender's hello (through the rings), then the count's datagrams. */
	if (recvfrom(fd, hello, sizeof hello, 0, (struct sockaddr *)&peer, &plen) < 0) {
		perror("recvfrom hello");
		return 1;
	}
	ack(fd, &peer, "go");
	zcopy_phase(api, fd, count);
	printf("phase zcopy done\n");
	fflush(stdout);
	callback_phase(api, fd, &peer);
	rings_phase(api, fd, &peer);

	copy_case(api, fd, &a, "a datagram from this host (the kernel socket's)", 1);
	/* A socket the preload leaves to the kernel. */
	expect(api->thread_offload(0, pthread_self()) == 0, "thread_offload(0)");
	const int k = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_storage lo = addr_of("127.0.0.1", 0);
	socklen_t llen = sizeof lo;
	bind(k, (struct sockaddr *)&lo, alen(&lo));
	getsockname(k, (struct sockaddr *)&lo, &llen);
	copy_case(api, k, &lo, "a socket left to the kernel", 0);
	int r = api->register_recv_callback(k, on_packet, NULL);
	expect_err(r, errno, EINVAL, "register_recv_callback(a kernel socket)");
	r = free_one(api, k, &lo);
	expect_err(r, errno, EINVAL, "free_packets(a kernel socket)");
	r = api->get_socket_rings_num(k);
	expect_err(r, errno, EINVAL, "get_socket_rings_num(a kernel socket)");
	printf("PASS: %d failure(s)\n", fails);
	return fails != 0;
}

static int wait_for(int fd, const char *what)
{
	char in[16];
	const ssize_t r = recv(fd, in, sizeof in - 1, 0);

	if (r < 0 || (size_t)r != strlen(what) || memcmp(in, what, (size_t)r) != 0) {
		fprintf(stderr, "no \"%s\" from the receiver (%s)\n", what,
			r < 0 ? strerror(errno) : "something else");
		return -1;
	}
	return 0;
}

static int mode_send(const char *ip, int port, uint32_t count)
{
	struct sockaddr_storage to = addr_of(ip, port);
	const int fd = socket(to.ss_family, SOCK_DGRAM, 0);
	struct timeval tv = {10, 0};
	uint8_t out[1100];

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	connect(fd, (struct sockaddr *)&to, alen(&to));
	send(fd, "hello", 5, 0);
	if (wait_for(fd, "go") < 0)
		return 1;
	for (uint32_t i = 0; i < count; i++) {
		send(fd, out, fill_datagram(out, i, 1), 0);
		if (((i + 1) % BATCH == 0 || i + 1 == count) && wait_for(fd, "ack") < 0)
			return 1;
	}
	if (wait_for(fd, "cb") < 0)
		return 1;
	/* DROP, HOLD, RECV in turn: the last one a RECV. */
	static const uint8_t order[3] = {VMA_PACKET_DROP, VMA_PACKET_HOLD, VMA_PACKET_RECV};
	for (uint32_t i = 0; i < 3 * CB_EACH; i++)
		send(fd, out, fill_datagram(out, i, order[i % 3]), 0);
	if (wait_for(fd, "done") < 0 || wait_for(fd, "rings") < 0)
		return 1;
	send(fd, out, fill_datagram(out, 99, 1), 0);
	return wait_for(fd, "end") < 0;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* One MSG_DONTWAIT receive of the rate loop: recvfrom_zcopy, its lent
 * frame freed at once (a frame never freed stays out of the fill ring:
 * the pool's spares stand in until they too are held, then nothing can
 * arrive on the rings), or recv. Its result; *copied counts zcopy datagrams that came copied. */
static ssize_t take_one(struct vma_api_t *api, int fd, int zcopy, uint8_t *buf, size_t len,
			unsigned long *copied)
{
	if (!zcopy)
		return recv(fd, buf, len, MSG_DONTWAIT);
	int flags = MSG_DONTWAIT;
	const int r = api->recvfrom_zcopy(fd, buf, len, &flags, NULL, NULL);
	if (r >= 0 && (flags & MSG_VMA_ZCOPY)) {
		struct vma_packets_t *pk = (struct vma_packets_t *)buf;
		api->free_packets(fd, pk->pkts, pk->n_packet_num);
	} else if (r >= 0) {
		(*copied)++;
	}
	return r;
}

static int mode_rate(const char *ip, int port, double seconds, const char *how)
{
	struct vma_api_t *api = vma_get_api();
	const int zcopy = strcmp(how, "zcopy") == 0;
	struct sockaddr_storage a = addr_of(ip, port);
	const int fd = socket(a.ss_family, SOCK_DGRAM, 0);
	uint8_t buf[2048];
	unsigned long n = 0, copied = 0, empty = 0, early = 0;

	if (zcopy && !api) {
		fprintf(stderr, "no Extra API\n");
		return 1;
	}
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, alen(&a)) < 0) {
		perror("bind");
		return 1;
	}
	/* The kernel's socket as deep as it goes (root: past rmem_max), so a
	 * moment off the CPU costs it no more than the rings' frames do. */
	const int deep = 64 << 20;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &deep, sizeof deep) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &deep, sizeof deep);
	/* What a call finding nothing costs (the sender should start after
	 * "ready"): with the empty calls counted below, the time the receiver
	 * was busy. What a sender started early brings is counted, and freed
	 * as in the run. */
	const unsigned long probes = 100000;
	unsigned long early_copied = 0;
	double t_empty = now();
	for (unsigned long i = 0; i < probes; i++)
		if (take_one(api, fd, zcopy, buf, sizeof buf, &early_copied) >= 0)
			early++;
	t_empty = (now() - t_empty) / (double)probes;
	printf("ready\n");
	fflush(stdout);
	/* The clock starts at the first datagram. */
	if (recv(fd, buf, sizeof buf, 0) < 0)
		return 1;
	const double t0 = now();
	double t = t0;
	while (t - t0 < seconds) {
		const ssize_t r = take_one(api, fd, zcopy, buf, sizeof buf, &copied);
		if (r >= 0)
			n++;
		else
			empty++;
		if ((n & 255) == 0 || r < 0)
			t = now();
	}
	printf("received %lu in %.2f s: %.0f/s (%lu copied, %lu empty, %.0f ns each, %lu before ready)\n",
	       n, t - t0, (double)n / (t - t0), copied, empty, t_empty * 1e9, early);
	fflush(stdout);
	sleep(4);
	return 0;
}

/* hold IP PORT MAX: takes datagrams with recvfrom_zcopy and frees none,
 * until MAX are held or none came for 2 s (the rings ran dry: every frame
 * held); prints "held N". Then frees them all and expects datagrams on
 * the rings again: "after freeing: N more". */
static int mode_hold(const char *ip, int port, uint32_t max)
{
	struct vma_api_t *api = vma_get_api();
	struct sockaddr_storage a = addr_of(ip, port);
	const int fd = socket(a.ss_family, SOCK_DGRAM, 0);
	void **ids = calloc(max, sizeof *ids);
	uint8_t buf[2048];
	uint32_t held = 0;
	unsigned long copied = 0, more = 0;

	if (!api || !ids || fd < 0 || bind(fd, (struct sockaddr *)&a, alen(&a)) < 0) {
		perror("hold: setup");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (double last = now(); held < max && now() - last < 2;) {
		int flags = MSG_DONTWAIT;
		const int r = api->recvfrom_zcopy(fd, buf, sizeof buf, &flags, NULL, NULL);
		if (r < 0)
			continue;
		last = now();
		if (!(flags & MSG_VMA_ZCOPY)) {
			copied++;
			continue;
		}
		const struct vma_packets_t *pk = (const struct vma_packets_t *)buf;
		for (size_t i = 0; i < pk->n_packet_num && held < max; i++)
			ids[held++] = pk->pkts[i].packet_id;
	}
	printf("held %u (%lu copied)\n", held, copied);
	for (uint32_t i = 0; i < held; i++)
		expect(free_one(api, fd, ids[i]) == 0, "free_packets of a held datagram");
	for (double t0 = now(); now() - t0 < 2;) {
		unsigned long c = 0;
		if (take_one(api, fd, 1, buf, sizeof buf, &c) >= 0 && !c)
			more++;
	}
	printf("after freeing: %lu more\n", more);
	fflush(stdout);
	free(ids);
	return fails ? 1 : 0;
}

/* forked IP PORT: takes a datagram with recvfrom_zcopy (its payload in a
 * ring frame), forks: the child reads the datagram in its own copy of the
 * frame and has none of the rest of the rings' memory (pinned: fork would
 * copy it whole), its write to the copy leaves the parent's frame intact,
 * and the parent receives 100 more on the rings. Prints how long fork
 * took. */
static int mode_forked(const char *ip, int port)
{
	struct vma_api_t *api = vma_get_api();
	struct sockaddr_storage a = addr_of(ip, port);
	const int fd = socket(a.ss_family, SOCK_DGRAM, 0);
	uint8_t buf[2048];

	if (!api || fd < 0 || bind(fd, (struct sockaddr *)&a, alen(&a)) < 0) {
		perror("forked: setup");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	int flags = 0;
	int r = api->recvfrom_zcopy(fd, buf, sizeof buf, &flags, NULL, NULL);
	while (r >= 0 && !(flags & MSG_VMA_ZCOPY)) { /* a kernel-path one first */
		flags = 0;
		r = api->recvfrom_zcopy(fd, buf, sizeof buf, &flags, NULL, NULL);
	}
	expect(r >= 0, "a datagram on the rings");
	if (r < 0)
		return 1;
	const struct vma_packets_t *pk = (const struct vma_packets_t *)buf;
	const struct vma_packet_t *p = &pk->pkts[0];
	const uint8_t *payload = p->iov[0].iov_base;
	const size_t len = p->iov[0].iov_len;
	uint8_t seen[2048];
	const size_t n = len < sizeof seen ? len : sizeof seen;
	memcpy(seen, payload, n);
	const double t0 = now();
	const pid_t child = fork();
	const double took = now() - t0;
	if (child == 0) {
		/* The lent frame is the child's own copy: the datagram, writable,
		 * and nothing else of the rings' memory is mapped here. */
		FILE *maps = fopen("/proc/self/maps", "r");
		char line[512];
		int rings = 0;
		unsigned long lo = 0, hi = 0, resident = 0;
		while (maps && fgets(line, sizeof line, maps)) {
			unsigned long a, b;
			rings += strstr(line, "vma-umem") != NULL;
			if (sscanf(line, "%lx-%lx", &a, &b) == 2 && a <= (uintptr_t)payload &&
			    (uintptr_t)payload < b)
				lo = a, hi = b;
		}
		if (!maps || rings || !hi)
			_exit(4);
		fclose(maps);
		/* Before anything reads it: pages only where frames were copied. */
		static unsigned char vec[1 << 20];
		const unsigned long pages = (hi - lo) / 4096;
		if (pages > sizeof vec || mincore((void *)lo, hi - lo, vec) != 0)
			_exit(4);
		for (unsigned long i = 0; i < pages; i++)
			resident += vec[i] & 1;
		printf("child: %lu of the %lu pages of the frames' range resident\n", resident, pages);
		fflush(stdout);
		if (resident * 8 > pages)
			_exit(6);
		if (n == 0 || memcmp(payload, seen, n) != 0)
			_exit(3);
		memset((void *)payload, 0xee, n);
		_exit(((const volatile uint8_t *)payload)[0] == 0xee ? 0 : 5);
	}
	int status = -1;
	waitpid(child, &status, 0);
	expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "the child reads the datagram in the frame lent to its parent, its own copy "
	       "(exit 3: not the datagram; 4: the rings' memory mapped there; 6: more than an "
	       "eighth of it copied (the fill ring is a quarter); a signal: no copy)");
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		printf("child: %s %d\n", WIFEXITED(status) ? "exit" : "signal",
		       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	expect(memcmp(payload, seen, n) == 0, "the parent's lent frame is intact (the child wrote its copy)");
	expect(free_one(api, fd, p->packet_id) == 0, "free_packets after the fork");
	unsigned long more = 0;
	for (double t = now(); more < 100 && now() - t < 10;) {
		unsigned long copied = 0;
		if (take_one(api, fd, 1, buf, sizeof buf, &copied) >= 0 && !copied)
			more++;
	}
	expect(more == 100, "100 more on the rings after the fork");
	printf("fork took %.2f ms\n", took * 1e3);
	printf("PASS: %d failure(s)\n", fails);
	return fails ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "forked"))
		return mode_forked(argv[2], atoi(argv[3]));
	if (argc == 5 && !strcmp(argv[1], "hold"))
		return mode_hold(argv[2], atoi(argv[3]), (uint32_t)atoi(argv[4]));
	if (argc == 5 && !strcmp(argv[1], "recv"))
		return mode_recv(argv[2], atoi(argv[3]), (uint32_t)atoi(argv[4]));
	if (argc == 5 && !strcmp(argv[1], "send"))
		return mode_send(argv[2], atoi(argv[3]), (uint32_t)atoi(argv[4]));
	if (argc == 6 && !strcmp(argv[1], "rate"))
		return mode_rate(argv[2], atoi(argv[3]), atof(argv[4]), argv[5]);
	fprintf(stderr, "usage: %s recv|send|hold IP PORT COUNT | forked IP PORT | rate IP PORT SECONDS zcopy|copy\n", argv[0]);
	return 2;
}
