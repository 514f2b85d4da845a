/* socketXtreme under libvma.so, built against the installed
 * <mellanox/vma_extra.h> only (tests/ext/vma_xtreme.sh).
 *   recv IP PORT COUNT PEER  (under LD_PRELOAD=libvma.so with
 *       VMA_SOCKETXTREME=1, in the offloaded namespace) binds IP:PORT and
 *       IP:PORT+1 (one netdev: the same ring fds), checks the mask's four
 *       socketXtreme bits, the refusals
 *       (socketxtreme_poll on the socket's own fd and on -1: EBADFD;
 *       free_vma_buff/ref_vma_buff of a made-up vma_buff_t and NULL,
 *       free_vma_packets of NULL, of a packet without buffers and of a
 *       made-up buffer: -1/EINVAL), prints "ready", then loops
 *       socketxtreme_poll over the first socket's ring fds until COUNT
 *       datagrams came to both: each completion
 *       VMA_SOCKETXTREME_PACKET|EPOLLIN, user_data the first socket's fd
 *       and the value the second's SO_VMA_USER_DATA was set to, src
 *       PEER, one buffer (next NULL, len == total_len), its payload the
 *       socket's next datagram (socket k gets i = k, k + 2, ...); never
 *       more than the n asked for. Every datagram is freed at once (COUNT exceeds the
 *       rings' frames: they must recycle); every 50th is first
 *       referenced (2), freed by ref count (1), then by
 *       free_vma_packets (the frame back), and a second free of either
 *       kind is -1/EINVAL; every 70th packet is listed twice in one
 *       free_vma_packets: -1/EINVAL, then freed once. After each BATCH it
 *       acknowledges to the sender. Then recvfrom with MSG_DONTWAIT finds
 *       nothing (every datagram went to socketxtreme_poll only) and a
 *       poll with nothing sent returns 0 at once. With XTREME_CB set the
 *       second socket has a receive callback, which sees each of its
 *       datagrams once (payload, source, packet id) and returns DROP,
 *       RECV or HOLD by (i / 2) % 3: only the RECV ones come as
 *       completions, in order; the HOLD ones are freed by free_packets
 *       at the end (a second free: -1/ENOENT). With XTREME_SLEEP set,
 *       a round of polls that changed nothing sleeps in poll(2) on the
 *       ring fds for up to 3 s; after the first datagram no such sleep
 *       may time out (the sender waits for its acknowledgement: a
 *       datagram a poll queued but did not report, the ring fd then
 *       unreadable, would stall both); "slept S" is printed. With
 *       XTREME_STEAL set too, a second thread receives with MSG_DONTWAIT
 *       on a third socket of the netdev (IP, any port) in a loop: each
 *       such call reads the rings and queues the other sockets'
 *       datagrams, which must still wake the sleeper; it must get
 *       EAGAIN only ("stole R reads"). With XTREME_HOLD set
 *       it then prints "held PID" and waits for stdin to close (its
 *       vmastat block is read meanwhile).
 *       Prints "FAIL: ..." per failure and "PASS: N failure(s)".
 *   mrecv GROUP PORT COUNT PEER IFADDR  (as recv) two sockets of the
 *       process on GROUP:PORT, joined on IFADDR: every datagram reaches
 *       both from one shared frame; each member's COUNT completions
 *       checked (payload, order, user_data) and freed as in recv.
 *   off IP PORT  (under the preload, VMA_SOCKETXTREME unset): the bits
 *       still set, the four entries -1/EOPNOTSUPP, on a real ring fd too.
 *   send IP PORT COUNT NPORTS  (the kernel peer) sends COUNT datagrams,
 *       i to PORT + i % NPORTS, in batches of BATCH, each acknowledged by the
 *       receiver. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#include <mellanox/vma_extra.h>

#define BATCH 100
#define MAX_RINGS 16
#define XTREME_BITS                                                                  \
	(VMA_EXTRA_API_SOCKETXTREME_POLL | VMA_EXTRA_API_SOCKETXTREME_FREE_VMA_PACKETS | \
	 VMA_EXTRA_API_SOCKETXTREME_REF_VMA_BUFF | VMA_EXTRA_API_SOCKETXTREME_FREE_VMA_BUFF)

static int fails;

/* XTREME_CB: what the second socket's receive callback saw. */
#define CB_MAX 20000
struct cb_state {
	int fd;
	uint32_t seen[3], bad, nheld;
	void *held[CB_MAX];
};
static struct cb_state cb;

static void expect(int ok, const char *what)
{
	if (!ok) {
		printf("FAIL: %s\n", what);
		fflush(stdout);
		fails++;
	}
}

/* -1 with errno want from a call already made. */
static void expect_err(int r, int err, int want, const char *what)
{
	char m[256];

	snprintf(m, sizeof m, "%s: -1/%s (got %d, %s)", what, strerror(want), r, strerror(err));
	expect(r == -1 && err == want, m);
}

static struct sockaddr_in addr_of(const char *ip, int port)
{
	struct sockaddr_in a;

	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
		fprintf(stderr, "bad address %s\n", ip);
		exit(2);
	}
	return a;
}

/* Datagram i: 4 bytes of i, then a pattern of i. */
static size_t fill_datagram(uint8_t *out, uint32_t i)
{
	const size_t n = 8 + (size_t)(i * 37u) % 1000;
	const uint32_t be = htonl(i);

	memcpy(out, &be, 4);
	for (size_t k = 4; k < n; k++)
		out[k] = (uint8_t)('a' + (i + k) % 26);
	return n;
}

static int datagram_is(const uint8_t *p, size_t n, uint32_t i)
{
	uint8_t want[1100];

	return fill_datagram(want, i) == n && memcmp(want, p, n) == 0;
}

static int bound_socket(const char *ip, int port)
{
	struct sockaddr_in a = addr_of(ip, port);
	int s = socket(AF_INET, SOCK_DGRAM, 0);

	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) < 0) {
		perror("socket/bind");
		exit(2);
	}
	return s;
}

static struct vma_api_t *api_or_exit(void)
{
	struct vma_api_t *api = vma_get_api();

	if (!api) {
		printf("FAIL: vma_get_api() is NULL\n");
		exit(1);
	}
	expect((api->vma_extra_supported_mask & XTREME_BITS) == XTREME_BITS,
	       "the mask has the four socketXtreme bits");
	return api;
}

static int rings_of(struct vma_api_t *api, int s, int *rings)
{
	int n = api->get_socket_rings_fds(s, rings, MAX_RINGS);
	char m[128];

	snprintf(m, sizeof m, "get_socket_rings_fds gives the socket's rings (got %d)", n);
	expect(n > 0, m);
	return n;
}

/* The verdict; with XTREME_HOLD set, "held PID" and a wait for stdin to
 * close (the script reads our vmastat blocks meanwhile). */
static int finish(void)
{
	char buf[64];

	printf("PASS: %d failure(s)\n", fails);
	if (getenv("XTREME_HOLD")) {
		printf("held %d\n", (int)getpid());
		fflush(stdout);
		while (read(0, buf, sizeof buf) > 0)
			;
	}
	return fails ? 1 : 0;
}

/* The refusals, before any datagram. */
static void refusals(struct vma_api_t *api, int s)
{
	struct vma_completion_t c[4];
	struct vma_buff_t fake;
	struct vma_packet_desc_t pkt;
	int r;

	memset(&fake, 0, sizeof fake);
	r = api->socketxtreme_poll(s, c, 4, 0);
	expect_err(r, errno, EBADFD, "socketxtreme_poll(the socket's own fd)");
	r = api->socketxtreme_poll(-1, c, 4, 0);
	expect_err(r, errno, EBADFD, "socketxtreme_poll(-1)");
	r = api->socketxtreme_free_vma_buff(&fake);
	expect_err(r, errno, EINVAL, "socketxtreme_free_vma_buff(a made-up buffer)");
	r = api->socketxtreme_ref_vma_buff(&fake);
	expect_err(r, errno, EINVAL, "socketxtreme_ref_vma_buff(a made-up buffer)");
	r = api->socketxtreme_free_vma_buff(NULL);
	expect_err(r, errno, EINVAL, "socketxtreme_free_vma_buff(NULL)");
	r = api->socketxtreme_free_vma_packets(NULL, 1);
	expect_err(r, errno, EINVAL, "socketxtreme_free_vma_packets(NULL)");
	memset(&pkt, 0, sizeof pkt);
	r = api->socketxtreme_free_vma_packets(&pkt, 1);
	expect_err(r, errno, EINVAL, "socketxtreme_free_vma_packets(a packet without buffers)");
	pkt.num_bufs = 1;
	pkt.buff_lst = &fake;
	r = api->socketxtreme_free_vma_packets(&pkt, 1);
	expect_err(r, errno, EINVAL, "socketxtreme_free_vma_packets(a made-up buffer)");
}

/* Completion c against datagram `want` of the socket whose user_data is
 * ud, from peer. */
static int completion_ok(const struct vma_completion_t *c, uint64_t ud,
			 const struct sockaddr_in *peer, uint32_t want)
{
	const struct vma_buff_t *b = c->packet.buff_lst;
	char m[256];
	int ok = c->events == (VMA_SOCKETXTREME_PACKET | EPOLLIN) && c->user_data == ud &&
		 c->src.sin_family == AF_INET && c->src.sin_addr.s_addr == peer->sin_addr.s_addr &&
		 c->src.sin_port != 0 && c->packet.num_bufs == 1 && b && !b->next &&
		 b->len == c->packet.total_len && datagram_is(b->payload, b->len, want);

	if (!ok) {
		snprintf(m, sizeof m,
			 "completion for datagram %u: events 0x%llx user_data %llu src %s, %zu buffer(s), "
			 "total_len %u",
			 want, (unsigned long long)c->events, (unsigned long long)c->user_data,
			 inet_ntoa(c->src.sin_addr), (size_t)c->packet.num_bufs,
			 (unsigned)c->packet.total_len);
		expect(0, m);
	}
	return ok;
}

/* The frees of datagram i's packet (see the head comment). */
static void free_packet(struct vma_api_t *api, struct vma_packet_desc_t *p, uint32_t i)
{
	struct vma_buff_t *b = p->buff_lst;
	struct vma_packet_desc_t two[2];
	int r;
	char m[160];

	if (i % 50 == 0) {
		r = api->socketxtreme_ref_vma_buff(b);
		snprintf(m, sizeof m, "ref_vma_buff of datagram %u returns 2 (got %d)", i, r);
		expect(r == 2, m);
		r = api->socketxtreme_free_vma_buff(b);
		snprintf(m, sizeof m, "free_vma_buff of datagram %u returns 1 (got %d)", i, r);
		expect(r == 1, m);
	}
	if (i % 70 == 0) {
		two[0] = two[1] = *p;
		r = api->socketxtreme_free_vma_packets(two, 2);
		expect_err(r, errno, EINVAL, "free_vma_packets(one packet twice)");
	}
	r = api->socketxtreme_free_vma_packets(p, 1);
	snprintf(m, sizeof m, "free_vma_packets of datagram %u returns 0 (got %d, %s)", i, r,
		 r ? strerror(errno) : "");
	expect(r == 0, m);
	if (i % 50 == 0) {
		r = api->socketxtreme_free_vma_packets(p, 1);
		expect_err(r, errno, EINVAL, "free_vma_packets of a packet freed already");
		r = api->socketxtreme_free_vma_buff(b);
		expect_err(r, errno, EINVAL, "free_vma_buff of a buffer freed already");
	}
}

/* The second socket's datagram i: DROP, RECV or HOLD by (i / 2) % 3. */
static vma_recv_callback_retval_t on_packet(int fd, size_t sz_iov, struct iovec iov[],
					    struct vma_info_t *info, void *context)
{
	struct cb_state *st = context;
	uint32_t i = 0;
	int tag;

	if (sz_iov == 1 && iov[0].iov_len >= 4) {
		memcpy(&i, iov[0].iov_base, 4);
		i = ntohl(i);
	}
	if (fd != st->fd || sz_iov != 1 || info->struct_sz < sizeof *info || !info->packet_id ||
	    !info->src || info->src->sin_family != AF_INET ||
	    !datagram_is(iov[0].iov_base, iov[0].iov_len, i) || i % 2 != 1) {
		st->bad++;
		return VMA_PACKET_DROP;
	}
	tag = (int)(i / 2 % 3);
	st->seen[tag]++;
	if (tag == VMA_PACKET_HOLD && st->nheld < CB_MAX)
		st->held[st->nheld++] = info->packet_id;
	return (vma_recv_callback_retval_t)tag;
}

/* The second socket's next datagram after j that its callback lets
 * through (RECV), or j + 2 without one. */
static uint32_t next_of_second(uint32_t j)
{
	do
		j += 2;
	while (getenv("XTREME_CB") && j / 2 % 3 != VMA_PACKET_RECV);
	return j;
}

/* The HOLD packets freed by free_packets, once each. */
static void free_held(struct vma_api_t *api)
{
	struct vma_packet_t p;
	uint32_t freed = 0;
	char m[160];
	int r;

	for (uint32_t k = 0; k < cb.nheld; k++) {
		memset(&p, 0, sizeof p);
		p.packet_id = cb.held[k];
		freed += api->free_packets(cb.fd, &p, 1) == 0;
	}
	snprintf(m, sizeof m, "free_packets of the %u HOLD packets (%u freed)", cb.nheld, freed);
	expect(freed == cb.nheld, m);
	if (cb.nheld) {
		memset(&p, 0, sizeof p);
		p.packet_id = cb.held[0];
		r = api->free_packets(cb.fd, &p, 1);
		expect_err(r, errno, ENOENT, "free_packets(a HOLD packet freed already)");
	}
}

/* XTREME_STEAL's thread: reads the rings through its own socket's
 * receives until told to stop. */
struct stealer {
	int fd;
	atomic_int stop;
	unsigned long reads, others;
};

static void *steal(void *arg)
{
	struct stealer *st = arg;
	uint8_t b[2048];

	while (!atomic_load(&st->stop)) {
		if (recv(st->fd, b, sizeof b, MSG_DONTWAIT) >= 0 || errno != EAGAIN)
			st->others++;
		st->reads++;
		sched_yield();
	}
	return NULL;
}

static int mode_recv(const char *ip, int port, uint32_t count, const char *peer_ip)
{
	struct vma_api_t *api = api_or_exit();
	struct sockaddr_in peer = addr_of(peer_ip, 0), from;
	struct vma_completion_t comps[8];
	int rings[MAX_RINGS], rings2[MAX_RINGS], nrings, s[2], r;
	/* Socket k gets datagrams k, k + 2, ...; seen counts those the
	 * callback kept from completions too; acked, those acknowledged. */
	uint32_t got = 0, seen = 0, acked = 0, next[2] = {0, next_of_second((uint32_t)-1)};
	uint8_t buf[2048];
	char m[160];

	s[0] = bound_socket(ip, port);
	s[1] = bound_socket(ip, port + 1);
	/* user_data: the first socket's fd (the default), the second's set. */
	void *tag = (void *)(uintptr_t)0x5e7da7aULL;
	const uint64_t ud[2] = {(uint64_t)s[0], (uint64_t)(uintptr_t)tag};
	r = setsockopt(s[1], SOL_SOCKET, SO_VMA_USER_DATA, &tag, sizeof tag);
	expect(r == 0, "setsockopt(SO_VMA_USER_DATA) on the second socket");
	nrings = rings_of(api, s[0], rings);
	expect(rings_of(api, s[1], rings2) == nrings && !memcmp(rings, rings2, sizeof(int) * (size_t)nrings),
	       "both sockets have the netdev's rings");
	refusals(api, s[0]);
	if (getenv("XTREME_CB")) {
		cb.fd = s[1];
		expect(api->register_recv_callback(s[1], on_packet, &cb) == 0,
		       "register_recv_callback on the second socket");
	}
	const int sleepy = getenv("XTREME_SLEEP") != NULL;
	uint32_t slept = 0, timed_out = 0;
	struct stealer st = {.fd = -1};
	pthread_t stealer_thread;

	if (getenv("XTREME_STEAL")) {
		st.fd = bound_socket(ip, 0);
		expect(pthread_create(&stealer_thread, NULL, steal, &st) == 0, "pthread_create");
	}
	printf("ready\n");
	fflush(stdout);
	while (seen < count && nrings > 0) {
		const uint32_t seen_before = seen;
		int round = 0;

		for (int k = 0; k < nrings && seen < count; k++) {
			/* Ask for fewer than may wait: never more than n. */
			const unsigned int n = 1 + got % 7;

			memset(comps, 0xa5, sizeof comps);
			r = api->socketxtreme_poll(rings[k], comps, n, 0);
			if (r < 0 || (unsigned int)r > n) {
				snprintf(m, sizeof m, "socketxtreme_poll(ring %d, n %u) after %u: %d (%s)",
					 rings[k], n, got, r, r < 0 ? strerror(errno) : "too many");
				expect(0, m);
				goto out;
			}
			if (r < (int)n)
				expect(comps[r].events == 0xa5a5a5a5a5a5a5a5ull,
				       "socketxtreme_poll wrote past its count");
			round += r;
			for (int c = 0; c < r; c++) {
				/* user_data names the socket; each socket's datagrams in order. */
				const int w = comps[c].user_data == ud[1];

				if (!completion_ok(&comps[c], ud[w], &peer, next[w]))
					goto out;
				if (got == 0)
					from = comps[c].src; /* the sender, for acknowledgements */
				free_packet(api, &comps[c].packet, next[w]);
				next[w] = w ? next_of_second(next[w]) : next[w] + 2;
				got++;
			}
			seen = got + cb.seen[VMA_PACKET_DROP] + cb.seen[VMA_PACKET_HOLD] + cb.bad;
			for (; got && (seen >= acked + BATCH || (seen == count && acked < count));
			     acked = seen == count ? count : acked + BATCH)
				sendto(s[0], "ack", 3, 0, (struct sockaddr *)&from, sizeof from);
		}
		if (sleepy && round == 0 && seen == seen_before && seen < count) {
			struct pollfd p[MAX_RINGS];

			for (int k = 0; k < nrings; k++)
				p[k] = (struct pollfd){rings[k], POLLIN, 0};
			slept++;
			if (poll(p, (nfds_t)nrings, 3000) == 0 && seen > 0)
				timed_out++;
		}
	}
out:
	if (st.fd >= 0) {
		atomic_store(&st.stop, 1);
		pthread_join(stealer_thread, NULL);
		printf("stole %lu reads\n", st.reads);
		snprintf(m, sizeof m, "the stealing socket's %lu receives: %lu not EAGAIN", st.reads,
			 st.others);
		expect(st.others == 0, m);
	}
	if (sleepy) {
		printf("slept %u\n", slept);
		snprintf(m, sizeof m, "%u of %u sleeps on the ring fds timed out with datagrams sent",
			 timed_out, slept);
		expect(timed_out == 0, m);
	}
	snprintf(m, sizeof m, "all %u datagrams through socketxtreme_poll (%u completions)", count, got);
	expect(seen == count, m);
	if (getenv("XTREME_CB")) {
		snprintf(m, sizeof m,
			 "the callback saw each of the second socket's %u datagrams once: DROP %u, "
			 "RECV %u, HOLD %u, %u malformed; %u completions",
			 count / 2, cb.seen[0], cb.seen[1], cb.seen[2], cb.bad, got);
		expect(cb.seen[0] + cb.seen[1] + cb.seen[2] == count / 2 && !cb.bad &&
			       got == count / 2 + cb.seen[VMA_PACKET_RECV] && cb.seen[0] && cb.seen[1] &&
			       cb.seen[2],
		       m);
		free_held(api);
	}
	for (int k = 0; k < 2; k++) {
		r = (int)recvfrom(s[k], buf, sizeof buf, MSG_DONTWAIT, NULL, NULL);
		expect_err(r, errno, EAGAIN, "recvfrom after the loop (every datagram was polled)");
	}
	for (int k = 0; k < nrings; k++) {
		r = api->socketxtreme_poll(rings[k], comps, 8, 0);
		expect(r == 0, "socketxtreme_poll with nothing sent returns 0");
	}
	return finish();
}

static int mode_off(const char *ip, int port)
{
	struct vma_api_t *api = api_or_exit();
	struct vma_completion_t c[2];
	struct vma_buff_t fake;
	struct vma_packet_desc_t pkt;
	int rings[MAX_RINGS], s = bound_socket(ip, port), r;

	memset(&fake, 0, sizeof fake);
	memset(&pkt, 0, sizeof pkt);
	if (rings_of(api, s, rings) > 0) {
		r = api->socketxtreme_poll(rings[0], c, 2, 0);
		expect_err(r, errno, EOPNOTSUPP, "socketxtreme_poll(a ring fd), VMA_SOCKETXTREME unset");
	}
	r = api->socketxtreme_poll(s, c, 2, 0);
	expect_err(r, errno, EOPNOTSUPP, "socketxtreme_poll(the socket), VMA_SOCKETXTREME unset");
	r = api->socketxtreme_free_vma_packets(&pkt, 1);
	expect_err(r, errno, EOPNOTSUPP, "socketxtreme_free_vma_packets, VMA_SOCKETXTREME unset");
	r = api->socketxtreme_ref_vma_buff(&fake);
	expect_err(r, errno, EOPNOTSUPP, "socketxtreme_ref_vma_buff, VMA_SOCKETXTREME unset");
	r = api->socketxtreme_free_vma_buff(&fake);
	expect_err(r, errno, EOPNOTSUPP, "socketxtreme_free_vma_buff, VMA_SOCKETXTREME unset");
	printf("PASS: %d failure(s)\n", fails);
	return fails ? 1 : 0;
}

static int mode_send(const char *ip, int port, uint32_t count, int nports)
{
	struct sockaddr_in to = addr_of(ip, port);
	struct timeval tv = {10, 0};
	uint8_t d[1100], ack[16];
	int s = socket(AF_INET, SOCK_DGRAM, 0);

	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	for (uint32_t i = 0; i < count;) {
		const uint32_t end = i + BATCH < count ? i + BATCH : count;

		for (; i < end; i++) {
			const size_t n = fill_datagram(d, i);

			to.sin_port = htons((uint16_t)(port + (int)(i % (uint32_t)nports)));
			if (sendto(s, d, n, 0, (struct sockaddr *)&to, sizeof to) != (ssize_t)n) {
				perror("sendto");
				return 1;
			}
		}
		if (recv(s, ack, sizeof ack, 0) != 3) {
			fprintf(stderr, "no acknowledgement after %u\n", i);
			return 1;
		}
	}
	return 0;
}

/* Two members of GROUP:PORT (SO_REUSEADDR, joined on IFADDR): each
 * datagram reaches both from one frame; every completion checked and
 * freed, both get all COUNT in order. */
static int mode_mrecv(const char *group, int port, uint32_t count, const char *peer_ip,
		      const char *ifaddr)
{
	struct vma_api_t *api = api_or_exit();
	struct sockaddr_in peer = addr_of(peer_ip, 0), a = addr_of(group, port), from;
	struct vma_completion_t comps[8];
	struct ip_mreq mr;
	int rings[MAX_RINGS], nrings, s[2], one = 1, r;
	uint32_t next[2] = {0, 0}, acked = 0;
	char m[160];

	memset(&mr, 0, sizeof mr);
	mr.imr_multiaddr = a.sin_addr;
	inet_pton(AF_INET, ifaddr, &mr.imr_interface);
	for (int k = 0; k < 2; k++) {
		s[k] = socket(AF_INET, SOCK_DGRAM, 0);
		if (s[k] < 0 || setsockopt(s[k], SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
		    bind(s[k], (struct sockaddr *)&a, sizeof a) < 0 ||
		    setsockopt(s[k], IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof mr) < 0) {
			perror("member socket");
			return 2;
		}
	}
	nrings = rings_of(api, s[0], rings);
	printf("ready\n");
	fflush(stdout);
	while ((next[0] < count || next[1] < count) && nrings > 0) {
		for (int k = 0; k < nrings; k++) {
			r = api->socketxtreme_poll(rings[k], comps, 8, 0);
			if (r < 0) {
				snprintf(m, sizeof m, "socketxtreme_poll: %s", strerror(errno));
				expect(0, m);
				goto out;
			}
			for (int c = 0; c < r; c++) {
				const int w = comps[c].user_data == (uint64_t)s[1];

				if (next[w] >= count ||
				    !completion_ok(&comps[c], (uint64_t)s[w], &peer, next[w]))
					goto out;
				if (!next[0] && !next[1])
					from = comps[c].src;
				free_packet(api, &comps[c].packet, next[w]++);
			}
			while (acked < count && (next[0] < next[1] ? next[0] : next[1]) >=
						 (acked + BATCH < count ? acked + BATCH : count)) {
				sendto(s[0], "ack", 3, 0, (struct sockaddr *)&from, sizeof from);
				acked += BATCH;
			}
		}
	}
out:
	snprintf(m, sizeof m, "both members got all %u datagrams (got %u and %u)", count, next[0],
		 next[1]);
	expect(next[0] == count && next[1] == count, m);
	return finish();
}

int main(int argc, char **argv)
{
	if (argc == 6 && !strcmp(argv[1], "recv"))
		return mode_recv(argv[2], atoi(argv[3]), (uint32_t)strtoul(argv[4], NULL, 10), argv[5]);
	if (argc == 4 && !strcmp(argv[1], "off"))
		return mode_off(argv[2], atoi(argv[3]));
	if (argc == 6 && !strcmp(argv[1], "send"))
		return mode_send(argv[2], atoi(argv[3]), (uint32_t)strtoul(argv[4], NULL, 10),
				 atoi(argv[5]));
	if (argc == 7 && !strcmp(argv[1], "mrecv"))
		return mode_mrecv(argv[2], atoi(argv[3]), (uint32_t)strtoul(argv[4], NULL, 10), argv[5],
				  argv[6]);
	fprintf(stderr, "usage: %s recv IP PORT COUNT PEER | mrecv GROUP PORT COUNT PEER IFADDR | "
		"off IP PORT | send IP PORT COUNT NPORTS\n",
		argv[0]);
	return 2;
}
