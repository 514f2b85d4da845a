/* A socketXtreme TCP echo server, in the VMA guide's shape: the ring
 * descriptor is taken right after bind, and from then on the program only
 * calls socketxtreme_poll on it: connections arrive accepted, their data
 * as buffer chains it frees once echoed. No accept(), no recv().
 *
 *   cc -I<prefix>/include xtreme_echo.c -o xtreme_echo
 *   VMA_SOCKETXTREME=1 LD_PRELOAD=libvma.so ./xtreme_echo 10.0.0.1 7000 8
 *
 * It serves until CONNS connections have ended (tests/ext/vma_tcp_extra.sh
 * runs it against Linux's clients). See vma_extra(7), socketxtreme_poll(3).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mellanox/vma_extra.h>

int main(int argc, char **argv)
{
	struct vma_api_t *api = vma_get_api();
	struct sockaddr_in at = {.sin_family = AF_INET};
	int one = 1, ring, ended = 0, l;

	if (argc != 4 || inet_pton(AF_INET, argv[1], &at.sin_addr) != 1) {
		fprintf(stderr, "usage: %s IPV4 PORT CONNS\n", argv[0]);
		return 2;
	}
	if (!api) {
		fprintf(stderr, "no VMA Extra API: run under LD_PRELOAD=libvma.so\n");
		return 1;
	}
	at.sin_port = htons((unsigned short)atoi(argv[2]));
	l = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(l, (struct sockaddr *)&at, sizeof at) != 0 ||
	    api->get_socket_rings_fds(l, &ring, 1) != 1 || listen(l, 64) != 0) {
		perror("bind, get_socket_rings_fds or listen");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (ended < atoi(argv[3])) {
		struct vma_completion_t comps[16];
		int n = api->socketxtreme_poll(ring, comps, 16, 0);

		if (n < 0) {
			perror("socketxtreme_poll");
			return 1;
		}
		if (n == 0) { /* nothing now: sleep until the ring has news */
			struct pollfd p = {ring, POLLIN, 0};

			poll(&p, 1, -1);
			continue;
		}
		for (int i = 0; i < n; i++) {
			struct vma_completion_t *c = &comps[i];
			int fd = (int)c->user_data; /* by default, the connection's fd */

			if (c->events & VMA_SOCKETXTREME_NEW_CONNECTION_ACCEPTED)
				continue; /* fd is open and ready; nothing to do */
			if (c->events & VMA_SOCKETXTREME_PACKET) {
				for (struct vma_buff_t *b = c->packet.buff_lst; b; b = b->next)
					send(fd, b->payload, b->len, 0);
				api->socketxtreme_free_vma_packets(&c->packet, 1);
			}
			if (c->events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
				close(fd);
				ended++;
			}
		}
	}
	printf("served %d connections\n", ended);
	close(l);
	return 0;
}
