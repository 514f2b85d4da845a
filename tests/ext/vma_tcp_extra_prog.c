/* The Extra API on TCP connections under LD_PRELOAD=libvma.so
 * (tests/ext/vma_tcp_extra.sh), built against the installed
 * <mellanox/vma_extra.h> only. Byte i of every stream is i % 251.
 *   send ADDR PORT BYTES
 *       Linux's end (no preload): connects, sends BYTES, shuts its write
 *       side and waits for the end of stream; "sent BYTES".
 *   echo ADDR PORT CONNS MSGS
 *       Linux's end: CONNS connections at once (a thread each), each
 *       sending MSGS messages of 64 bytes and reading each one's echo
 *       before the next, every byte checked; "echoed CONNS x MSGS".
 *   xtreme ADDR PORT CONNS [forever]
 *       a socketXtreme server (VMA_SOCKETXTREME=1) as the VMA guide's:
 *       the ring descriptor of its listener taken right after bind, then
 *       only socketxtreme_poll on it (sleeping in poll(2) on it when it
 *       has nothing: 100 ms at most, or with "forever" until it is
 *       readable, so a lost wake-up hangs it): each connection comes as
 *       VMA_SOCKETXTREME_NEW_CONNECTION_ACCEPTED (no accept(), which
 *       then fails with EINVAL), gets an SO_VMA_USER_DATA cookie that its
 *       packet completions carry, has its data checked and echoed with
 *       send and its buffers freed, and is closed at its EPOLLRDHUP;
 *       misuse gets its errno (a descriptor that is no ring: EBADFD; a
 *       packet freed twice: EINVAL; an IPv6 socket's rings: EOPNOTSUPP).
 *       The first packet's first buffer is referenced, outlives its
 *       packet's free until its connection ends, and still holds its
 *       bytes then; "xtreme accepted A bytes B closed C".
 *   xhold ADDR PORT
 *       a socketXtreme server (VMA_SOCKETXTREME=1) of one connection that
 *       holds every packet completion (its buffers lent) until no byte
 *       came for a second while the stream goes on (the peer's window
 *       shut by what is held), then frees them all at once and the rest
 *       as it comes, every byte checked, sleeping on the ring right after
 *       that free (which must wake it); "stalled HELD" and "xhold BYTES".
 *   xpush ADDR PORT BYTES [dup]
 *       a socketXtreme server (VMA_SOCKETXTREME=1) of one connection,
 *       made non-blocking, that sends BYTES: at each EAGAIN it sleeps on
 *       the ring (no timeout: a lost EPOLLOUT hangs it; 2 ms of other
 *       work first) until the connection's EPOLLOUT completion; then shuts its side and closes
 *       at the peer's EPOLLRDHUP; an EPOLLOUT followed by EAGAIN fails
 *       (but the first); "xpush BYTES waits W idle I" (W: the EAGAINs, I: the
 *       EPOLLOUTs without room). With "dup" the connection is duplicated
 *       and its first number closed (SO_VMA_USER_DATA names the other).
 *   xedge ADDR PORT CONNS
 *       a socketXtreme server (VMA_SOCKETXTREME=1) of CONNS connections
 *       one after the other, that watches its ring descriptor
 *       edge-triggered (EPOLLET): it spins on socketxtreme_poll, looking
 *       at the epoll set between polls (timeout 0); at an edge it polls
 *       once more and, with nothing, sleeps on the set (10 s at most: a
 *       completion waiting after such a sleep fails, and ends the run);
 *       frees their data, closes each at its end; "xedge ended N bytes
 *       B edges E".
 *   drain ADDR PORT BYTES
 *       Linux's end: connects, waits a second (the sender's buffers
 *       fill), reads to the end of stream 32 KiB at a time, 100 us apart,
 *       every byte checked;
 *       "drained BYTES" when whole.
 *   serve ADDR PORT
 *       Linux's end: accepts one connection and echoes it to its end;
 *       "served BYTES".
 *   xconnect ADDR PORT MSGS
 *       a socketXtreme client (VMA_SOCKETXTREME=1): a non-blocking
 *       connect, its ring descriptor, the connection's EPOLLOUT as a
 *       completion, then MSGS messages of 64 bytes each sent and their
 *       echoes taken as packet completions, every byte checked, then its
 *       EPOLLRDHUP once it shut its side; "xconnect MSGS".
 *   xdead ADDR PORT
 *       a socketXtreme client (VMA_SOCKETXTREME=1): a non-blocking
 *       connect, its EPOLLOUT, TCP_USER_TIMEOUT of 1 s; "up", then after
 *       a second (the script cuts the link meanwhile) 64 bytes sent and a
 *       sleep on the ring without a timeout until the connection's
 *       EPOLLERR or EPOLLHUP (the stack gives it up in a timer while the
 *       program sleeps); "xdead EVENTS".
 *   zcopy ADDR PORT
 *       accepts one connection and reads it to its end with
 *       recvfrom_zcopy, each call's packets checked and freed at once:
 *       every call with data sets MSG_VMA_ZCOPY (a copy would say the
 *       connection is not ours); a second free of the same packets, a
 *       packet id of nobody's, a buffer too small for one packet and a
 *       descriptor that is no socket get their errors (ENOENT, ENOENT,
 *       ENOBUFS, EINVAL) and lose nothing; "zcopy BYTES calls C packets P
 *       most M" (M: the most packets one call returned).
 *   hold ADDR PORT
 *       the same, holding every packet until no byte came for a second
 *       while the stream goes on (the peer's window shut by what is held:
 *       its sender blocks), forking there (the child reads every held
 *       byte in its own copies: "forked HELD MS", MS the fork's time),
 *       then freeing them all and reading on to the end; "stalled HELD"
 *       and "hold BYTES".
 *   callback ADDR PORT
 *       accepts one connection, registers a receive callback on it that
 *       answers VMA_PACKET_DROP, VMA_PACKET_RECV and VMA_PACKET_HOLD in
 *       turn, and reads with recv to the end: the callback sees every byte
 *       once, in order; recv returns exactly the bytes it kept, in order;
 *       the held ones are freed after each recv. Past 2 MB it unregisters
 *       itself from inside and peeks at the socket there (EAGAIN or kept
 *       bytes, never a wait), and recv reads the rest as it comes;
 *       "callback SEEN drop D recv R hold H end BYTES" (bytes the callback
 *       saw, each verdict's, and the stream's end recv reached).
 * Prints "FAIL: ..." per failure, then "PASS: N failure(s)". */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <mellanox/vma_extra.h>

#include "test_addr.h"
#include "test_expect.h"

static struct vma_api_t *api;

/* A connection to ip:port, or -1 (said). */
static int connect_to(const char *ip, const char *port)
{
	struct sockaddr_storage to;
	socklen_t len = make_addr(ip, (unsigned short)atoi(port), &to);
	int fd = socket(to.ss_family, SOCK_STREAM, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&to, len) != 0) {
		perror("connect");
		return -1;
	}
	return fd;
}

/* The stream's next bytes from pos on into buf (at most size, up to
 * total): their count. */
static size_t next_bytes(unsigned char *buf, size_t size, long pos, long total)
{
	size_t n = (long)size > total - pos ? (size_t)(total - pos) : size;

	for (size_t i = 0; i < n; i++)
		buf[i] = (unsigned char)((pos + (long)i) % 251);
	return n;
}

static int send_stream(const char *ip, const char *port, long total)
{
	int fd = connect_to(ip, port);
	unsigned char buf[65536];
	long sent = 0;
	char c;

	if (fd < 0)
		return 1;
	while (sent < total) {
		ssize_t k = send(fd, buf, next_bytes(buf, sizeof buf, sent, total), 0);

		if (k <= 0) {
			perror("send");
			return 1;
		}
		sent += k;
	}
	shutdown(fd, SHUT_WR);
	if (recv(fd, &c, 1, 0) != 0)
		printf("FAIL: no end of stream from the receiver\n");
	printf("sent %ld\n", sent);
	close(fd);
	return 0;
}

/* The first connection to ip:port. */
static int accept_one(const char *ip, const char *port)
{
	struct sockaddr_storage at;
	socklen_t len = make_addr(ip, (unsigned short)atoi(port), &at);
	int one = 1, l = socket(at.ss_family, SOCK_STREAM, 0), c;

	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (l < 0 || bind(l, (struct sockaddr *)&at, len) != 0 || listen(l, 4) != 0) {
		perror("listen");
		exit(1);
	}
	printf("ready\n");
	fflush(stdout);
	c = accept(l, NULL, NULL);
	if (c < 0) {
		perror("accept");
		exit(1);
	}
	close(l);
	return c;
}

struct stream {
	long bytes, calls, packets, most;
};

/* The packets recvfrom_zcopy described in buf: each byte checked against
 * the stream's position. */
static void check_packets(struct stream *st, const struct vma_packets_t *p, int r)
{
	const unsigned char *at = (const unsigned char *)p->pkts;
	long got = 0;

	for (size_t i = 0; i < p->n_packet_num; i++) {
		const struct vma_packet_t *pk = (const struct vma_packet_t *)at;

		for (size_t v = 0; v < pk->sz_iov; v++) {
			const unsigned char *b = pk->iov[v].iov_base;

			for (size_t k = 0; k < pk->iov[v].iov_len; k++)
				if (b[k] != (unsigned char)((st->bytes + got + (long)k) % 251)) {
					expect(0, "byte %ld differs", st->bytes + got + (long)k);
					return;
				}
			got += (long)pk->iov[v].iov_len;
		}
		at += sizeof *pk + pk->sz_iov * sizeof(struct iovec);
	}
	expect(got == r, "the packets hold %ld bytes, the call said %d", got, r);
	st->bytes += got;
	st->calls++;
	st->packets += (long)p->n_packet_num;
	if ((long)p->n_packet_num > st->most)
		st->most = (long)p->n_packet_num;
}

/* One recvfrom_zcopy into buf: its return, MSG_VMA_ZCOPY checked. */
static int zcopy_call(int c, void *buf, size_t len, int flags)
{
	int r = api->recvfrom_zcopy(c, buf, len, &flags, NULL, NULL);

	if (r > 0)
		expect(flags & MSG_VMA_ZCOPY, "a receive of %d bytes was copied", r);
	return r;
}

static void misuse(int c, struct vma_packets_t *p)
{
	struct vma_packet_t foreign;
	int flags = 0;
	char small[8];

	/* The packets p describes are freed already. */
	expect(api->free_packets(c, p->pkts, p->n_packet_num) == -1 && errno == ENOENT,
	       "a second free: errno %d", errno);
	memset(&foreign, 0, sizeof foreign);
	foreign.packet_id = &foreign;
	expect(api->free_packets(c, &foreign, 1) == -1 && errno == ENOENT,
	       "a packet id of nobody's: errno %d", errno);
	expect(api->recvfrom_zcopy(c, small, sizeof small, &flags, NULL, NULL) == -1 &&
		       errno == ENOBUFS,
	       "a buffer too small for one packet: errno %d", errno);
	expect(api->free_packets(STDIN_FILENO, &foreign, 1) == -1 && errno == EINVAL,
	       "free_packets on a descriptor that is no socket: errno %d", errno);
}

static int zcopy(const char *ip, const char *port)
{
	static unsigned char buf[1 << 16];
	struct vma_packets_t *p = (struct vma_packets_t *)buf;
	struct stream st = {0, 0, 0, 0};
	int c = accept_one(ip, port), r;

	while ((r = zcopy_call(c, buf, sizeof buf, 0)) > 0) {
		check_packets(&st, p, r);
		expect(api->free_packets(c, p->pkts, p->n_packet_num) == 0, "free_packets: errno %d",
		       errno);
		if (st.calls == 1)
			misuse(c, p);
	}
	expect(r == 0, "recvfrom_zcopy: errno %d", errno);
	printf("zcopy %ld calls %ld packets %ld most %ld\n", st.bytes, st.calls, st.packets, st.most);
	close(c);
	return 0;
}

/* The bytes of `held` recvfrom_zcopy results (the stream from its
 * start), each checked: their count, or -1 at the first wrong byte. */
static long held_stream(unsigned char (*bufs)[4096], int held)
{
	long pos = 0;

	for (int c = 0; c < held; c++) {
		const struct vma_packets_t *p = (const struct vma_packets_t *)bufs[c];
		const unsigned char *at = (const unsigned char *)p->pkts;

		for (size_t i = 0; i < p->n_packet_num; i++) {
			const struct vma_packet_t *pk = (const struct vma_packet_t *)at;

			for (size_t v = 0; v < pk->sz_iov; v++) {
				const unsigned char *b = pk->iov[v].iov_base;

				for (size_t k = 0; k < pk->iov[v].iov_len; k++, pos++)
					if (b[k] != (unsigned char)(pos % 251))
						return -1;
			}
			at += sizeof *pk + pk->sz_iov * sizeof(struct iovec);
		}
	}
	return pos;
}

/* A fork while `held` results' packets are lent: the child reads every
 * byte in its own copies. Prints "forked BYTES MS". */
static void fork_holding(unsigned char (*bufs)[4096], int held, long held_bytes)
{
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	const pid_t child = fork();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (child == 0)
		_exit(held_stream(bufs, held) == held_bytes ? 0 : 3);
	int status = -1;
	waitpid(child, &status, 0);
	expect(child > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "a fork child reads the %ld bytes its parent holds (status 0x%x)", held_bytes, status);
	printf("forked %ld %.2f\n", held_bytes,
	       (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
	fflush(stdout);
}

static int hold(const char *ip, const char *port)
{
	/* Each call's records kept apart until they are freed. */
	enum { kCalls = 4096, kLen = 4096 };
	static unsigned char bufs[kCalls][kLen];
	struct stream st = {0, 0, 0, 0};
	int c = accept_one(ip, port), r, held = 0, stalled = 0;
	long held_bytes = 0;

	for (;;) {
		struct pollfd pf = {c, POLLIN, 0};

		if (held == kCalls) {
			expect(0, "%d calls held and no stall", held);
			break;
		}
		r = zcopy_call(c, bufs[held], kLen, MSG_DONTWAIT);
		if (r > 0) {
			struct vma_packets_t *p = (struct vma_packets_t *)bufs[held];

			check_packets(&st, p, r);
			if (stalled) /* after the stall: freed at once */
				expect(api->free_packets(c, p->pkts, p->n_packet_num) == 0,
				       "free_packets: errno %d", errno);
			else
				held_bytes += r, held++;
			continue;
		}
		if (r == 0)
			break;
		if (errno != EAGAIN) {
			expect(0, "recvfrom_zcopy: errno %d", errno);
			break;
		}
		if (poll(&pf, 1, 1000) == 0 && !stalled) {
			stalled = 1;
			printf("stalled %ld\n", held_bytes);
			fflush(stdout);
			fork_holding(bufs, held, held_bytes);
			for (int i = 0; i < held; i++) {
				struct vma_packets_t *p = (struct vma_packets_t *)bufs[i];

				expect(api->free_packets(c, p->pkts, p->n_packet_num) == 0,
				       "free_packets: errno %d", errno);
			}
			held = 0;
		}
	}
	expect(stalled, "the stream never stalled");
	printf("hold %ld\n", st.bytes);
	close(c);
	return 0;
}

/* The callback mode's state: what the callback saw, kept and held. */
enum { kMaxHeld = 1024, kMaxKept = 65536 };
static struct {
	long seen, dropped, kept_bytes, held_bytes;
	long calls;
	int fd, unregistered;
	void *held[kMaxHeld];
	int nheld;
	long kept_at[kMaxKept], kept_len[kMaxKept]; /* ranges recv must return */
	int nkept;
} cbs;

static vma_recv_callback_retval_t on_data(int fd, size_t sz_iov, struct iovec iov[],
					   struct vma_info_t *info, void *context)
{
	vma_recv_callback_retval_t verdict = (vma_recv_callback_retval_t)(cbs.calls++ % 3);
	long len = 0;

	(void)fd;
	expect(context == &cbs, "the callback's context");
	expect(info && info->struct_sz >= sizeof *info, "vma_info");
	for (size_t v = 0; v < sz_iov; v++) {
		const unsigned char *b = iov[v].iov_base;

		for (size_t k = 0; k < iov[v].iov_len; k++)
			if (b[k] != (unsigned char)((cbs.seen + len + (long)k) % 251)) {
				expect(0, "the callback's byte %ld differs", cbs.seen + len + (long)k);
				break;
			}
		len += (long)iov[v].iov_len;
	}
	expect(info && (long)info->payload_sz == len, "payload_sz %zu, iovecs %ld",
	       info ? info->payload_sz : 0, len);
	if (verdict == VMA_PACKET_HOLD && cbs.nheld == kMaxHeld)
		verdict = VMA_PACKET_DROP;
	if (verdict == VMA_PACKET_RECV && cbs.nkept == kMaxKept)
		verdict = VMA_PACKET_DROP;
	switch (verdict) {
	case VMA_PACKET_DROP:
		cbs.dropped += len;
		break;
	case VMA_PACKET_RECV:
		cbs.kept_at[cbs.nkept] = cbs.seen;
		cbs.kept_len[cbs.nkept++] = len;
		cbs.kept_bytes += len;
		break;
	case VMA_PACKET_HOLD:
		cbs.held[cbs.nheld++] = info->packet_id;
		cbs.held_bytes += len;
		break;
	}
	cbs.seen += len;
	if (cbs.seen >= 2000000 && !cbs.unregistered && cbs.nkept < kMaxKept) {
		char peek[16];
		ssize_t r;

		cbs.unregistered = 1;
		expect(api->register_recv_callback(cbs.fd, NULL, NULL) == 0,
		       "unregistering from inside: errno %d", errno);
		r = recv(cbs.fd, peek, sizeof peek, MSG_PEEK | MSG_DONTWAIT);
		expect(r > 0 || (r < 0 && errno == EAGAIN), "a peek from inside: %zd errno %d", r,
		       errno);
		cbs.kept_at[cbs.nkept] = cbs.seen;  /* everything after: recv's */
		cbs.kept_len[cbs.nkept++] = 1L << 40;
	}
	return verdict;
}

static void free_held(int c)
{
	struct vma_packet_t rec[kMaxHeld];

	for (int i = 0; i < cbs.nheld; i++) {
		rec[i].packet_id = cbs.held[i];
		rec[i].sz_iov = 0;
	}
	if (cbs.nheld)
		expect(api->free_packets(c, rec, (size_t)cbs.nheld) == 0,
		       "free_packets of %d held: errno %d", cbs.nheld, errno);
	cbs.nheld = 0;
}

static int callback(const char *ip, const char *port)
{
	static unsigned char buf[1 << 16];
	int c = accept_one(ip, port), range = 0, bad = 0;
	long in_range = 0;
	ssize_t r;

	cbs.fd = c;
	expect(api->register_recv_callback(c, on_data, &cbs) == 0,
	       "register_recv_callback: errno %d", errno);
	while ((r = recv(c, buf, sizeof buf, 0)) > 0) {
		/* Each byte recv gives is the next kept one (checked up to the
		 * first that is not). */
		for (ssize_t k = 0; k < r && !bad; k++) {
			while (range < cbs.nkept && in_range == cbs.kept_len[range])
				range++, in_range = 0;
			if (range == cbs.nkept) {
				expect(0, "recv gave a byte the callback did not keep");
				bad = 1;
				break;
			}
			if (buf[k] != (unsigned char)((cbs.kept_at[range] + in_range) % 251)) {
				expect(0, "recv's byte at %ld differs", cbs.kept_at[range] + in_range);
				bad = 1;
				break;
			}
			in_range++;
		}
		free_held(c);
	}
	expect(r == 0, "recv: errno %d", errno);
	free_held(c);
	expect(cbs.dropped && cbs.held_bytes && cbs.unregistered, "every verdict was used");
	/* The stream's end as recv reached it: past the unregistering, recv
	 * read every byte. */
	printf("callback %ld drop %ld recv %ld hold %ld end %ld\n", cbs.seen, cbs.dropped,
	       cbs.kept_bytes, cbs.held_bytes,
	       range < cbs.nkept ? cbs.kept_at[range] + in_range : -1L);
	close(c);
	return 0;
}

struct echo_conn {
	const char *ip, *port;
	long msgs;
	int ok;
};

static void *echo_one(void *arg)
{
	struct echo_conn *e = arg;
	int fd = connect_to(e->ip, e->port);
	unsigned char out[64], in[64];
	long pos = 0;

	if (fd < 0)
		return NULL;
	for (long m = 0; m < e->msgs; m++) {
		size_t got = 0;

		for (size_t i = 0; i < sizeof out; i++)
			out[i] = (unsigned char)((pos + (long)i) % 251);
		if (send(fd, out, sizeof out, 0) != (ssize_t)sizeof out)
			break;
		while (got < sizeof in) {
			ssize_t k = recv(fd, in + got, sizeof in - got, 0);

			if (k <= 0)
				break;
			got += (size_t)k;
		}
		if (got != sizeof in || memcmp(in, out, sizeof in))
			break;
		pos += (long)sizeof out;
		if (m + 1 == e->msgs)
			e->ok = 1;
	}
	close(fd);
	return NULL;
}

static int echo_clients(const char *ip, const char *port, int conns, long msgs)
{
	pthread_t th[64];
	struct echo_conn e[64];
	int ok = 0;

	if (conns < 1 || conns > 64)
		return 2;
	for (int i = 0; i < conns; i++) {
		e[i] = (struct echo_conn){ip, port, msgs, 0};
		pthread_create(&th[i], NULL, echo_one, &e[i]);
	}
	for (int i = 0; i < conns; i++) {
		pthread_join(th[i], NULL);
		ok += e[i].ok;
	}
	if (ok == conns)
		printf("echoed %d x %ld\n", conns, msgs);
	else
		printf("FAIL: %d of %d connections echoed whole\n", ok, conns);
	return ok != conns;
}

/* socketXtreme serves IPv4 sockets only: an IPv6 one's rings are refused. */
static void ipv6_refused(void)
{
	int types[] = {SOCK_STREAM, SOCK_DGRAM};

	for (int i = 0; i < 2; i++) {
		int fd = socket(AF_INET6, types[i], 0), ring;

		expect(fd >= 0, "an IPv6 socket: errno %d", errno);
		expect(api->get_socket_rings_fds(fd, &ring, 1) == -1 && errno == EOPNOTSUPP,
		       "an IPv6 socket's rings: errno %d", errno);
		close(fd);
	}
}

/* A packet buffer referenced past its packet's free. */
struct kept_buff {
	struct vma_buff_t *buff;
	int fd, done;
	size_t len;
	unsigned char bytes[64];
};

static void free_kept(struct kept_buff *k)
{
	expect(memcmp(k->buff->payload, k->bytes, k->len) == 0,
	       "a referenced buffer changed after its packet's free");
	expect(api->socketxtreme_free_vma_buff(k->buff) == 0,
	       "socketxtreme_free_vma_buff: errno %d", errno);
	expect(api->socketxtreme_free_vma_buff(k->buff) == -1 && errno == EINVAL,
	       "a buffer freed twice: errno %d", errno);
	k->buff = NULL;
	k->done = 1;
}

static int sleep_ms = 100; /* xtreme_poll_once's; -1: until the ring is readable */

/* One socketxtreme_poll of ring; with nothing, a sleep of at most
 * sleep_ms on its descriptor. The count, or -1 (a failure noted). */
static int xtreme_poll_once(int ring, struct vma_completion_t *comps, int most)
{
	int n = api->socketxtreme_poll(ring, comps, most, 0);

	if (n < 0)
		expect(0, "socketxtreme_poll: errno %d", errno);
	if (n == 0) {
		struct pollfd p = {ring, POLLIN, 0};

		poll(&p, 1, sleep_ms);
	}
	return n;
}

/* A packet's buffers checked against fd's stream at *pos (moved on). */
static void check_chain(const struct vma_buff_t *b, long *pos, int fd)
{
	for (; b; b = b->next) {
		const unsigned char *d = b->payload;

		for (size_t k = 0; k < b->len; k++)
			if (d[k] != (unsigned char)((*pos + (long)k) % 251)) {
				expect(0, "fd %d: byte %ld differs", fd, *pos + (long)k);
				break;
			}
		*pos += b->len;
	}
}

static int xtreme(const char *ip, const char *port, int conns)
{
	struct kept_buff kept = {0};
	enum { kFds = 1024 };
	static long pos[kFds];
	struct sockaddr_storage at;
	socklen_t len = make_addr(ip, (unsigned short)atoi(port), &at);
	int one = 1, l = socket(at.ss_family, SOCK_STREAM, 0), ring = -1, accepted = 0, closed = 0;
	int freed_twice = 0;
	long bytes = 0;

	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (l < 0 || bind(l, (struct sockaddr *)&at, len) != 0) {
		perror("bind");
		return 1;
	}
	expect(api->get_socket_rings_fds(l, &ring, 1) == 1, "the listener's ring after bind: errno %d",
	       errno);
	if (listen(l, 16) != 0 || ring < 0) {
		perror("listen");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (closed < conns) {
		struct vma_completion_t comps[16];
		int n = xtreme_poll_once(ring, comps, 16);

		if (n < 0)
			break;
		if (n == 0)
			continue;
		for (int i = 0; i < n; i++) {
			struct vma_completion_t *c = &comps[i];
			int fd = (int)(c->user_data >= 1000 ? c->user_data - 1000 : c->user_data);

			if (c->events & VMA_SOCKETXTREME_NEW_CONNECTION_ACCEPTED) {
				uint64_t cookie = (uint64_t)c->user_data + 1000;
				void *p = (void *)(uintptr_t)cookie;

				expect(c->listen_fd == l, "listen_fd %d, not %d", c->listen_fd, l);
				expect(c->src.sin_family == AF_INET, "the peer's address");
				expect(fd >= 0 && fd < kFds, "the new connection's fd %d", fd);
				if (fd >= 0 && fd < kFds)
					pos[fd] = 0; /* a number a closed one had */
				expect(setsockopt(fd, SOL_SOCKET, SO_VMA_USER_DATA, &p, sizeof p) == 0,
				       "SO_VMA_USER_DATA: errno %d", errno);
				accepted++;
				if (accepted == 1) {
					struct vma_completion_t none;
					struct vma_packet_desc_t bad = {.num_bufs = 1, .total_len = 1};

					expect(accept(l, NULL, NULL) == -1 && errno == EINVAL,
					       "accept beside auto-accept: errno %d", errno);
					expect(api->socketxtreme_poll(l, &none, 1, 0) == -1 && errno == EBADFD,
					       "socketxtreme_poll on a listener: errno %d", errno);
					expect(api->socketxtreme_free_vma_packets(&bad, 1) == -1,
					       "a packet of no buffer freed");
					ipv6_refused();
				}
				continue;
			}
			if (fd < 0 || fd >= kFds)
				continue;
			if (c->events & VMA_SOCKETXTREME_PACKET) {
				expect(c->user_data >= 1000, "a packet without its cookie");
				if (!kept.buff && !kept.done && c->packet.buff_lst) {
					struct vma_buff_t *b = c->packet.buff_lst;

					kept.buff = b;
					kept.fd = fd;
					kept.len = b->len < sizeof kept.bytes ? b->len : sizeof kept.bytes;
					memcpy(kept.bytes, b->payload, kept.len);
					expect(api->socketxtreme_ref_vma_buff(b) == 2,
					       "socketxtreme_ref_vma_buff: errno %d", errno);
				}
				check_chain(c->packet.buff_lst, &pos[fd], fd);
				bytes += c->packet.total_len;
				for (struct vma_buff_t *b = c->packet.buff_lst; b; b = b->next)
					expect(send(fd, b->payload, b->len, 0) == (ssize_t)b->len,
					       "the echo's send: errno %d", errno);
				/* Freed twice: refused, unless a buffer of it holds
				 * the program's extra reference (that free is the
				 * reference's), so checked on a packet without. */
				int holds_kept = 0;

				for (struct vma_buff_t *b = c->packet.buff_lst; b; b = b->next)
					holds_kept |= b == kept.buff;
				expect(api->socketxtreme_free_vma_packets(&c->packet, 1) == 0,
				       "socketxtreme_free_vma_packets: errno %d", errno);
				if (!freed_twice && !holds_kept) {
					errno = 0;
					expect(api->socketxtreme_free_vma_packets(&c->packet, 1) == -1 &&
						       errno == EINVAL,
					       "a packet freed twice: errno %d", errno);
					freed_twice = 1;
				}
			}
			if (c->events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
				if (kept.buff && kept.fd == fd)
					free_kept(&kept);
				close(fd);
				closed++;
			}
		}
	}
	if (kept.buff)
		free_kept(&kept);
	printf("xtreme accepted %d bytes %ld closed %d\n", accepted, bytes, closed);
	close(l);
	return 0;
}

static double seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A listener on ip:port with its ring descriptor (*ring) taken between
 * bind and listen, as the VMA guide's; "ready" said. -1 (said) when not. */
static int xtreme_listener(const char *ip, const char *port, int *ring)
{
	struct sockaddr_storage at;
	socklen_t len = make_addr(ip, (unsigned short)atoi(port), &at);
	int one = 1, l = socket(at.ss_family, SOCK_STREAM, 0);

	*ring = -1;
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (l < 0 || bind(l, (struct sockaddr *)&at, len) != 0 ||
	    api->get_socket_rings_fds(l, ring, 1) != 1 || listen(l, 4) != 0) {
		perror("listener");
		return -1;
	}
	printf("ready\n");
	fflush(stdout);
	return l;
}

static int xhold(const char *ip, const char *port)
{
	enum { kMostHeld = 1 << 16 };
	static struct vma_packet_desc_t held[kMostHeld];
	int ring, l = xtreme_listener(ip, port, &ring), nheld = 0;
	int stalled = 0, done = 0;
	long bytes = 0, held_bytes = 0;
	double last = seconds();

	if (l < 0)
		return 1;
	while (!done && seconds() - last < 30) {
		struct vma_completion_t comps[16];
		int n = xtreme_poll_once(ring, comps, 16);

		if (n < 0)
			break;
		if (n == 0) {
			/* The ring's descriptor may be readable with nothing for
			 * this connection: a stall is a second without a byte. */
			if (!stalled && nheld && seconds() - last > 1) {
				stalled = 1;
				printf("stalled %ld\n", held_bytes);
				fflush(stdout);
				expect(api->socketxtreme_free_vma_packets(held, nheld) == 0,
				       "socketxtreme_free_vma_packets: errno %d", errno);
				nheld = 0;
				/* Asleep at once, no poll first: the free itself
				 * must wake the ring (what was held stopped the
				 * connection's reads). */
				struct pollfd p = {ring, POLLIN, 0};

				expect(poll(&p, 1, 10000) == 1, "no wake-up within 10 s of the free");
			}
			continue;
		}
		for (int i = 0; i < n; i++) {
			struct vma_completion_t *c = &comps[i];

			if (c->events & VMA_SOCKETXTREME_NEW_CONNECTION_ACCEPTED)
				continue;
			if (c->events & VMA_SOCKETXTREME_PACKET) {
				check_chain(c->packet.buff_lst, &bytes, (int)c->user_data);
				last = seconds();
				if (stalled || nheld == kMostHeld) {
					expect(stalled, "%d packets held and no stall", nheld);
					expect(api->socketxtreme_free_vma_packets(&c->packet, 1) == 0,
					       "socketxtreme_free_vma_packets: errno %d", errno);
				} else {
					held[nheld++] = c->packet;
					held_bytes += c->packet.total_len;
				}
			}
			if (c->events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
				close((int)c->user_data);
				done = 1;
			}
		}
	}
	if (nheld)
		api->socketxtreme_free_vma_packets(held, nheld);
	expect(done, "the stream never ended (%ld bytes)", bytes);
	expect(stalled, "the stream never stalled");
	printf("xhold %ld\n", bytes);
	close(l);
	return 0;
}

/* xpush's state, told on stderr when `timeout` ends a hung run. */
static volatile long push_state[5]; /* fd, sent, want_out, waits, polls */

static void on_push_term(int sig)
{
	static const char *const names[] = {"fd", "sent", "want_out", "waits", "polls"};
	char b[256];
	size_t at = 0;

	(void)sig;
	for (int i = 0; i < 5; i++) {
		char num[24];
		int k = 0;
		long v = push_state[i];
		unsigned long u = v < 0 ? (unsigned long)-v : (unsigned long)v;

		do
			num[k++] = (char)('0' + u % 10);
		while ((u /= 10) && k < 23);
		if (v < 0)
			num[k++] = '-';
		b[at++] = ' ';
		for (const char *c = names[i]; *c; c++)
			b[at++] = *c;
		b[at++] = ' ';
		while (k)
			b[at++] = num[--k];
	}
	b[at++] = '\n';
	if (write(2, "xpush hung:", 11) < 0 || write(2, b, at) < 0)
		_exit(124);
	_exit(124);
}

static int xpush(const char *ip, const char *port, long total, int dup_it)
{
	static unsigned char buf[65536];
	int ring, l = xtreme_listener(ip, port, &ring), fd = -1, done = 0;
	int want_out = 0, waits = 0, out_seen = 0, out_idle = 0;
	long sent = 0;

	if (l < 0)
		return 1;
	signal(SIGTERM, on_push_term);
	sleep_ms = -1;
	while (!done) {
		struct vma_completion_t comps[16];
		int n;

		push_state[0] = fd, push_state[1] = sent, push_state[2] = want_out;
		push_state[3] = waits, push_state[4]++;

		if (fd >= 0 && !want_out && sent < total) {
			ssize_t w = send(fd, buf, next_bytes(buf, sizeof buf, sent, total), MSG_NOSIGNAL);

			if (w > 0) {
				out_seen = 0;
				sent += w;
				if (sent == total)
					expect(shutdown(fd, SHUT_WR) == 0, "shutdown: errno %d", errno);
				continue;
			}
			if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
				expect(0, "send: errno %d after %ld bytes", errno, sent);
				break;
			}
			want_out = 1;
			waits++;
			/* Other work before the poll: the room may be back by
			 * then, and the EPOLLOUT must still come. */
			usleep(2000);
			out_idle += out_seen; /* an EPOLLOUT that brought no room */
			out_seen = 0;
		}
		n = xtreme_poll_once(ring, comps, 16);
		if (n < 0)
			break;
		for (int i = 0; i < n; i++) {
			struct vma_completion_t *c = &comps[i];

			if (c->events & VMA_SOCKETXTREME_NEW_CONNECTION_ACCEPTED) {
				expect(fd < 0, "a second connection");
				fd = (int)c->user_data;
				expect(fcntl(fd, F_SETFL, O_NONBLOCK) == 0, "O_NONBLOCK: errno %d", errno);
				if (dup_it) { /* the connection named by its duplicate alone */
					int d = dup(fd);
					void *p = (void *)(uintptr_t)d;

					expect(d >= 0 && close(fd) == 0, "dup, close: errno %d", errno);
					fd = d;
					expect(setsockopt(fd, SOL_SOCKET, SO_VMA_USER_DATA, &p, sizeof p) == 0,
					       "SO_VMA_USER_DATA: errno %d", errno);
				}
				continue;
			}
			expect((int)c->user_data == fd, "a completion of fd %d", (int)c->user_data);
			if (c->events & VMA_SOCKETXTREME_PACKET) {
				expect(0, "%d bytes from a peer that sends nothing", c->packet.total_len);
				api->socketxtreme_free_vma_packets(&c->packet, 1);
			}
			if (c->events & EPOLLOUT)
				want_out = 0, out_seen = 1;
			if (c->events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
				expect(sent == total, "the peer's end after %ld bytes", sent);
				done = 1;
			}
		}
	}
	expect(waits > 0, "no send met a full buffer");
	/* The connection's first EPOLLOUT (it was writable when accepted)
	 * may come after a full buffer. */
	expect(out_idle <= 1, "%d EPOLLOUT completions without room", out_idle);
	printf("xpush %ld waits %d idle %d\n", sent, waits, out_idle);
	close(fd);
	close(l);
	return 0;
}

static int xedge(const char *ip, const char *port, int conns)
{
	int ring, l = xtreme_listener(ip, port, &ring), ep = epoll_create1(0), done = 0;
	int edges = 0, late = 0;
	struct epoll_event e = {.events = EPOLLIN | EPOLLET};
	static long pos[1024];
	long bytes = 0;
	double start = seconds();

	if (l < 0 || ep < 0)
		return 1;
	e.data.fd = ring;
	expect(epoll_ctl(ep, EPOLL_CTL_ADD, ring, &e) == 0, "epoll_ctl: errno %d", errno);
	while (done < conns && !late && seconds() - start < 30) {
		struct vma_completion_t comps[16];
		int n = api->socketxtreme_poll(ring, comps, 16, 0);

		if (n == 0 && epoll_wait(ep, &e, 1, 0) == 1) {
			edges++;
			n = api->socketxtreme_poll(ring, comps, 16, 0);
			if (n == 0 && epoll_wait(ep, &e, 1, 10000) == 0) {
				n = api->socketxtreme_poll(ring, comps, 16, 0);
				late += n > 0; /* it waited through the sleep */
			}
		}
		if (n < 0) {
			expect(0, "socketxtreme_poll: errno %d", errno);
			break;
		}
		for (int i = 0; i < n; i++) {
			struct vma_completion_t *c = &comps[i];

			int fd = (int)c->user_data;

			if (fd < 0 || fd >= 1024) {
				expect(0, "a completion of fd %d", fd);
				continue;
			}
			if (c->events & VMA_SOCKETXTREME_NEW_CONNECTION_ACCEPTED) {
				pos[fd] = 0;
				continue;
			}
			if (c->events & VMA_SOCKETXTREME_PACKET) {
				check_chain(c->packet.buff_lst, &pos[fd], fd);
				bytes += c->packet.total_len;
				api->socketxtreme_free_vma_packets(&c->packet, 1);
			}
			if (c->events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
				close((int)c->user_data);
				done++;
			}
		}
	}
	expect(!late, "completions waited through an edge-triggered sleep of 10 s");
	printf("xedge ended %d bytes %ld edges %d\n", done, bytes, edges);
	close(ep);
	close(l);
	return 0;
}

static int drain(const char *ip, const char *port, long total)
{
	static unsigned char buf[32768]; /* within a vma_buff_t's len */
	int fd = connect_to(ip, port), err = 0;
	long got = 0;
	ssize_t n = -1;

	if (fd >= 0) {
		sleep(1);
		while ((n = recv(fd, buf, sizeof buf, 0)) > 0) {
			struct vma_buff_t b = {NULL, buf, (uint16_t)n};

			check_chain(&b, &got, fd);
			usleep(100); /* the sender's buffer fills again and again */
		}
		err = errno;
		close(fd);
	}
	expect(n == 0 && got == total, "%ld of %ld bytes (errno %d)", got, total, n < 0 ? err : 0);
	if (!fails)
		printf("drained %ld\n", got);
	return fails != 0;
}

static int serve(const char *ip, const char *port)
{
	int c = accept_one(ip, port);
	char buf[65536];
	long total = 0;
	ssize_t n;

	while ((n = recv(c, buf, sizeof buf, 0)) > 0) {
		if (send(c, buf, (size_t)n, 0) != n) {
			perror("send");
			return 1;
		}
		total += n;
	}
	printf("served %ld\n", total);
	close(c);
	return n != 0;
}

/* The next completions of ring into comps (asleep in poll between), for
 * at most 30 s: a ring fd can be readable with nothing for this socket
 * (poll then returns at once), so a count of tries bounds nothing. */
static int xtreme_wait(int ring, struct vma_completion_t *comps, int most)
{
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		int n = xtreme_poll_once(ring, comps, most);

		if (n != 0)
			return n;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - start.tv_sec < 30);
	return 0;
}

static void xconnect(const char *ip, const char *port, long msgs)
{
	struct sockaddr_storage to;
	socklen_t len = make_addr(ip, (unsigned short)atoi(port), &to);
	int fd = socket(to.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0), ring = -1, up = 0, end = 0;
	long sent = 0, got = 0;
	unsigned char msg[64];

	if (fd < 0 || (connect(fd, (struct sockaddr *)&to, len) != 0 && errno != EINPROGRESS)) {
		expect(0, "connect: errno %d", errno);
		return;
	}
	expect(api->get_socket_rings_fds(fd, &ring, 1) == 1, "a connecting socket's ring: errno %d",
	       errno);
	while (ring >= 0 && !end) {
		struct vma_completion_t comps[16];
		int n = xtreme_wait(ring, comps, 16);

		if (n <= 0) {
			expect(0, "no completion (errno %d) after %ld echoed", errno, got);
			break;
		}
		for (int i = 0; i < n; i++) {
			struct vma_completion_t *c = &comps[i];

			expect(c->user_data == (uint64_t)fd, "user_data %llu", (unsigned long long)c->user_data);
			if (c->events & EPOLLOUT)
				up = 1;
			if (c->events & VMA_SOCKETXTREME_PACKET) {
				for (struct vma_buff_t *b = c->packet.buff_lst; b; b = b->next)
					for (size_t k = 0; k < b->len; k++, got++)
						if (((const unsigned char *)b->payload)[k] !=
						    (unsigned char)(got % 251)) {
							expect(0, "echoed byte %ld differs", got);
							end = 1;
							break;
						}
				expect(api->socketxtreme_free_vma_packets(&c->packet, 1) == 0,
				       "socketxtreme_free_vma_packets: errno %d", errno);
			}
			if (c->events & (EPOLLHUP | EPOLLERR))
				end = 1;
			if (c->events & EPOLLRDHUP)
				end = 1;
		}
		expect(up, "data before the connection's EPOLLOUT");
		/* One message in flight: the next once the last came back. */
		if (up && sent == got && sent < msgs * 64) {
			for (size_t k = 0; k < sizeof msg; k++)
				msg[k] = (unsigned char)((sent + (long)k) % 251);
			if (send(fd, msg, sizeof msg, 0) != (ssize_t)sizeof msg) {
				expect(0, "send: errno %d", errno);
				break;
			}
			sent += (long)sizeof msg;
			if (sent == msgs * 64)
				shutdown(fd, SHUT_WR);
		}
	}
	expect(got == msgs * 64, "%ld of %ld bytes echoed", got, msgs * 64);
	printf("xconnect %ld\n", got / 64);
	close(fd);
}

static void xdead(const char *ip, const char *port)
{
	struct sockaddr_storage to;
	socklen_t len = make_addr(ip, (unsigned short)atoi(port), &to);
	int fd = socket(to.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0), ring = -1, ms = 1000;
	uint64_t seen = 0;
	char msg[64] = {0};

	if (fd < 0 || (connect(fd, (struct sockaddr *)&to, len) != 0 && errno != EINPROGRESS) ||
	    api->get_socket_rings_fds(fd, &ring, 1) != 1) {
		expect(0, "connect or its ring: errno %d", errno);
		return;
	}
	sleep_ms = -1;
	while (!(seen & EPOLLOUT)) {
		struct vma_completion_t c;

		if (xtreme_poll_once(ring, &c, 1) == 1)
			seen |= c.events;
	}
	expect(setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof ms) == 0,
	       "TCP_USER_TIMEOUT: errno %d", errno);
	printf("up\n");
	fflush(stdout);
	sleep(1);
	expect(send(fd, msg, sizeof msg, 0) == (ssize_t)sizeof msg, "send: errno %d", errno);
	seen = 0;
	while (!(seen & (EPOLLERR | EPOLLHUP))) {
		struct vma_completion_t c;

		if (xtreme_poll_once(ring, &c, 1) == 1)
			seen |= c.events;
	}
	printf("xdead%s%s\n", seen & EPOLLERR ? " EPOLLERR" : "", seen & EPOLLHUP ? " EPOLLHUP" : "");
	close(fd);
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	int x = (argc == 5 || (argc == 6 && !strcmp(argv[5], "forever"))) &&
		(!strcmp(m, "xtreme") || !strcmp(m, "xconnect"));

	if (argc == 5 && !strcmp(m, "send"))
		return send_stream(argv[2], argv[3], atol(argv[4]));
	if (argc == 6 && !strcmp(m, "echo"))
		return echo_clients(argv[2], argv[3], atoi(argv[4]), atol(argv[5]));
	if (argc == 4 && !strcmp(m, "serve"))
		return serve(argv[2], argv[3]);
	if (argc == 5 && !strcmp(m, "drain"))
		return drain(argv[2], argv[3], atol(argv[4]));
	int push = !strcmp(m, "xpush") && (argc == 5 || (argc == 6 && !strcmp(argv[5], "dup")));

	int edge = !strcmp(m, "xedge") && argc == 5;

	if (!x && !push && !edge && argc != 4) {
		fprintf(stderr,
			"usage: %s send|drain|xpush ADDR PORT BYTES [dup] | xedge ADDR PORT CONNS | "
			"zcopy|hold|callback|xhold|xdead ADDR PORT\n",
			argv[0]);
		return 2;
	}
	api = vma_get_api();
	if (!api) {
		printf("FAIL: no Extra API (not under libvma.so?)\n");
		return 1;
	}
	if (argc == 6)
		sleep_ms = -1;
	if (x && m[1] == 't')
		xtreme(argv[2], argv[3], atoi(argv[4]));
	else if (x)
		xconnect(argv[2], argv[3], atol(argv[4]));
	else if (push)
		xpush(argv[2], argv[3], atol(argv[4]), argc == 6);
	else if (!strcmp(m, "zcopy"))
		zcopy(argv[2], argv[3]);
	else if (!strcmp(m, "hold"))
		hold(argv[2], argv[3]);
	else if (!strcmp(m, "callback"))
		callback(argv[2], argv[3]);
	else if (!strcmp(m, "xhold"))
		xhold(argv[2], argv[3]);
	else if (!strcmp(m, "xdead"))
		xdead(argv[2], argv[3]);
	else if (edge)
		xedge(argv[2], argv[3], atoi(argv[4]));
	else
		return 2;
	printf("PASS: %d failure(s)\n", fails);
	return fails != 0;
}
