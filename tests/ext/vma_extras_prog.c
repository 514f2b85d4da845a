/* The Extra API's send flag and ring option under LD_PRELOAD=libvma.so
 * (tests/ext/vma_extras.sh), built against the installed
 * <mellanox/vma_extra.h> only; the peer is vma_calls.c's (it echoes every
 * datagram).  Modes, each in namespace A with the peer in B:
 *   dummy ADDR PORT PEER PEERPORT
 *       VMA_SND_FLAGS_DUMMY on offloaded UDP sockets through send, sendto,
 *       sendmsg and sendmmsg: each returns the length and the first echo
 *       is the real datagram sent after them (a dummy on the wire would
 *       come back first); a socket never bound is bound by its first
 *       dummy; EDESTADDRREQ without a destination; EINVAL where libvma
 *       gives it (a destination the rings do not serve, a socket not
 *       offloaded, a TCP socket, a pipe); dump_fd_stats of the sockets
 *       (the script reads the counts: "dummy counts S C U").
 *   rings ADDR PORT PEER PEERPORT
 *       SO_VMA_RING_ALLOC_LOGIC: libvma's EINVALs (null, a size off by
 *       one, a comp_mask with no known bit) and ours (a logic not
 *       ring_logic_t's, a profile key); every ring_logic_t value accepted,
 *       before bind too; getsockopt and a TCP socket the kernel's
 *       ENOPROTOOPT; sockets with different logics have the same ring fds
 *       and still receive.
 *   lateerr ADDR PORT PEER PEERPORT
 *       an error recvmmsg meets after its first datagram (a port
 *       unreachable, IP_RECVERR) is kept as the kernel keeps it: poll
 *       shows POLLERR, the next recv reports it once, or SO_ERROR does
 *       (not one of the Extra API's: it needs the rings, as above).
 *   stale ADDR PORT PEER PEERPORT
 *       a socket on the rings closed by a raw close system call, its
 *       number given out again by pipe, open, socketpair, socket: the
 *       number is the new descriptor's (data checked), and the port is
 *       the rings' again (the stale record dropped).
 *   sigint ADDR PORT PEER PEERPORT
 *       a SIGINT handler with SA_RESTART (sigaction reports it as set) and
 *       a blocking receive pestered by SIGINT: restarted until the
 *       datagram comes, or EINTR with VMA_HANDLE_SIGINTR=1.
 * Prints "FAIL: ..." per failure, then "PASS: N failure(s)" (N = 0 only
 * when every check passed). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include <mellanox/vma_extra.h>

#include "test_addr.h"
#include "test_expect.h"
#include "unseen_syscall.h"

static struct vma_api_t *api;
static struct sockaddr_storage peer;
static socklen_t peer_len;


/* A UDP socket bound at ip:port (port 0: not bound), receives bounded by 20 s. */
static int udp(int family, const char *ip, unsigned short port)
{
	struct timeval tv = {20, 0};
	struct sockaddr_storage a;
	int fd = socket(family, SOCK_DGRAM, 0);

	if (fd < 0) {
		perror("socket");
		exit(2);
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (port) {
		socklen_t len = make_addr(ip, port, &a);
		if (bind(fd, (struct sockaddr *)&a, len) < 0) {
			perror("bind");
			exit(2);
		}
	}
	return fd;
}

/* Sends `text` to the peer for real; its echo must be the next datagram. */
static void real_echo(int fd, const char *text, const char *what)
{
	char in[256];
	ssize_t n;

	n = sendto(fd, text, strlen(text), 0, (struct sockaddr *)&peer, peer_len);
	expect(n == (ssize_t)strlen(text), "%s: the real sendto (%zd, %s)", what, n, strerror(errno));
	n = recv(fd, in, sizeof in - 1, 0);
	if (n >= 0)
		in[n] = 0;
	expect(n == (ssize_t)strlen(text) && !strcmp(in, text),
	       "%s: the first datagram back is the real one (got %zd: \"%s\")", what, n,
	       n >= 0 ? in : strerror(errno));
}

/* A call expected to fail with `want`. */
static void expect_err(ssize_t r, int err, int want, const char *what)
{
	expect(r == -1 && err == want, "%s: -1/%s (got %zd, %s)", what, strerror(want), r,
	       strerror(err));
}

static int mode_dummy(const char *ip, unsigned short port)
{
	const int fam = peer.ss_family;
	char msg[32];
	struct iovec iov = {msg, 0};
	struct msghdr m = {.msg_name = &peer, .msg_namelen = peer_len, .msg_iov = &iov,
			   .msg_iovlen = 1};
	struct mmsghdr v[4];
	ssize_t r;
	int err, i;

	/* s: bound, unconnected: sendto, sendmsg, sendmmsg (4 dummies each). */
	int s = udp(fam, ip, port);
	for (i = 0; i < 4; i++) {
		int len = snprintf(msg, sizeof msg, "dummy sendto %d", i);
		errno = 0;
		r = sendto(s, msg, (size_t)len, VMA_SND_FLAGS_DUMMY, (struct sockaddr *)&peer,
			   peer_len);
		expect(r == len && errno == 0, "dummy sendto %d returns %d, errno untouched (%zd, %s)",
		       i, len, r, strerror(errno));
		iov.iov_len = (size_t)snprintf(msg, sizeof msg, "dummy sendmsg %d", i);
		r = sendmsg(s, &m, VMA_SND_FLAGS_DUMMY);
		expect(r == (ssize_t)iov.iov_len, "dummy sendmsg %d (%zd, %s)", i, r, strerror(errno));
	}
	memset(v, 0, sizeof v);
	for (i = 0; i < 4; i++)
		v[i].msg_hdr = m; /* all point at msg: "dummy sendmsg 3" */
	r = sendmmsg(s, v, 4, VMA_SND_FLAGS_DUMMY);
	expect(r == 4 && v[0].msg_len == iov.iov_len && v[3].msg_len == iov.iov_len,
	       "dummy sendmmsg of 4 sends 4 (%zd, %s)", r, strerror(errno));
	real_echo(s, "real s", "bound socket");

	/* c: connected: send (4 dummies). */
	int c = udp(fam, ip, (unsigned short)(port + 1));
	expect(connect(c, (struct sockaddr *)&peer, peer_len) == 0, "connect (%s)", strerror(errno));
	for (i = 0; i < 4; i++) {
		int len = snprintf(msg, sizeof msg, "dummy send %d", i);
		r = send(c, msg, (size_t)len, VMA_SND_FLAGS_DUMMY);
		expect(r == len, "dummy send %d on a connected socket (%zd, %s)", i, r,
		       strerror(errno));
	}
	real_echo(c, "real c", "connected socket");

	/* u: never bound: its first dummy binds it, as a send would. */
	int u = udp(fam, ip, 0);
	r = sendto(u, "dummy u", 7, VMA_SND_FLAGS_DUMMY, (struct sockaddr *)&peer, peer_len);
	expect(r == 7, "dummy sendto on a socket never bound (%zd, %s)", r, strerror(errno));
	struct sockaddr_storage got;
	socklen_t glen = sizeof got;
	getsockname(u, (struct sockaddr *)&got, &glen);
	expect((fam == AF_INET ? ((struct sockaddr_in *)&got)->sin_port
			       : ((struct sockaddr_in6 *)&got)->sin6_port) != 0,
	       "the dummy bound the socket to a port");
	expect(api->get_socket_rings_num(u) >= 1, "the socket it bound is on the rings (%d rings)",
	       api->get_socket_rings_num(u));
	real_echo(u, "real u", "socket bound by its dummy");

	/* Errors. */
	errno = 0;
	r = send(s, "x", 1, VMA_SND_FLAGS_DUMMY);
	err = errno;
	expect_err(r, err, EDESTADDRREQ, "dummy send with no destination");
	struct sockaddr_storage lo;
	socklen_t lolen = make_addr(fam == AF_INET ? "127.0.0.1" : "::1", 9, &lo);
	errno = 0;
	r = sendto(s, "x", 1, VMA_SND_FLAGS_DUMMY, (struct sockaddr *)&lo, lolen);
	err = errno;
	expect_err(r, err, EINVAL, "dummy sendto loopback (the kernel's path)");
	int k = udp(fam, fam == AF_INET ? "127.0.0.1" : "::1", (unsigned short)(port + 2));
	errno = 0;
	r = sendto(k, "x", 1, VMA_SND_FLAGS_DUMMY, (struct sockaddr *)&lo, lolen);
	err = errno;
	expect_err(r, err, EINVAL, "dummy sendto on a socket bound to loopback (not offloaded)");
	errno = 0;
	r = sendmmsg(k, v, 1, VMA_SND_FLAGS_DUMMY);
	err = errno;
	expect_err(r, err, EINVAL, "dummy sendmmsg on a socket not offloaded");
	int t = socket(fam, SOCK_STREAM, 0);
	errno = 0;
	r = send(t, "x", 1, VMA_SND_FLAGS_DUMMY);
	err = errno;
	expect_err(r, err, EINVAL, "dummy send on a TCP socket");
	int p[2];
	expect(pipe(p) == 0, "pipe");
	errno = 0;
	r = send(p[1], "x", 1, VMA_SND_FLAGS_DUMMY);
	err = errno;
	expect_err(r, err, EINVAL, "dummy send on a pipe");

	/* The counts, from the sockets' records (the script reads the log). */
	printf("dummy counts fds %d %d %d\n", s, c, u);
	fflush(stdout);
	expect(api->dump_fd_stats(s, 3) == 0 && api->dump_fd_stats(c, 3) == 0 &&
		       api->dump_fd_stats(u, 3) == 0,
	       "dump_fd_stats");
	return 0;
}

static int set_logic(int fd, uint32_t mask, int logic, int in, int out, uint32_t key, socklen_t len)
{
	struct vma_ring_alloc_logic_attr a;

	memset(&a, 0, sizeof a);
	a.comp_mask = mask;
	a.ring_alloc_logic = (ring_logic_t)logic;
	a.ring_profile_key = key;
	a.user_id = 42;
	a.ingress = (unsigned)in;
	a.engress = (unsigned)out;
	errno = 0;
	return setsockopt(fd, SOL_SOCKET, SO_VMA_RING_ALLOC_LOGIC, &a, len);
}

/* The socket's ring fds, sorted, into r[16]: their number. */
static int ring_fds(int fd, int *r)
{
	int n = api->get_socket_rings_fds(fd, r, 16);

	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && r[j - 1] > r[j]; j--) {
			int x = r[j];
			r[j] = r[j - 1];
			r[j - 1] = x;
		}
	return n;
}

static int mode_rings(const char *ip, unsigned short port)
{
	const int fam = peer.ss_family;
	const uint32_t both = VMA_RING_ALLOC_MASK_RING_INGRESS | VMA_RING_ALLOC_MASK_RING_ENGRESS;
	const socklen_t size = sizeof(struct vma_ring_alloc_logic_attr);
	const int logics[] = {0, 1, 10, 11, 20, 30, 31};
	int r, err;

	expect(size == 20, "sizeof(struct vma_ring_alloc_logic_attr) is 20 (%u)", (unsigned)size);
	/* Before bind: kept for the socket. */
	int a = udp(fam, ip, 0);
	r = set_logic(a, both | VMA_RING_ALLOC_MASK_RING_USER_ID, RING_LOGIC_PER_USER_ID, 1, 1, 0,
		      size);
	expect(r == 0, "per user id before bind: 0 (%d, %s)", r, strerror(errno));
	struct sockaddr_storage at;
	socklen_t atlen = make_addr(ip, port, &at);
	expect(bind(a, (struct sockaddr *)&at, atlen) == 0, "bind after the option (%s)",
	       strerror(errno));

	int b = udp(fam, ip, (unsigned short)(port + 1));
	for (size_t i = 0; i < sizeof logics / sizeof logics[0]; i++) {
		r = set_logic(b, both, logics[i], 1, 1, 0, size);
		expect(r == 0, "logic %d accepted (%d, %s)", logics[i], r, strerror(errno));
	}
	r = set_logic(b, VMA_RING_ALLOC_MASK_RING_INGRESS, RING_LOGIC_PER_SOCKET, 1, 0, 0, size);
	expect(r == 0, "per socket, ingress only (%s)", strerror(errno));
	r = set_logic(b, VMA_RING_ALLOC_MASK_RING_ENGRESS, RING_LOGIC_PER_THREAD, 0, 1, 0, size);
	expect(r == 0, "per thread, engress only (%s)", strerror(errno));

	r = setsockopt(b, SOL_SOCKET, SO_VMA_RING_ALLOC_LOGIC, NULL, size);
	err = errno;
	expect_err(r, err, EINVAL, "a null value");
	r = set_logic(b, both, RING_LOGIC_PER_SOCKET, 1, 1, 0, size - 1);
	err = errno;
	expect_err(r, err, EINVAL, "optlen 19");
	r = set_logic(b, both, RING_LOGIC_PER_SOCKET, 1, 1, 0, size + 1);
	err = errno;
	expect_err(r, err, EINVAL, "optlen 21");
	r = set_logic(b, 1u << 4, RING_LOGIC_PER_SOCKET, 1, 1, 0, size);
	err = errno;
	expect_err(r, err, EINVAL, "a comp_mask with none of the four bits");
	r = set_logic(b, both, 5, 1, 1, 0, size);
	err = errno;
	expect_err(r, err, EINVAL, "logic 5 (not ring_logic_t's)");
	r = set_logic(b, both, RING_LOGIC_LAST, 1, 1, 0, size);
	err = errno;
	expect_err(r, err, EINVAL, "RING_LOGIC_LAST");
	r = set_logic(b, both | VMA_RING_ALLOC_MASK_RING_PROFILE_KEY, 0, 1, 1, 7, size);
	err = errno;
	expect_err(r, err, EINVAL, "a ring profile key (none exists)");
	struct vma_ring_alloc_logic_attr back;
	socklen_t blen = sizeof back;
	r = getsockopt(b, SOL_SOCKET, SO_VMA_RING_ALLOC_LOGIC, &back, &blen);
	err = errno;
	expect_err(r, err, ENOPROTOOPT, "getsockopt (libvma leaves it to the kernel)");
	int t = socket(fam, SOCK_STREAM, 0);
	r = set_logic(t, both, RING_LOGIC_PER_SOCKET, 1, 1, 0, size);
	err = errno;
	expect_err(r, err, ENOPROTOOPT, "a TCP socket (the kernel's)");

	/* Every logic shares the netdev's rings. */
	int c = udp(fam, ip, (unsigned short)(port + 2));
	int ra[16], rb[16], rc[16];
	int na = ring_fds(a, ra), nb = ring_fds(b, rb), nc = ring_fds(c, rc);
	expect(na >= 1 && na == nb && nb == nc && !memcmp(ra, rb, sizeof(int) * (size_t)na) &&
		       !memcmp(rb, rc, sizeof(int) * (size_t)na),
	       "per user id, per thread/socket and the default have the same ring fds (%d, %d, %d)",
	       na, nb, nc);
	real_echo(a, "real a", "per user id");
	real_echo(b, "real b", "per socket/thread");
	real_echo(c, "real c", "default");
	return 0;
}

/* One round of mode lateerr: a datagram from the peer on the rings, then
 * an ICMP port unreachable on the socket (IP_RECVERR/IPV6_RECVERR), then
 * recvmmsg of 2 takes the datagram and meets the error after it. */
static int late_round(int x, const char *what)
{
	struct sockaddr_storage closed = peer;
	struct mmsghdr v[2];
	struct iovec iov[2];
	char bufs[2][2048];
	int r;

	if (closed.ss_family == AF_INET)
		((struct sockaddr_in *)&closed)->sin_port = htons(9);
	else
		((struct sockaddr_in6 *)&closed)->sin6_port = htons(9);
	sendto(x, "burst 1 late", 12, 0, (struct sockaddr *)&peer, peer_len);
	sendto(x, "nobody", 6, 0, (struct sockaddr *)&closed, peer_len);
	/* Events 0: only POLLERR (the ICMP came), then POLLIN (the datagram). */
	struct pollfd p = {x, 0, 0};
	r = poll(&p, 1, 20000);
	expect(r == 1 && (p.revents & POLLERR), "%s: the port unreachable arrives (POLLERR)", what);
	/* POLLERR alone ends a poll at once until the datagram is there. */
	p.events = POLLIN;
	for (int i = 0; i < 20000; i++) {
		r = poll(&p, 1, 20000);
		if (r != 1 || (p.revents & POLLIN))
			break;
		usleep(1000);
	}
	expect(r == 1 && (p.revents & POLLIN), "%s: the datagram arrives", what);
	memset(v, 0, sizeof v);
	for (int i = 0; i < 2; i++) {
		iov[i] = (struct iovec){bufs[i], sizeof bufs[i]};
		v[i].msg_hdr.msg_iov = &iov[i];
		v[i].msg_hdr.msg_iovlen = 1;
	}
	errno = 0;
	r = recvmmsg(x, v, 2, MSG_DONTWAIT, NULL);
	expect(r == 1 && !strncmp(bufs[0], "late 0", 6),
	       "%s: recvmmsg gives the datagram, then meets the error (%d, %s)", what, r,
	       strerror(errno));
	p.events = POLLIN;
	r = poll(&p, 1, 0);
	expect(r == 1 && p.revents == POLLERR, "%s: poll shows the kept error alone (0x%x)", what,
	       (unsigned)p.revents);
	return r;
}

/* The error recvmmsg meets after its first datagram is the socket's, as the
 * kernel keeps it: the next receive of any kind reports it, or SO_ERROR. */
static int mode_lateerr(const char *ip, unsigned short port)
{
	const int fam = peer.ss_family, on = 1;
	char in[64];
	int err, val;
	socklen_t len = sizeof val;
	ssize_t r;

	int x = udp(fam, ip, port);
	if (fam == AF_INET)
		setsockopt(x, IPPROTO_IP, IP_RECVERR, &on, sizeof on);
	else
		setsockopt(x, IPPROTO_IPV6, IPV6_RECVERR, &on, sizeof on);
	late_round(x, "recv");
	r = recv(x, in, sizeof in, MSG_DONTWAIT);
	err = errno;
	expect_err(r, err, ECONNREFUSED, "recv after it reports the kept error");
	r = recv(x, in, sizeof in, MSG_DONTWAIT);
	err = errno;
	expect_err(r, err, EAGAIN, "once");
	expect(getsockopt(x, SOL_SOCKET, SO_ERROR, &val, &len) == 0 && val == 0,
	       "SO_ERROR is clear then (%d)", val);

	late_round(x, "SO_ERROR");
	len = sizeof val;
	expect(getsockopt(x, SOL_SOCKET, SO_ERROR, &val, &len) == 0 && val == ECONNREFUSED &&
		       len == sizeof val,
	       "getsockopt(SO_ERROR) gives the kept error (%d)", val);
	r = recv(x, in, sizeof in, MSG_DONTWAIT);
	err = errno;
	expect_err(r, err, EAGAIN, "and clears it: recv");
	return 0;
}

/* A socket on the rings closed behind the preload (a raw close system
 * call): whether a new socket bound at its port is on the rings (its old
 * record gave the port back). */
static int rebind_offloaded(int fam, const char *ip, unsigned short port)
{
	int n = udp(fam, ip, port);
	int rings = api->get_socket_rings_num(n);

	close(n);
	return rings >= 1;
}

static int raw_closed_socket(int fam, const char *ip, unsigned short port)
{
	int s = udp(fam, ip, port);

	expect(api->get_socket_rings_num(s) >= 1, "fd %d is on the rings", s);
	unseen_syscall1(SYS_close, s);  /* libc's syscall() would close it in full */
	return s;
}

/* Numbers the kernel gives out again after a raw close (libvma purges its
 * stale object in socket, pipe, open, creat, socketpair). */
static int mode_stale(const char *ip, unsigned short port)
{
	const int fam = peer.ss_family;
	char c = 0;
	int p[2];

	int s = raw_closed_socket(fam, ip, port);
	expect(pipe(p) == 0 && p[0] == s, "pipe takes the number back (%d, %d)", p[0], s);
	expect(write(p[1], "x", 1) == 1 && read(p[0], &c, 1) == 1 && c == 'x',
	       "the number is the pipe's: read gives what was written");
	expect(rebind_offloaded(fam, ip, port), "the port is the rings' again after pipe");
	close(p[0]);
	close(p[1]);

	s = raw_closed_socket(fam, ip, port);
	int f = open("/dev/null", O_RDONLY);
	expect(f == s && read(f, &c, 1) == 0, "open takes the number back, read is /dev/null's EOF");
	expect(rebind_offloaded(fam, ip, port), "the port is the rings' again after open");
	close(f);

	s = raw_closed_socket(fam, ip, port);
	int sv[2];
	expect(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0 && sv[0] == s, "socketpair takes it back");
	expect(write(sv[1], "y", 1) == 1 && read(sv[0], &c, 1) == 1 && c == 'y',
	       "the number is the socketpair's");
	expect(rebind_offloaded(fam, ip, port), "the port is the rings' again after socketpair");
	close(sv[0]);
	close(sv[1]);

	s = raw_closed_socket(fam, ip, port);
	int n = udp(fam, ip, port);
	expect(n == s && api->get_socket_rings_num(n) >= 1,
	       "socket takes it back and binds the port on the rings (%d rings)",
	       api->get_socket_rings_num(n));
	real_echo(n, "real n", "the new socket at the number");
	return 0;
}

/* ---- sigint ---- */
static volatile sig_atomic_t g_ints;
static volatile int g_done;
static pthread_t g_main;
static int g_int_fd;

static void on_int(int sig)
{
	(void)sig;
	g_ints++;
}

/* SIGINT to the receiving thread every 50 ms; after the tenth, the peer is
 * asked (by the raw system call) for the datagram that ends a restarted
 * receive. */
static void *pester(void *arg)
{
	(void)arg;
	for (int i = 0; !g_done && i < 400; i++) {
		usleep(50000);
		if (!g_done)
			pthread_kill(g_main, SIGINT);
		if (i == 10)
			syscall(SYS_sendto, g_int_fd, "burst 1 Q", 9, 0, (struct sockaddr *)&peer,
				peer_len);
	}
	return NULL;
}

/* A SIGINT handler with SA_RESTART and a blocking receive: restarted
 * (then the datagram), or, with VMA_HANDLE_SIGINTR=1, EINTR as libvma's
 * own SIGINT handler makes it; sigaction reports the program's handler
 * and flags either way. */
static int mode_sigint(const char *ip, unsigned short port)
{
	const char *env = getenv("VMA_HANDLE_SIGINTR");
	const int handle = env && atoi(env) == 1;
	struct timeval none = {0, 0};
	struct sigaction sa, old;
	char buf[2048];
	pthread_t t;

	g_int_fd = udp(peer.ss_family, ip, port);
	setsockopt(g_int_fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none); /* restartable */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_int;
	sa.sa_flags = SA_RESTART;
	expect(sigaction(SIGINT, &sa, NULL) == 0, "sigaction(SIGINT)");
	memset(&old, 0, sizeof old);
	expect(sigaction(SIGINT, NULL, &old) == 0 && old.sa_handler == on_int &&
		       (old.sa_flags & SA_RESTART) && !(old.sa_flags & SA_SIGINFO),
	       "sigaction reports the program's handler and flags (0x%x)", (unsigned)old.sa_flags);
	g_main = pthread_self();
	pthread_create(&t, NULL, pester, NULL);
	errno = 0;
	ssize_t r = recv(g_int_fd, buf, sizeof buf, 0);
	int err = errno;
	g_done = 1;
	pthread_join(t, NULL);
	if (handle)
		expect(r == -1 && err == EINTR,
		       "VMA_HANDLE_SIGINTR=1: SIGINT ends the receive with EINTR (%zd, %s)", r,
		       strerror(err));
	else
		expect(r == 24 && !strncmp(buf, "Q 0", 3) && g_ints > 10,
		       "SA_RESTART: the receive goes on through %d SIGINTs to the datagram (%zd, %s)",
		       (int)g_ints, r, strerror(err));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: %s dummy|rings|lateerr|stale|sigint ADDR PORT PEER PEERPORT\n", argv[0]);
		return 2;
	}
	api = vma_get_api();
	if (!api) {
		printf("FAIL: no Extra API (not under the preload?)\n");
		return 1;
	}
	peer_len = make_addr(argv[4], (unsigned short)atoi(argv[5]), &peer);
	const unsigned short port = (unsigned short)atoi(argv[3]);
	if (!strcmp(argv[1], "dummy"))
		mode_dummy(argv[2], port);
	else if (!strcmp(argv[1], "rings"))
		mode_rings(argv[2], port);
	else if (!strcmp(argv[1], "lateerr"))
		mode_lateerr(argv[2], port);
	else if (!strcmp(argv[1], "stale"))
		mode_stale(argv[2], port);
	else if (!strcmp(argv[1], "sigint"))
		mode_sigint(argv[2], port);
	else
		return 2;
	printf("PASS: %d failure(s)\n", fails);
	return fails != 0;
}
