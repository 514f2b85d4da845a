/* The VMA preload seen by a program built against the installed
 * <mellanox/vma_extra.h> only (tests/ext/vma_preload.sh).  Modes:
 *   api     the Extra API under the preload: the table, its exact mask,
 *           every missing entry -1/EOPNOTSUPP, the four socketXtreme ones
 *           too (VMA_SOCKETXTREME unset: libvma sets their bits and fails
 *           them so), the receive entries on an
 *           unbound socket, add_conf_rule (a port
 *           rule deciding at bind, wildcard rules at socket),
 *           thread_offload, dump_fd_stats, SO_VMA_USER_DATA and
 *           SO_VMA_RING_ALLOC_LOGIC on a UDP socket, SO_VMA_* on a kernel socket,
 *           SO_VMA_GET_API on a real fd; prints "FAIL: ..." per failure.
 *   noapi   without the preload: vma_get_api() is NULL.
 *   hold    a UDP socket bound to 127.0.0.1, "ready PID FD" on stdout,
 *           then waits for stdin to close.
 *   smoke   threads opening and closing sockets while the program forks,
 *           and the child execs this program in mode "child".
 *   child   one UDP socket, closed; exit 0. */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mellanox/vma_extra.h>

static int fails;

static void expect(int ok, const char *what)
{
	if (!ok) {
		printf("FAIL: %s\n", what);
		fails++;
	}
}

/* -1 and EOPNOTSUPP from a call already made. */
static void unsupported(int ret, int err, const char *name)
{
	char what[128];

	snprintf(what, sizeof what, "%s returns -1/EOPNOTSUPP (got %d, %s)", name, ret,
		 strerror(err));
	expect(ret == -1 && err == EOPNOTSUPP, what);
}

#define CALL_UNSUPPORTED(name, ...) \
	do { \
		errno = 0; \
		int r_ = api->name(__VA_ARGS__); \
		unsupported(r_, errno, #name); \
	} while (0)

static int udp_socket(void)
{
	return socket(AF_INET, SOCK_DGRAM, 0);
}

static int mode_api(void)
{
	struct vma_api_t *api = vma_get_api();
	const uint64_t want = VMA_EXTRA_API_ADD_CONF_RULE | VMA_EXTRA_API_THREAD_OFFLOAD |
			      VMA_EXTRA_API_DUMP_FD_STATS | VMA_EXTRA_API_RECVFROM_ZCOPY |
			      VMA_EXTRA_API_FREE_PACKETS | VMA_EXTRA_API_REGISTER_RECV_CALLBACK |
			      VMA_EXTRA_API_GET_SOCKET_RINGS_NUM | VMA_EXTRA_API_GET_SOCKET_RINGS_FDS |
			      VMA_EXTRA_API_SOCKETXTREME_POLL | VMA_EXTRA_API_SOCKETXTREME_FREE_VMA_PACKETS |
			      VMA_EXTRA_API_SOCKETXTREME_REF_VMA_BUFF |
			      VMA_EXTRA_API_SOCKETXTREME_FREE_VMA_BUFF;
	char buf[256];
	int flags = 0, key = 0, r, err;
	uint16_t hlen = 0;
	uint32_t lkey = 0;

	if (!api) {
		printf("FAIL: vma_get_api() is NULL under the preload\n");
		return 1;
	}
	expect(vma_get_api() == api, "vma_get_api() returns the same table every time");
	snprintf(buf, sizeof buf, "mask is exactly add_conf_rule|thread_offload|dump_fd_stats|"
		 "recvfrom_zcopy|free_packets|register_recv_callback|get_socket_rings_num|"
		 "get_socket_rings_fds|the four socketxtreme ones (got 0x%llx)",
		 (unsigned long long)api->vma_extra_supported_mask);
	expect(api->vma_extra_supported_mask == want, buf);

	int s = udp_socket();
	expect(s >= 0, "socket(AF_INET, SOCK_DGRAM)");
	printf("udp fd %d\n", s);
	fflush(stdout);

	/* The receive entries on a socket not bound yet (vma_zcopy.sh has
	 * them on the rings): accepted, the kernel's answer, nothing held. */
	expect(api->register_recv_callback(s, NULL, NULL) == 0,
	       "register_recv_callback(unbound udp fd, NULL) returns 0");
	flags = MSG_DONTWAIT | MSG_VMA_ZCOPY;
	errno = 0;
	r = api->recvfrom_zcopy(s, buf, sizeof buf, &flags, NULL, NULL);
	err = errno;
	expect(r == -1 && err == EAGAIN && !(flags & MSG_VMA_ZCOPY),
	       "recvfrom_zcopy(unbound udp fd, MSG_DONTWAIT): -1/EAGAIN, MSG_VMA_ZCOPY clear");
	expect(api->free_packets(s, NULL, 0) == 0, "free_packets(udp fd, none) returns 0");
	CALL_UNSUPPORTED(socketxtreme_poll, s, NULL, 0, 0);
	expect(api->get_socket_rings_num(s) == 0, "get_socket_rings_num(unbound udp fd) returns 0");
	errno = 0;
	r = api->get_socket_rings_fds(s, NULL, 0);
	err = errno;
	expect(r == -1 && err == EINVAL, "get_socket_rings_fds(udp fd, NULL, 0): -1/EINVAL");
	CALL_UNSUPPORTED(get_socket_tx_ring_fd, s, NULL, 0);
	CALL_UNSUPPORTED(socketxtreme_free_vma_packets, NULL, 0);
	CALL_UNSUPPORTED(socketxtreme_ref_vma_buff, NULL);
	CALL_UNSUPPORTED(socketxtreme_free_vma_buff, NULL);
	CALL_UNSUPPORTED(vma_add_ring_profile, NULL, &key);
	CALL_UNSUPPORTED(get_socket_network_header, s, NULL, &hlen);
	CALL_UNSUPPORTED(get_ring_direct_descriptors, s, NULL);
	CALL_UNSUPPORTED(register_memory_on_ring, s, buf, sizeof buf, &lkey);
	CALL_UNSUPPORTED(deregister_memory_on_ring, s, buf, sizeof buf);
	CALL_UNSUPPORTED(vma_modify_ring, NULL);
	CALL_UNSUPPORTED(ioctl, NULL, 0);

	/* dump_fd_stats at info (libvma's internal 3), the default threshold. */
	expect(api->dump_fd_stats(s, 3) == 0, "dump_fd_stats(udp fd, info) returns 0");

	errno = 0;
	r = api->add_conf_rule("use os udp_receiver *:1234");
	err = errno;
	expect(r == 0, "add_conf_rule(\"use os udp_receiver *:1234\") returns 0");
	/* The rule decides at bind: a UDP socket bound to port 1234 goes to
	 * the OS by it (the script reads the debug line). */
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(1234);
	int by_port = udp_socket();
	errno = 0;
	r = bind(by_port, (struct sockaddr *)&a, sizeof a);
	snprintf(buf, sizeof buf, "bind(127.0.0.1:1234) (%s)", strerror(errno));
	expect(r == 0, buf);
	printf("port fd %d\n", by_port);
	errno = 0;
	r = api->add_conf_rule("use nothing at all");
	err = errno;
	expect(r == -1 && err == EINVAL, "add_conf_rule(bad rule) returns -1/EINVAL");
	errno = 0;
	r = api->add_conf_rule(NULL);
	err = errno;
	expect(r == -1 && err == EINVAL, "add_conf_rule(NULL) returns -1/EINVAL");

	/* Rules that send every UDP socket to the OS: the next socket's
	 * decision changes (the script reads the debug lines). */
	expect(api->add_conf_rule("use os udp_receiver *:*") == 0 &&
		       api->add_conf_rule("use os udp_sender *:*") == 0,
	       "add_conf_rule(use os udp_receiver/udp_sender *:*)");
	int by_rule = udp_socket();
	printf("rule fd %d\n", by_rule);

	/* This thread's later TCP sockets stay on the kernel. */
	expect(api->thread_offload(0, pthread_self()) == 0, "thread_offload(0, self) returns 0");
	int by_thread = socket(AF_INET, SOCK_STREAM, 0);
	printf("thread fd %d\n", by_thread);
	expect(api->thread_offload(1, pthread_self()) == 0, "thread_offload(1, self) returns 0");
	int back = socket(AF_INET, SOCK_STREAM, 0);
	printf("back fd %d\n", back);
	fflush(stdout);

	/* SO_VMA_USER_DATA on a UDP socket the library may offload: the fd
	 * until set, then the value; optlen exactly sizeof(void *). */
	void *ud = NULL, *got_ud = NULL;
	socklen_t udlen = sizeof got_ud;
	r = getsockopt(s, SOL_SOCKET, SO_VMA_USER_DATA, &got_ud, &udlen);
	expect(r == 0 && udlen == sizeof got_ud && got_ud == (void *)(intptr_t)s,
	       "SO_VMA_USER_DATA of a UDP socket is its fd until set");
	ud = &s;
	r = setsockopt(s, SOL_SOCKET, SO_VMA_USER_DATA, &ud, sizeof ud);
	expect(r == 0, "setsockopt(SO_VMA_USER_DATA) on a UDP socket returns 0");
	r = getsockopt(s, SOL_SOCKET, SO_VMA_USER_DATA, &got_ud, &udlen);
	expect(r == 0 && got_ud == ud, "getsockopt(SO_VMA_USER_DATA) gives the value set");
	errno = 0;
	r = setsockopt(s, SOL_SOCKET, SO_VMA_USER_DATA, &ud, 4);
	err = errno;
	expect(r == -1 && err == EINVAL, "SO_VMA_USER_DATA with a 4-byte optlen: EINVAL");
	/* SO_VMA_* on a socket the kernel serves: what libvma does for a socket
	 * it does not offload, the kernel's ENOPROTOOPT. */
	errno = 0;
	r = setsockopt(by_thread, SOL_SOCKET, SO_VMA_USER_DATA, &ud, sizeof ud);
	err = errno;
	expect(r == -1 && err == ENOPROTOOPT,
	       "SO_VMA_USER_DATA on a kernel socket (TCP, thread_offload(0)): ENOPROTOOPT");
	/* SO_VMA_RING_ALLOC_LOGIC: kept on a UDP socket the library may
	 * offload (vma_extras.sh has its errnos and the rings), the kernel's
	 * ENOPROTOOPT on a socket it serves. */
	struct vma_ring_alloc_logic_attr ra;
	memset(&ra, 0, sizeof ra);
	ra.comp_mask = VMA_RING_ALLOC_MASK_RING_INGRESS;
	ra.ring_alloc_logic = RING_LOGIC_PER_SOCKET;
	ra.ingress = 1;
	r = setsockopt(s, SOL_SOCKET, SO_VMA_RING_ALLOC_LOGIC, &ra, sizeof ra);
	expect(r == 0, "SO_VMA_RING_ALLOC_LOGIC on a UDP socket returns 0");
	errno = 0;
	r = setsockopt(by_thread, SOL_SOCKET, SO_VMA_RING_ALLOC_LOGIC, &ra, sizeof ra);
	err = errno;
	expect(r == -1 && err == ENOPROTOOPT,
	       "SO_VMA_RING_ALLOC_LOGIC on a kernel socket (TCP): ENOPROTOOPT");
	errno = 0;
	r = setsockopt(by_rule, SOL_SOCKET, SO_VMA_RING_ALLOC_LOGIC, &ra, sizeof ra);
	err = errno;
	expect(r == -1 && err == ENOPROTOOPT,
	       "SO_VMA_RING_ALLOC_LOGIC on a UDP socket a rule gave the OS: ENOPROTOOPT");
	/* libvma answers SO_VMA_GET_API on fd -1 only. */
	void *p = NULL;
	socklen_t plen = sizeof p;
	errno = 0;
	r = getsockopt(s, SOL_SOCKET, SO_VMA_GET_API, &p, &plen);
	err = errno;
	expect(r == -1 && err == ENOPROTOOPT && p == NULL,
	       "SO_VMA_GET_API on a real fd: the kernel's ENOPROTOOPT");

	close(back);
	close(by_port);
	close(by_thread);
	close(by_rule);
	close(s);
	printf("%s: %d failure(s)\n", fails ? "FAIL" : "PASS", fails);
	return fails ? 1 : 0;
}

static int mode_noapi(void)
{
	errno = 0;
	struct vma_api_t *api = vma_get_api();
	int err = errno;

	if (api) {
		printf("FAIL: vma_get_api() answered without the preload\n");
		return 1;
	}
	printf("no api: errno %s\n", strerror(err));
	return err == EBADF ? 0 : 1;
}

static int mode_hold(void)
{
	struct sockaddr_in a;
	char c;
	int s = udp_socket();

	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) < 0) {
		perror("hold: socket/bind");
		return 1;
	}
	printf("ready %d %d\n", (int)getpid(), s);
	fflush(stdout);
	while (read(0, &c, 1) > 0) {
	}
	close(s);
	return 0;
}

static void *churn(void *arg)
{
	(void)arg;
	for (int i = 0; i < 200; i++) {
		int s = socket(i % 2 ? AF_INET6 : AF_INET, i % 3 ? SOCK_DGRAM : SOCK_STREAM, 0);
		if (s >= 0)
			close(s);
	}
	return NULL;
}

static int mode_smoke(const char *self)
{
	pthread_t t[4];
	int bad = 0;

	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, churn, NULL);
	for (int i = 0; i < 3; i++) {
		int keep = udp_socket();
		pid_t pid = fork();
		if (pid == 0) {
			close(keep);
			execl(self, self, "child", (char *)NULL);
			_exit(127);
		}
		int st = 0;
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0) {
			printf("FAIL: child %d ended with status 0x%x\n", i, st);
			bad++;
		}
		close(keep);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("%s: smoke\n", bad ? "FAIL" : "PASS");
	return bad ? 1 : 0;
}

static int mode_child(void)
{
	int s = udp_socket();

	if (s < 0)
		return 1;
	return close(s) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	if (!strcmp(mode, "api"))
		return mode_api();
	if (!strcmp(mode, "noapi"))
		return mode_noapi();
	if (!strcmp(mode, "hold"))
		return mode_hold();
	if (!strcmp(mode, "smoke"))
		return mode_smoke(argv[0]);
	if (!strcmp(mode, "child"))
		return mode_child();
	fprintf(stderr, "usage: %s api|noapi|hold|smoke|child\n", argv[0]);
	return 2;
}
