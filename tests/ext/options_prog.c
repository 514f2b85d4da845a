// Socket options on a connected TCP socket, as a program sees them:
// run plain and preloaded by preload_options.sh (librspreload) and
// vma_options.sh (libvma.so), whose diffs of the outputs are the tests
// (options as the kernel answers them).
//
//   options_prog serve PORT FAMILY [ADDR]   accept one connection, print
//       the options on the accepted socket, send "done", then read until
//       the peer's end
//   options_prog probe PORT FAMILY [ADDR]   connect, print the options on
//       the connected socket, wait for "done", close
//
// FAMILY is 4 or 6: the address is ADDR, or else 127.0.0.1 or ::1. One
// line per option: "get LEVEL NAME rc=R errno=E len=L value", and
// "set ... -> get ..." for the ones set and read back; then every option
// number of the socket's levels read ("sweep get") and, where it could
// be, set back to what it read ("sweep set"). Values that follow the
// transport (buffer sizes, the MSS, TCP_INFO's counters) print as
// "varies" with only their length; with OPTIONS_SEGMENTS set, TCP_INFO's
// state and whether it counted segments received and sampled an RTT.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct opt {
	int level, name;
	const char *label;
	int varies; // value follows the transport: only rc, errno and len compared
};

#define O(l, n, v)                                                                                 \
	{                                                                                          \
		l, n, #l " " #n, v                                                                 \
	}
static const struct opt gets[] = {
    O(SOL_SOCKET, SO_TYPE, 0),		 O(SOL_SOCKET, SO_DOMAIN, 0),
    O(SOL_SOCKET, SO_PROTOCOL, 0),	 O(SOL_SOCKET, SO_ACCEPTCONN, 0),
    O(SOL_SOCKET, SO_ERROR, 0),		 O(SOL_SOCKET, SO_REUSEADDR, 0),
    O(SOL_SOCKET, SO_REUSEPORT, 0),	 O(SOL_SOCKET, SO_KEEPALIVE, 0),
    O(SOL_SOCKET, SO_BROADCAST, 0),	 O(SOL_SOCKET, SO_DONTROUTE, 0),
    O(SOL_SOCKET, SO_OOBINLINE, 0),	 O(SOL_SOCKET, SO_LINGER, 0),
    O(SOL_SOCKET, SO_RCVLOWAT, 0),	 O(SOL_SOCKET, SO_SNDLOWAT, 0),
    O(SOL_SOCKET, SO_RCVTIMEO, 0),	 O(SOL_SOCKET, SO_SNDTIMEO, 0),
    O(SOL_SOCKET, SO_PRIORITY, 0),	 O(SOL_SOCKET, SO_MARK, 0),
    O(SOL_SOCKET, SO_BINDTODEVICE, 0),	 O(SOL_SOCKET, SO_TIMESTAMP, 0),
    O(SOL_SOCKET, SO_PASSCRED, 0),	 O(SOL_SOCKET, SO_RCVBUF, 1),
    O(SOL_SOCKET, SO_SNDBUF, 1),	 O(SOL_SOCKET, SO_BUSY_POLL, 0),
    O(SOL_SOCKET, SO_INCOMING_CPU, 1),	 O(SOL_SOCKET, SO_ZEROCOPY, 0),
    O(IPPROTO_TCP, TCP_NODELAY, 0),	 O(IPPROTO_TCP, TCP_CORK, 0),
    O(IPPROTO_TCP, TCP_KEEPIDLE, 0),	 O(IPPROTO_TCP, TCP_KEEPINTVL, 0),
    O(IPPROTO_TCP, TCP_KEEPCNT, 0),	 O(IPPROTO_TCP, TCP_SYNCNT, 0),
    O(IPPROTO_TCP, TCP_LINGER2, 0),	 O(IPPROTO_TCP, TCP_DEFER_ACCEPT, 0),
    O(IPPROTO_TCP, TCP_WINDOW_CLAMP, 1), O(IPPROTO_TCP, TCP_QUICKACK, 1),
    O(IPPROTO_TCP, TCP_USER_TIMEOUT, 0), O(IPPROTO_TCP, TCP_NOTSENT_LOWAT, 0),
    O(IPPROTO_TCP, TCP_MAXSEG, 1),	 O(IPPROTO_TCP, TCP_INFO, 1),
    O(IPPROTO_TCP, TCP_CONGESTION, 1),
};
static const struct opt gets4[] = {
    O(IPPROTO_IP, IP_TOS, 0),	  O(IPPROTO_IP, IP_TTL, 0),	O(IPPROTO_IP, IP_MTU_DISCOVER, 0),
    O(IPPROTO_IP, IP_RECVERR, 0), O(IPPROTO_IP, IP_OPTIONS, 0), O(IPPROTO_IP, IP_MTU, 0),
};
static const struct opt gets6[] = {
    O(IPPROTO_IPV6, IPV6_V6ONLY, 0),	   O(IPPROTO_IPV6, IPV6_TCLASS, 0),
    O(IPPROTO_IPV6, IPV6_UNICAST_HOPS, 0), O(IPPROTO_IPV6, IPV6_MTU_DISCOVER, 0),
    O(IPPROTO_IPV6, IPV6_RECVERR, 0),	   O(IPPROTO_IPV6, IPV6_MTU, 0),
    O(IPPROTO_IPV6, IPV6_ADDRFORM, 0),
};

static void get(int fd, const struct opt *o)
{
	unsigned char v[512];
	memset(v, 0, sizeof v);
	socklen_t len = sizeof v;
	errno = 0;
	int rc = getsockopt(fd, o->level, o->name, v, &len);
	int err = rc ? errno : 0;
	printf("get %s rc=%d errno=%d len=%u ", o->label, rc, err, rc ? 0 : len);
	if (rc)
		printf("-");
	else if (o->level == IPPROTO_TCP && o->name == TCP_INFO && getenv("OPTIONS_SEGMENTS")) {
		// The connection's state, and past glibc's fields Linux's
		// tcpi_segs_in (at 140) and tcpi_min_rtt (at 148, ~0: no
		// sample): where segments are TCP's.
		unsigned int segs_in = 0, min_rtt = 0;
		if (len >= 152) {
			memcpy(&segs_in, v + 140, sizeof segs_in);
			memcpy(&min_rtt, v + 148, sizeof min_rtt);
		}
		printf("state %u segs_in %s min_rtt %s", v[0], segs_in ? "counted" : "none",
		       min_rtt && min_rtt != ~0u ? "sampled" : "none");
	} else if (o->varies)
		printf("varies");
	else
		for (socklen_t i = 0; i < len && i < 32; i++)
			printf("%02x", v[i]);
	printf("\n");
}

struct set {
	int level, name, value;
	const char *label;
};
#define S(l, n, v)                                                                                 \
	{                                                                                          \
		l, n, v, #l " " #n " " #v                                                          \
	}
static const struct set sets[] = {
    S(SOL_SOCKET, SO_KEEPALIVE, 1),
    S(SOL_SOCKET, SO_PRIORITY, 3),
    S(SOL_SOCKET, SO_RCVLOWAT, 7),
    S(SOL_SOCKET, SO_OOBINLINE, 1),
    S(IPPROTO_TCP, TCP_NODELAY, 1),
    S(IPPROTO_TCP, TCP_KEEPIDLE, 77),
    S(IPPROTO_TCP, TCP_KEEPINTVL, 11),
    S(IPPROTO_TCP, TCP_KEEPCNT, 5),
    S(IPPROTO_TCP, TCP_USER_TIMEOUT, 3000),
    S(IPPROTO_TCP, TCP_NOTSENT_LOWAT, 4096),
    S(IPPROTO_TCP, TCP_LINGER2, 9),
    S(IPPROTO_TCP, TCP_KEEPIDLE, 0),
    S(SOL_SOCKET, 9999, 1),
    S(IPPROTO_TCP, 9999, 1),
};
static const struct set sets4[] = {S(IPPROTO_IP, IP_TOS, 0x10), S(IPPROTO_IP, IP_TTL, 9)};
static const struct set sets6[] = {S(IPPROTO_IPV6, IPV6_TCLASS, 0x20),
				   S(IPPROTO_IPV6, IPV6_UNICAST_HOPS, 9)};

static void set_get(int fd, const struct set *s)
{
	errno = 0;
	int rc = setsockopt(fd, s->level, s->name, &s->value, sizeof s->value);
	int err = rc ? errno : 0;
	int back = -1;
	socklen_t len = sizeof back;
	int grc = getsockopt(fd, s->level, s->name, &back, &len);
	printf("set %s rc=%d errno=%d -> get rc=%d value=%d\n", s->label, rc, err, grc,
	       grc ? 0 : back);
}

// Every option number of the TCP socket's levels: read before any set
// (a set may drop the socket's cached route, which IPV6_MTU reads), then
// where the read worked set back to what it said (a change of nothing).
// Values differ by process and transport (cookies, credentials,
// counters): only the answers print.
static const struct {
	int level, last;
	const char *label;
} sweep_levels[] = {{SOL_SOCKET, 80, "SOL_SOCKET"},
		    {IPPROTO_TCP, 50, "IPPROTO_TCP"},
		    {IPPROTO_IP, 80, "IPPROTO_IP"},
		    {IPPROTO_IPV6, 90, "IPPROTO_IPV6"}};
#define SWEEP_LEVELS (sizeof sweep_levels / sizeof sweep_levels[0])
static struct {
	int rc;
	socklen_t len;
	unsigned char v[512];
} swept[SWEEP_LEVELS][91];

static int sweeps(size_t l, int family)
{
	return !((sweep_levels[l].level == IPPROTO_IP && family == 6) ||
		 (sweep_levels[l].level == IPPROTO_IPV6 && family == 4));
}

static void sweep_gets(int fd, int family)
{
	for (size_t l = 0; l < SWEEP_LEVELS; l++)
		for (int name = 0; sweeps(l, family) && name <= sweep_levels[l].last; name++) {
			typeof(swept[0][0]) *o = &swept[l][name];
			memset(o->v, 0, sizeof o->v);
			o->len = sizeof o->v;
			errno = 0;
			o->rc = getsockopt(fd, sweep_levels[l].level, name, o->v, &o->len);
			printf("sweep get %s %d rc=%d errno=%d len=%u\n", sweep_levels[l].label,
			       name, o->rc, o->rc ? errno : 0, o->rc ? 0 : o->len);
		}
}

static void sweep_sets(int fd, int family)
{
	for (size_t l = 0; l < SWEEP_LEVELS; l++)
		for (int name = 0; sweeps(l, family) && name <= sweep_levels[l].last; name++) {
			typeof(swept[0][0]) *o = &swept[l][name];
			// The MSS follows the transport: Linux refuses to set
			// loopback's (above 32767) back.
			if (o->rc || (sweep_levels[l].level == IPPROTO_TCP && name == TCP_MAXSEG))
				continue;
			errno = 0;
			int rc = setsockopt(fd, sweep_levels[l].level, name, o->v, o->len);
			printf("sweep set %s %d rc=%d errno=%d\n", sweep_levels[l].label, name, rc,
			       rc ? errno : 0);
		}
}

static void print_all(int fd, int family)
{
	for (size_t i = 0; i < sizeof gets / sizeof gets[0]; i++)
		get(fd, &gets[i]);
	const struct opt *fam = family == 4 ? gets4 : gets6;
	size_t n = family == 4 ? sizeof gets4 / sizeof gets4[0] : sizeof gets6 / sizeof gets6[0];
	for (size_t i = 0; i < n; i++)
		get(fd, &fam[i]);
	sweep_gets(fd, family);
	// SO_PEERNAME with room for the name alone: getpeername's name.
	struct sockaddr_storage peer, named;
	socklen_t plen = sizeof peer;
	memset(&named, 0, sizeof named);
	int prc = getpeername(fd, (struct sockaddr *)&peer, &plen);
	socklen_t nlen = plen;
	int nrc = getsockopt(fd, SOL_SOCKET, SO_PEERNAME, &named, &nlen);
	printf("get SO_PEERNAME, room for the name: rc=%d len %s, %s getpeername's\n", nrc,
	       nlen == plen ? "same" : "other",
	       !prc && !nrc && !memcmp(&peer, &named, plen) ? "the name is" : "not");
	// Another level's options: Linux's errno for the family.
	socklen_t olen = sizeof(int);
	int ov, orc = family == 4 ? getsockopt(fd, IPPROTO_IPV6, IPV6_ADDRFORM, &ov, &olen)
				  : getsockopt(fd, IPPROTO_IP, IP_TTL, &ov, &olen);
	printf("get the other family's option rc=%d errno=%d\n", orc, orc ? errno : 0);
	// Bad arguments: a length too short, an unknown level.
	int v;
	socklen_t len = 1;
	errno = 0;
	int rc = getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &len);
	printf("get SO_TYPE len 1 rc=%d errno=%d len=%u\n", rc, rc ? errno : 0, len);
	len = sizeof v;
	errno = 0;
	rc = getsockopt(fd, 12345, 1, &v, &len);
	printf("get level 12345 rc=%d errno=%d\n", rc, rc ? errno : 0);
	for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
		set_get(fd, &sets[i]);
	const struct set *fs = family == 4 ? sets4 : sets6;
	n = family == 4 ? sizeof sets4 / sizeof sets4[0] : sizeof sets6 / sizeof sets6[0];
	for (size_t i = 0; i < n; i++)
		set_get(fd, &fs[i]);
	// A name as short as "bbr" (an int's length is no rule here).
	errno = 0;
	rc = setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, "bbr", 3);
	char cc[16] = "";
	len = sizeof cc;
	int grc = getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, &len);
	printf("set TCP_CONGESTION bbr rc=%d errno=%d -> get rc=%d %.16s\n", rc, rc ? errno : 0, grc,
	       cc);
	sweep_sets(fd, family);
	fflush(stdout);
}

static socklen_t addr_of(int family, int port, const char *addr, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof *ss);
	if (family == 4) {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (addr && inet_pton(AF_INET, addr, &a->sin_addr) != 1)
			return 0;
		return sizeof *a;
	}
	struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
	a->sin6_family = AF_INET6;
	a->sin6_port = htons((uint16_t)port);
	a->sin6_addr = in6addr_loopback;
	if (addr && inet_pton(AF_INET6, addr, &a->sin6_addr) != 1)
		return 0;
	return sizeof *a;
}

int main(int argc, char **argv)
{
	struct sockaddr_storage ss;
	socklen_t sl = argc == 4 || argc == 5 ? addr_of(atoi(argv[3]), atoi(argv[2]),
							   argc == 5 ? argv[4] : NULL, &ss)
					      : 0;
	if (!sl) {
		fprintf(stderr, "usage: options_prog serve|probe PORT 4|6 [ADDR]\n");
		return 2;
	}
	int family = atoi(argv[3]);
	int s = socket(family == 4 ? AF_INET : AF_INET6, SOCK_STREAM, 0);
	if (s < 0)
		return 3;
	if (!strcmp(argv[1], "serve")) {
		int one = 1;
		if (setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
		    bind(s, (struct sockaddr *)&ss, sl) || listen(s, 4))
			return 4;
		printf("ready\n");
		fflush(stdout);
		int c = accept(s, NULL, NULL);
		if (c < 0)
			return 5;
		print_all(c, family);
		// Done: the client closes only now (a socket the peer closed
		// answers some options otherwise). Eight bytes: SO_RCVLOWAT is 7.
		char b[8] = "done...";
		if (write(c, b, sizeof b) != sizeof b)
			return 7;
		while (read(c, b, 1) > 0) {
		}
		close(c);
	} else {
		if (connect(s, (struct sockaddr *)&ss, sl))
			return 6;
		print_all(s, family);
		char b[8];
		size_t got = 0;
		for (ssize_t n; got < sizeof b; got += (size_t)n)
			if ((n = read(s, b + got, sizeof b - got)) <= 0)
				return 7;
	}
	close(s);
	return 0;
}
