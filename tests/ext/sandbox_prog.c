// A connection used by a process that sandboxes itself, as OpenSSH's
// privilege-separated sshd does (issue 33), run plain and under
// librspreload by preload_sandbox.sh.
//
//   sandbox_prog serve PORT BYTES CHILDREN   accept one connection on
//       127.0.0.1:PORT; a child locks itself in (RLIMIT_NOFILE 0, no new
//       privileges, a seccomp filter allowing only OpenSSH's
//       pre-authentication list, every other call killing the process),
//       echoes BYTES and exits; with CHILDREN 2 the parent then forks a
//       second child (unsandboxed, as sshd's session process after the
//       monitor's) that echoes BYTES more. The parent closes its copy
//       last and prints "served" when every child exited 0.
//   sandbox_prog send PORT BYTES ROUNDS   connect, send BYTES and read
//       them back, ROUNDS times, then read the end of stream; prints
//       "echoed N, then the end" when every byte came back as sent.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "sandbox_prog: %s: %s\n", what, strerror(errno));
	exit(2);
}

// The calls OpenSSH's pre-authentication sandbox allows on x86_64
// (sandbox-seccomp-filter.c): everything else kills the process, the
// file calls it denies fail with EACCES.
static const int allowed[] = {
    SYS_brk,	    SYS_clock_gettime, SYS_close,	    SYS_exit,
    SYS_exit_group, SYS_futex,	       SYS_geteuid,	    SYS_getpgid,
    SYS_getpid,	    SYS_getrandom,     SYS_gettimeofday,    SYS_getuid,
    SYS_madvise,    SYS_mmap,	       SYS_mprotect,	    SYS_mremap,
    SYS_munmap,	    SYS_nanosleep,     SYS_clock_nanosleep, SYS_poll,
    SYS_pselect6,   SYS_read,	       SYS_rt_sigprocmask,  SYS_select,
    SYS_shutdown,   SYS_time,	       SYS_write,
};
static const int denied[] = {SYS_lstat, SYS_fstat,  SYS_open,  SYS_openat, SYS_newfstatat,
			     SYS_stat,	SYS_shmget, SYS_shmat, SYS_shmdt};

static void lock_in(void)
{
	enum { N = sizeof(allowed) / sizeof(allowed[0]), D = sizeof(denied) / sizeof(denied[0]) };
	struct sock_filter f[4 + 2 * (N + D) + 1];
	int n = 0;
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, arch));
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, nr));
	for (int i = 0; i < D; i++) {
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, denied[i], 0, 1);
		f[n++] = (struct sock_filter)BPF_STMT(
		    BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA));
	}
	for (int i = 0; i < N; i++) {
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, allowed[i], 0, 1);
		f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	}
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	struct sock_fprog prog = {.len = (unsigned short)n, .filter = f};
	struct rlimit zero = {0, 0};
	if (setrlimit(RLIMIT_NOFILE, &zero))
		die("setrlimit");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		die("PR_SET_NO_NEW_PRIVS");
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		die("PR_SET_SECCOMP");
}

// Echoes `bytes` with read and write only (what the sandbox allows);
// exits as sshd's children do (exit, not _exit).
static void echo(int fd, long bytes)
{
	static char buf[65536];
	while (bytes > 0) {
		ssize_t n = read(fd, buf, bytes < (long)sizeof(buf) ? (size_t)bytes : sizeof(buf));
		if (n <= 0) {
			fprintf(stderr, "sandbox_prog: echo read: %s\n",
				n ? strerror(errno) : "end of stream");
			_exit(3);
		}
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(fd, buf + off, (size_t)(n - off));
			if (w <= 0) {
				fprintf(stderr, "sandbox_prog: echo write: %s\n", strerror(errno));
				_exit(4);
			}
			off += w;
		}
		bytes -= n;
	}
	exit(0);
}

static int child_echo(int fd, long bytes, int sandboxed)
{
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		if (sandboxed)
			lock_in();
		echo(fd, bytes);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid)
		die("waitpid");
	if (WIFSIGNALED(st))
		fprintf(stderr, "sandbox_prog: %s child killed by signal %d\n",
			sandboxed ? "sandboxed" : "second", WTERMSIG(st));
	else if (WEXITSTATUS(st))
		fprintf(stderr, "sandbox_prog: %s child exit %d\n",
			sandboxed ? "sandboxed" : "second", WEXITSTATUS(st));
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static struct sockaddr_in addr_of(const char *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port))};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

static int serve(const char *port, long bytes, int children)
{
	struct sockaddr_in a = addr_of(port);
	int one = 1, l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 4))
		die("listen");
	printf("ready\n");
	fflush(stdout);
	int c = accept(l, NULL, NULL);
	if (c < 0)
		die("accept");
	int ok = child_echo(c, bytes, 1);
	if (children > 1)
		ok = ok && child_echo(c, bytes, 0);
	close(c);
	close(l);
	if (ok)
		printf("served\n");
	return ok ? 0 : 1;
}

static int send_all(int fd, const char *p, long n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, (size_t)n);
		if (w <= 0)
			return -1;
		p += w;
		n -= w;
	}
	return 0;
}

static int send_back(const char *port, long bytes, int rounds)
{
	struct sockaddr_in a = addr_of(port);
	int s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)))
		die("connect");
	char *out = malloc((size_t)bytes), *in = malloc((size_t)bytes);
	if (!out || !in)
		die("malloc");
	long echoed = 0;
	for (int round = 0; round < rounds; round++) {
		for (long i = 0; i < bytes; i++)
			out[i] = (char)((i * 7 + round * 13 + i / 251) & 0xff);
		// Sent in 64 KiB steps, each read back before the next: the
		// echo never waits on a full window both ways.
		for (long off = 0; off < bytes;) {
			long step = bytes - off < 65536 ? bytes - off : 65536;
			if (send_all(s, out + off, step))
				die("write");
			for (long got = 0; got < step;) {
				ssize_t r = read(s, in + off + got, (size_t)(step - got));
				if (r <= 0) {
					fprintf(stderr, "sandbox_prog: read after %ld: %s\n",
						echoed + off + got,
						r ? strerror(errno) : "end of stream");
					return 1;
				}
				got += r;
			}
			off += step;
		}
		if (memcmp(in, out, (size_t)bytes)) {
			fprintf(stderr, "sandbox_prog: round %d came back changed\n", round);
			return 1;
		}
		echoed += bytes;
	}
	ssize_t end = read(s, in, 1);
	if (end != 0) {
		fprintf(stderr, "sandbox_prog: after %ld echoed: %s\n", echoed,
			end < 0 ? strerror(errno) : "more bytes, not the end");
		return 1;
	}
	printf("echoed %ld, then the end\n", echoed);
	close(s);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: sandbox_prog serve|send PORT BYTES CHILDREN|ROUNDS\n");
		return 2;
	}
	long bytes = atol(argv[3]);
	if (!strcmp(argv[1], "serve"))
		return serve(argv[2], bytes, atoi(argv[4]));
	if (!strcmp(argv[1], "send"))
		return send_back(argv[2], bytes, atoi(argv[4]));
	return 2;
}
