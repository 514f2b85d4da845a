/* One fault of the fault matrix (tests/ext/fault_matrix.py), one side:
 *   fault_prog victim|peer FAULT ADDR PORT
 * The same source builds twice: with the socket calls (the kernel's, or
 * librspreload.so's or libvma.so's when preloaded) and, with
 * -DFAULT_RSOCKET, with upstream's <rdma/rsocket.h> calls (librsocket.so
 * preloaded). The driver starts the listening side first (it prints
 * "ready"), acts on the markers the sides print ("blocking": the victim is
 * about to make the blocking call under test; "connected", "stalled",
 * ...), and compares the victim's last line, "answer ...", with the
 * kernel's: each call's result as "=N" or "=-1 ENAME", poll's revents as
 * names. Byte i of every stream is i % 251. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef FAULT_RSOCKET
#include <rdma/rsocket.h>
#define S(f) r##f
#else
#include <sys/epoll.h>
#define S(f) f
#endif

#include "test_addr.h"

enum { kChunk = 65536 };
static char answer[1024];
static unsigned char chunk[kChunk];

static void say(const char *what)
{
	printf("%s\n", what);
	fflush(stdout);
}

/* Appends "NAME=RESULT" to the answer: N, or -1 and the errno's name. */
static void note(const char *name, long r)
{
	size_t at = strlen(answer);
	int e = errno;

	if (r < 0)
		snprintf(answer + at, sizeof answer - at, "%s%s=-1 %s", at ? " " : "", name,
			 strerrorname_np(e) ? strerrorname_np(e) : "?");
	else
		snprintf(answer + at, sizeof answer - at, "%s%s=%ld", at ? " " : "", name, r);
}

static void note_text(const char *fmt, ...)
{
	size_t at = strlen(answer);
	va_list ap;

	if (at && at + 1 < sizeof answer) {
		answer[at++] = ' ';
		answer[at] = 0;
	}
	va_start(ap, fmt);
	vsnprintf(answer + at, sizeof answer - at, fmt, ap);
	va_end(ap);
}

/* poll's answer: -1 and its errno, 0, or the revents' names. */
static void note_poll(const char *name, int r, short rev)
{
	char names[64] = "";

	if (r <= 0) {
		note(name, r);
		return;
	}
	if (rev & POLLIN)
		strcat(names, "|IN");
	if (rev & POLLOUT)
		strcat(names, "|OUT");
	if (rev & POLLERR)
		strcat(names, "|ERR");
	if (rev & POLLHUP)
		strcat(names, "|HUP");
	if (rev & POLLNVAL)
		strcat(names, "|NVAL");
	note_text("%s=%s", name, names[0] ? names + 1 : "none");
}

static void on_signal(int sig)
{
	(void)sig;
}

/* sig-io's handler (SA_RESTART), over this thread's blocked recv on
 * io_fd: a receive that would block, then a send the peer echoes. */
static int io_fd = -1;
static volatile long io_recv, io_send;
static volatile int io_recv_errno, io_send_errno;

static void on_io_signal(int sig)
{
	int saved = errno;
	char b = 'h';

	(void)sig;
	io_recv = S(recv)(io_fd, &b, 1, MSG_DONTWAIT);
	io_recv_errno = errno;
	io_send = S(send)(io_fd, &b, 1, 0);
	io_send_errno = errno;
	errno = saved;
}

static struct sockaddr_storage at;
static socklen_t at_len;
static int at_type = SOCK_STREAM; /* SOCK_DGRAM for the u- faults */

static int listener(int type, int backlog)
{
	int one = 1, l = S(socket)(at.ss_family, type, 0);

	S(setsockopt)(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (l < 0 || S(bind)(l, (struct sockaddr *)&at, at_len) != 0 ||
	    (type == SOCK_STREAM && S(listen)(l, backlog) != 0)) {
		perror("listen");
		exit(3);
	}
	say("ready");
	return l;
}

static int connected(int type)
{
	int c = S(socket)(at.ss_family, type, 0);

	if (c < 0 || S(connect)(c, (struct sockaddr *)&at, at_len) != 0) {
		perror("connect");
		exit(3);
	}
	return c;
}

static int accepted(int l)
{
	int c = S(accept)(l, NULL, NULL);

	if (c < 0) {
		perror("accept");
		exit(3);
	}
	return c;
}

/* Exactly n bytes received or sent: n, or the failing call's result (0:
 * the end of the stream, for a receive). */
static long move_all(int fd, long n, int sending)
{
	long done = 0;

	while (done < n) {
		size_t want = (size_t)(n - done) < sizeof chunk ? (size_t)(n - done) : sizeof chunk;
		ssize_t k = sending ? S(send)(fd, chunk, want, 0) : S(recv)(fd, chunk, want, 0);

		if (k < 0 || (k == 0 && !sending))
			return k;
		done += k;
	}
	return done;
}

static long recv_all(int fd, long n)
{
	return move_all(fd, n, 0);
}

static long send_all(int fd, long n)
{
	return move_all(fd, n, 1);
}

/* Sends without waiting until the window and buffers are full. */
static void fill_window(int fd)
{
	for (long total = 0; total < 256L << 20;) {
		ssize_t k = S(send)(fd, chunk, sizeof chunk, MSG_DONTWAIT);

		if (k < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				struct timespec ms = {0, 20 * 1000 * 1000};

				nanosleep(&ms, NULL);
				/* Full if it still is after a pause (a window update may come). */
				if (S(send)(fd, chunk, sizeof chunk, MSG_DONTWAIT) < 0)
					return;
				continue;
			}
			return;
		}
		total += k;
	}
}

static void forever(void)
{
	for (;;)
		pause();
}

/* No descriptor left to create: the limit at the highest open one + 1,
 * the holes below it filled. */
static void out_of_descriptors(void)
{
	struct rlimit r;
	int high = 0;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	while (d && (e = readdir(d)))
		if (atoi(e->d_name) > high)
			high = atoi(e->d_name);
	if (d)
		closedir(d);
	getrlimit(RLIMIT_NOFILE, &r);
	r.rlim_cur = (rlim_t)high + 1;
	setrlimit(RLIMIT_NOFILE, &r);
	while (open("/dev/null", O_RDONLY) >= 0)
		;
}

/* Address space for 32 MB more than now. */
static void little_memory(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = 0;

	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "VmSize:", 7))
			kb = atol(line + 7);
	if (f)
		fclose(f);
	struct rlimit r = {(rlim_t)(kb + 32 * 1024) * 1024, (rlim_t)(kb + 32 * 1024) * 1024};
	setrlimit(RLIMIT_AS, &r);
}

/* cancel-*: a thread of this program blocks in CALL on fd and is
 * cancelled (pthread_cancel; the calls are cancellation points): it ends
 * (join: "canceled"), and the process, the descriptor and its connection
 * go on. */
struct blocked {
	const char *call;
	int fd;
};

static void *block_in(void *arg)
{
	const struct blocked *b = arg;
	struct pollfd p = {b->fd, POLLIN, 0};

	if (!strcmp(b->call, "recv"))
		S(recv)(b->fd, chunk, sizeof chunk, 0);
	else if (!strcmp(b->call, "connect"))
		S(connect)(b->fd, (struct sockaddr *)&at, at_len);
	else if (!strcmp(b->call, "accept"))
		S(accept)(b->fd, NULL, NULL);
	else if (!strcmp(b->call, "poll"))
		S(poll)(&p, 1, -1);
#ifndef FAULT_RSOCKET
	else if (!strcmp(b->call, "epoll")) {
		int ep = epoll_create1(0);
		struct epoll_event ev = {.events = EPOLLIN, .data.fd = b->fd}, got;

		epoll_ctl(ep, EPOLL_CTL_ADD, b->fd, &ev);
		epoll_wait(ep, &got, 1, -1);
	}
#endif
	return NULL;
}

static void cancel_blocked(const char *call, int fd)
{
	struct blocked b = {call, fd};
	struct timespec t = {0, 300 * 1000 * 1000};
	pthread_t th;
	void *res = NULL;

	if (pthread_create(&th, NULL, block_in, &b)) {
		perror("pthread_create");
		exit(3);
	}
	say("blocking");
	nanosleep(&t, NULL); /* in the call by now */
	pthread_cancel(th);
	pthread_join(th, &res);
	note_text("join=%s", res == PTHREAD_CANCELED ? "canceled" : "returned");
	struct pollfd p = {fd, POLLIN | POLLOUT, 0};
	int r = S(poll)(&p, 1, 0);
	note_poll("poll", r, p.revents);
	if (!strcmp(call, "accept")) { /* the next accept waits for the peer */
		say("cancelled");
		int c = S(accept)(fd, NULL, NULL);
		note("accept", c < 0 ? -1 : 0);
	} else if (!strcmp(call, "connect")) { /* still connecting */
	} else if (at_type == SOCK_STREAM) { /* the peer echoes: a wait again */
		note("send_all", send_all(fd, 100));
		note("recv_all", recv_all(fd, 100));
	} else {
		note("send", S(send)(fd, chunk, 100, 0));
	}
	note("close", S(close)(fd));
}

static void victim(const char *fault)
{
	if (!strcmp(fault, "kill-recv") || !strcmp(fault, "sig-recv") ||
	    !strcmp(fault, "exit-unclosed") || !strcmp(fault, "kill-recv-c")) {
		int c = fault[strlen(fault) - 1] == 'c' ? connected(SOCK_STREAM)
							 : accepted(listener(SOCK_STREAM, 4));

		if (fault[0] != 's')
			note("recv_all", recv_all(c, 1000));
		say("blocking");
		note("recv", S(recv)(c, chunk, sizeof chunk, 0));
	} else if (!strcmp(fault, "sig-io")) {
		struct sigaction sa = {0};
		long r;

		io_fd = accepted(listener(SOCK_STREAM, 4));
		sa.sa_handler = on_io_signal;
		sa.sa_flags = SA_RESTART;
		sigaction(SIGUSR1, &sa, NULL);
		say("blocking");
		r = S(recv)(io_fd, chunk, sizeof chunk, 0);
		int e = errno;

		errno = io_recv_errno;
		note("handler_recv", io_recv);
		errno = io_send_errno;
		note("handler_send", io_send);
		errno = e;
		note("recv", r);
	} else if (!strcmp(fault, "kill-send")) {
		/* Blocking sends until one fails: the first may return what it
		 * copied before the reset came. */
		int c = accepted(listener(SOCK_STREAM, 4));
		long r = 0;

		fill_window(c);
		say("blocking");
		for (int i = 0; i < 1000 && r >= 0; i++)
			r = S(send)(c, chunk, sizeof chunk, 0);
		note("send", r);
	} else if (!strcmp(fault, "sig-send")) {
		/* A signal ends a blocked send: with what it copied, or EINTR if
		 * nothing (either is Linux's answer, by the buffer's state). */
		int c = accepted(listener(SOCK_STREAM, 4));

		fill_window(c);
		say("blocking");
		long r = S(send)(c, chunk, sizeof chunk, 0);
		if (r > 0 || (r < 0 && errno == EINTR))
			note_text("send=interrupted");
		else
			note("send", r);
	} else if (!strcmp(fault, "kill-connect")) {
		int c = S(socket)(at.ss_family, SOCK_STREAM, 0);

		say("blocking");
		long r = S(connect)(c, (struct sockaddr *)&at, at_len);
		note("connect", r);
		if (r == 0)
			note("recv", S(recv)(c, chunk, sizeof chunk, 0));
	} else if (!strcmp(fault, "kill-accept")) {
		int l = listener(SOCK_STREAM, 4);

		say("blocking");
		int c = S(accept)(l, NULL, NULL);
		note("accept", c < 0 ? -1 : 0);
		if (c >= 0)
			note("recv", S(recv)(c, chunk, sizeof chunk, 0));
	} else if (!strcmp(fault, "kill-poll") || !strcmp(fault, "sig-poll")) {
		struct pollfd p = {accepted(listener(SOCK_STREAM, 4)), POLLIN, 0};

		say("blocking");
		int r = S(poll)(&p, 1, -1);
		note_poll("poll", r, p.revents);
		if (fault[0] == 'k')
			note("recv", S(recv)(p.fd, chunk, sizeof chunk, 0));
	} else if (!strcmp(fault, "kill-epoll")) {
#ifdef FAULT_RSOCKET
		fprintf(stderr, "no epoll in the rsocket API\n");
		exit(2);
#else
		int c = accepted(listener(SOCK_STREAM, 4)), ep = epoll_create1(0);
		struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.fd = c}, got = {0};

		epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
		say("blocking");
		int r = epoll_wait(ep, &got, 1, -1);
		if (r <= 0)
			note("epoll", r);
		else
			note_text("epoll=%s%s%s%s", got.events & EPOLLIN ? "IN" : "",
				  got.events & EPOLLRDHUP ? "|RDHUP" : "",
				  got.events & EPOLLHUP ? "|HUP" : "", got.events & EPOLLERR ? "|ERR" : "");
		note("recv", S(recv)(c, chunk, sizeof chunk, 0));
#endif
	} else if (!strcmp(fault, "rst-unread")) {
		int c = accepted(listener(SOCK_STREAM, 4));

		note("send", S(send)(c, chunk, 100, 0));
		say("blocking");
		note("recv", S(recv)(c, chunk, sizeof chunk, 0));
		struct pollfd p = {c, POLLIN | POLLOUT, 0};
		int r = S(poll)(&p, 1, 0);
		note_poll("poll", r, p.revents);
	} else if (!strcmp(fault, "shut-wr") || !strcmp(fault, "peer-close")) {
		int c = accepted(listener(SOCK_STREAM, 4));

		note("recv_all", recv_all(c, 100));
		note("recv", S(recv)(c, chunk, sizeof chunk, 0));
		struct pollfd p = {c, POLLIN | POLLOUT, 0};
		int r = S(poll)(&p, 1, 0);
		note_poll("poll", r, p.revents);
		if (fault[0] == 's')
			note("send", S(send)(c, chunk, 100, 0));
	} else if (!strcmp(fault, "fork-exit")) {
		/* A child exits (exit(3): the libraries' destructors run) holding
		 * the connection: the parent's goes on. */
		int c = accepted(listener(SOCK_STREAM, 4)), st = -1;
		pid_t child = fork();

		if (child == 0)
			exit(0);
		waitpid(child, &st, 0);
		note_text("child=%d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		note("send_all", send_all(c, 100));
		note("recv_all", recv_all(c, 100));
	} else if (!strcmp(fault, "stop-cont")) {
		int c = accepted(listener(SOCK_STREAM, 4));

		say("blocking");
		note("recv_all", recv_all(c, 100));
		note("recv", S(recv)(c, chunk, sizeof chunk, 0));
	} else if (!strcmp(fault, "sig-accept")) {
		int l = listener(SOCK_STREAM, 4);

		say("blocking");
		note("accept", S(accept)(l, NULL, NULL));
	} else if (!strcmp(fault, "sig-connect")) {
		/* The peer's listener takes one connection and never accepts:
		 * the second connect waits (the kernel drops its SYNs). */
		int first = S(socket)(at.ss_family, SOCK_STREAM, 0), c;

		S(fcntl)(first, F_SETFL, O_NONBLOCK);
		S(connect)(first, (struct sockaddr *)&at, at_len);
		struct pollfd p = {first, POLLOUT, 0};
		S(poll)(&p, 1, 500);
		c = S(socket)(at.ss_family, SOCK_STREAM, 0);
		say("blocking");
		note("connect", S(connect)(c, (struct sockaddr *)&at, at_len));
	} else if (!strcmp(fault, "emfile")) {
		int l = listener(SOCK_STREAM, 4), c = accepted(l);

		out_of_descriptors();
		say("full");
		note("recv_all", recv_all(c, 1000));
		note("send_all", send_all(c, 1000));
		note("socket", S(socket)(at.ss_family, SOCK_STREAM, 0));
		struct pollfd p = {l, POLLIN, 0};
		if (S(poll)(&p, 1, 5000) == 1)
			note("accept", S(accept)(l, NULL, NULL));
		else
			note_text("accept=not-ready");
	} else if (!strcmp(fault, "rlimit-as")) {
		int c = accepted(listener(SOCK_STREAM, 4));
		long total = 0;
		ssize_t k;

		little_memory();
		say("limited");
		while ((k = S(recv)(c, chunk, sizeof chunk, 0)) > 0) {
			if (send_all(c, k) != k)
				break;
			total += k;
		}
		note_text("echoed=%ld", total);
		note("end", k);
	} else if (!strcmp(fault, "netns-gone")) {
		int c = accepted(listener(SOCK_STREAM, 4));

		note("recv_all", recv_all(c, 100));
		say("blocking");
		struct pollfd p = {c, POLLIN, 0};
		int r = S(poll)(&p, 1, 2000);
		note_poll("poll", r, p.revents);
		note("send", S(send)(c, chunk, 100, 0));
	} else if (!strcmp(fault, "unreachable")) {
		/* 1 MB through, the route to the peer removed (the sends stall),
		 * then back (they finish): "stalled" tells the driver. */
		int c = accepted(listener(SOCK_STREAM, 4)), stalled = 0;
		long sent = send_all(c, 1L << 20);
		char go[16];

		say("blocking");
		if (!fgets(go, sizeof go, stdin)) /* the route is gone */
			sent = -1;
		while (sent >= 0 && sent < 5L << 20) {
			struct pollfd p = {c, POLLOUT, 0};
			int r = S(poll)(&p, 1, stalled ? 30000 : 1500);

			if (r == 0 && !stalled) {
				stalled = 1;
				say("stalled");
				continue;
			}
			if (r <= 0)
				break;
			ssize_t k = S(send)(c, chunk, sizeof chunk, MSG_DONTWAIT);
			if (k < 0 && errno != EAGAIN)
				break;
			if (k > 0)
				sent += k;
		}
		note_text("stalled=%d", stalled);
		note("sent", sent >= (5L << 20) ? 5L << 20 : -1);
		S(shutdown)(c, SHUT_WR);
		note("end", S(recv)(c, chunk, sizeof chunk, 0));
	} else if (!strcmp(fault, "u-kill-recv") || !strcmp(fault, "u-sig-recv")) {
		int u = listener(SOCK_DGRAM, 0);

		if (fault[2] == 'k') {
			int n = 0;
			while (n < 10 && S(recv)(u, chunk, sizeof chunk, 0) > 0)
				n++;
			note_text("datagrams=%d", n);
			say("blocking");
			struct pollfd p = {u, POLLIN, 0};
			int r = S(poll)(&p, 1, 1000);
			note_poll("poll", r, p.revents);
		} else {
			say("blocking");
			note("recv", S(recv)(u, chunk, sizeof chunk, 0));
		}
	} else if (!strcmp(fault, "cancel-connect")) {
		/* As sig-connect: the peer's full backlog holds the connect. */
		int first = S(socket)(at.ss_family, SOCK_STREAM, 0);

		S(fcntl)(first, F_SETFL, O_NONBLOCK);
		S(connect)(first, (struct sockaddr *)&at, at_len);
		struct pollfd p = {first, POLLOUT, 0};
		S(poll)(&p, 1, 500);
		cancel_blocked("connect", S(socket)(at.ss_family, SOCK_STREAM, 0));
	} else if (!strncmp(fault, "cancel-", 7)) {
#ifdef FAULT_RSOCKET
		if (!strcmp(fault, "cancel-epoll")) {
			fprintf(stderr, "no epoll in the rsocket API\n");
			exit(2);
		}
#endif
		int l = listener(SOCK_STREAM, 4);

		cancel_blocked(fault + 7, strcmp(fault, "cancel-accept") ? accepted(l) : l);
	} else if (!strcmp(fault, "u-cancel-recv")) {
		cancel_blocked("recv", listener(SOCK_DGRAM, 0));
	} else if (!strcmp(fault, "u-refused")) {
		int u = connected(SOCK_DGRAM);

		note("send", S(send)(u, chunk, 100, 0));
		struct pollfd p = {u, POLLIN, 0};
		int r = S(poll)(&p, 1, 1000);
		note_poll("poll", r, p.revents);
		note("recv", S(recv)(u, chunk, sizeof chunk, MSG_DONTWAIT));
	} else if (!strcmp(fault, "u-emfile") || !strcmp(fault, "u-rlimit-as")) {
		int u = listener(SOCK_DGRAM, 0), n = 0;
		struct sockaddr_storage from;

		if (fault[2] == 'e')
			out_of_descriptors();
		else
			little_memory();
		say("full");
		for (; n < 200; n++) {
			socklen_t len = sizeof from;
			ssize_t k = S(recvfrom)(u, chunk, sizeof chunk, 0, (struct sockaddr *)&from, &len);

			if (k <= 0 || S(sendto)(u, chunk, (size_t)k, 0, (struct sockaddr *)&from, len) != k)
				break;
		}
		note_text("echoed=%d", n);
		if (fault[2] == 'e')
			note("socket", S(socket)(at.ss_family, SOCK_DGRAM, 0));
	} else {
		fprintf(stderr, "unknown fault %s\n", fault);
		exit(2);
	}
	printf("answer %s\n", answer);
}

static void peer(const char *fault)
{
	if (!strcmp(fault, "kill-recv") || !strcmp(fault, "exit-unclosed")) {
		int c = connected(SOCK_STREAM);

		send_all(c, 1000);
		say("sent");
		if (fault[0] == 'e')
			exit(0); /* its connection still open: exit closes it */
	} else if (!strcmp(fault, "kill-recv-c")) {
		int c = accepted(listener(SOCK_STREAM, 4));

		send_all(c, 1000);
		say("sent");
	} else if (!strcmp(fault, "kill-connect") || !strcmp(fault, "sig-connect") ||
		   !strcmp(fault, "cancel-connect")) {
		listener(SOCK_STREAM, fault[0] == 'k' ? 1 : 0);
	} else if (!strcmp(fault, "rst-unread")) {
		int c = connected(SOCK_STREAM);
		struct pollfd p = {c, POLLIN, 0};
		struct timespec ms = {0, 100 * 1000 * 1000};

		S(poll)(&p, 1, 5000);
		nanosleep(&ms, NULL);
		S(close)(c); /* unread data: a reset */
		say("closed");
	} else if (!strcmp(fault, "fork-exit") || !strcmp(fault, "cancel-recv") ||
		   !strcmp(fault, "cancel-poll") || !strcmp(fault, "cancel-epoll")) {
		int c = connected(SOCK_STREAM);
		ssize_t k;

		while ((k = S(recv)(c, chunk, sizeof chunk, 0)) > 0)
			if (send_all(c, k) != k)
				break;
	} else if (!strcmp(fault, "sig-io")) {
		/* The victim's handler's byte, echoed. */
		int c = connected(SOCK_STREAM);
		char b;

		if (S(recv)(c, &b, 1, 0) == 1)
			S(send)(c, &b, 1, 0);
	} else if (!strcmp(fault, "peer-close")) {
		int c = connected(SOCK_STREAM);

		send_all(c, 100);
		S(close)(c); /* its process lives on */
		say("closed");
	} else if (!strcmp(fault, "shut-wr")) {
		int c = connected(SOCK_STREAM);

		send_all(c, 100);
		S(shutdown)(c, SHUT_WR);
		printf("got %ld\n", recv_all(c, 100));
		fflush(stdout);
	} else if (!strcmp(fault, "stop-cont")) {
		int c = connected(SOCK_STREAM);
		struct timespec s = {1, 0};

		say("connected");
		nanosleep(&s, NULL);
		send_all(c, 100);
		S(close)(c);
		exit(0);
	} else if (!strcmp(fault, "emfile")) {
		int c = connected(SOCK_STREAM), second = S(socket)(at.ss_family, SOCK_STREAM, 0);

		S(fcntl)(second, F_SETFL, O_NONBLOCK);
		S(connect)(second, (struct sockaddr *)&at, at_len);
		send_all(c, 1000);
		printf("got %ld\n", recv_all(c, 1000));
		fflush(stdout);
	} else if (!strcmp(fault, "rlimit-as")) {
		int c = connected(SOCK_STREAM);
		long got = 0;

		for (int i = 0; i < 64; i++) {
			if (send_all(c, kChunk) != kChunk || recv_all(c, kChunk) != kChunk)
				break;
			got += kChunk;
		}
		S(shutdown)(c, SHUT_WR);
		printf("got %ld end %zd\n", got, S(recv)(c, chunk, sizeof chunk, 0));
		fflush(stdout);
	} else if (!strcmp(fault, "netns-gone")) {
		int c = connected(SOCK_STREAM);

		send_all(c, 100);
		say("sent");
	} else if (!strcmp(fault, "unreachable")) {
		int c = connected(SOCK_STREAM);
		long got = 0;
		ssize_t k;

		while ((k = S(recv)(c, chunk, sizeof chunk, 0)) > 0)
			got += k;
		printf("got %ld\n", got);
		fflush(stdout);
		S(close)(c);
		exit(0);
	} else if (!strcmp(fault, "u-kill-recv")) {
		int u = connected(SOCK_DGRAM);

		for (int i = 0; i < 10; i++)
			S(send)(u, chunk, 100, 0);
		say("sent");
	} else if (!strcmp(fault, "u-emfile") || !strcmp(fault, "u-rlimit-as")) {
		int u = connected(SOCK_DGRAM), n = 0;

		for (; n < 200; n++) {
			struct pollfd p = {u, POLLIN, 0};

			if (S(send)(u, chunk, 100, 0) != 100 || S(poll)(&p, 1, 2000) != 1 ||
			    S(recv)(u, chunk, sizeof chunk, 0) != 100)
				break;
		}
		printf("got %d\n", n);
		fflush(stdout);
	} else {
		/* kill-send, kill-accept, kill-poll, kill-epoll, sig-*: connect
		 * and wait (to be killed, or for the driver's end). */
		connected(SOCK_STREAM);
		say("connected");
	}
	forever();
}

int main(int argc, char **argv)
{
	struct sigaction sa = {0};

	if (argc != 5 || (strcmp(argv[1], "victim") && strcmp(argv[1], "peer"))) {
		fprintf(stderr, "usage: %s victim|peer FAULT ADDR PORT\n", argv[0]);
		return 2;
	}
	for (size_t i = 0; i < sizeof chunk; i++)
		chunk[i] = (unsigned char)(i % 251);
	sa.sa_handler = on_signal; /* no SA_RESTART: a blocking call ends with EINTR */
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	at_len = make_addr(argv[3], (unsigned short)atoi(argv[4]), &at);
	if (!strncmp(argv[2], "u-", 2))
		at_type = SOCK_DGRAM;
	if (!strcmp(argv[1], "victim"))
		victim(argv[2]);
	else
		peer(argv[2]);
	return 0;
}
