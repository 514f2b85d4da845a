/* Multicast peers for vma_mcast.sh. Every datagram i carries "mc <i> " and
 * then a pattern of i, 20 + (i * 37) % 1000 bytes in all, so a receiver
 * checks each one's contents and order.
 * recv 4|6 GROUP PORT COUNT NSOCK IFNAME [SOURCE]: NSOCK sockets (one
 *   process), SO_REUSEADDR, bound to the wildcard address and PORT, each
 *   joined to GROUP on IFNAME (IPv4: ip_mreq by the interface's address,
 *   or ip_mreq_source for SOURCE; IPv6: ipv6_mreq by index, or
 *   MCAST_JOIN_SOURCE_GROUP; with MC_ANY_IF, no interface named: the
 *   kernel's route to the group picks it; with MC_GROUP_REQ, any-source
 *   joins by MCAST_JOIN_GROUP; with MC_MSFILTER, IPv4, the join is then
 *   restated by IP_MSFILTER), prints "ready PID", then every socket
 *   receives COUNT datagrams in order (10 s timeout each; with SOURCE
 *   every one must come from it). Then, with MC_LEAVE set, each leaves
 *   the group and prints "left"; it waits for a line on stdin, then no
 *   socket may have anything more (non-blocking receive). Exit 0 if so.
 * send 4|6 GROUP PORT COUNT IFNAME [TTL [LOOP [SOURCE]]]: one socket bound
 *   to SOURCE (else the wildcard) port 0, IP_MULTICAST_IF IFNAME, the TTL /
 *   hop limit and loop given (-1: left as is), sends COUNT datagrams; with
 *   MC_MEMBER set, a second socket of the same process joined to GROUP on
 *   PORT must then receive every one once (LOOP 1, or MC_LOOPED=1) or none
 *   (LOOP 0, or MC_LOOPED=0).
 * krecv 4|6 GROUP PORT COUNT IFNAME TTL: one socket joined as recv does,
 *   with IP_RECVTTL / IPV6_RECVHOPLIMIT: COUNT datagrams in order, each
 *   with that TTL. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int fam;
static struct sockaddr_storage group;
static socklen_t glen;
static int ifindex;
static struct in_addr ifaddr4;

static void die(const char* what) {
  perror(what);
  exit(1);
}

static size_t make(int i, char* out) {
  const size_t n = 20 + (size_t)(i * 37) % 1000;
  int h = snprintf(out, n, "mc %d ", i);
  for (size_t k = (size_t)h; k < n; k++) out[k] = (char)('a' + (i + k) % 26);
  return n;
}

static int parse_addr(const char* text, unsigned short port, struct sockaddr_storage* ss) {
  memset(ss, 0, sizeof *ss);
  if (fam == AF_INET) {
    struct sockaddr_in* s = (struct sockaddr_in*)ss;
    s->sin_family = AF_INET;
    s->sin_port = htons(port);
    if (text && inet_pton(AF_INET, text, &s->sin_addr) != 1) return -1;
    return sizeof *s;
  }
  struct sockaddr_in6* s = (struct sockaddr_in6*)ss;
  s->sin6_family = AF_INET6;
  s->sin6_port = htons(port);
  if (text && inet_pton(AF_INET6, text, &s->sin6_addr) != 1) return -1;
  return sizeof *s;
}

static void find_if(const char* name) {
  ifindex = (int)if_nametoindex(name);
  if (!ifindex) die("if_nametoindex");
  struct ifaddrs *list, *i;
  if (getifaddrs(&list) < 0) die("getifaddrs");
  for (i = list; i; i = i->ifa_next)
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && !strcmp(i->ifa_name, name))
      ifaddr4 = ((struct sockaddr_in*)i->ifa_addr)->sin_addr;
  freeifaddrs(list);
}

static int bound_socket(unsigned short port, const char* addr) {
  const int fd = socket(fam, SOCK_DGRAM, 0);
  const int one = 1;
  struct sockaddr_storage a;
  const int alen = parse_addr(addr, port, &a);
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0) die("socket");
  if (alen < 0 || bind(fd, (struct sockaddr*)&a, (socklen_t)alen) < 0) die("bind");
  struct timeval tv = {10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  /* Only the groups this socket joined (the kernel's default also hands it
   * groups other sockets joined on the port; the rings never do). */
  const int zero = 0;
  setsockopt(fd, IPPROTO_IP, IP_MULTICAST_ALL, &zero, sizeof zero);
  if (fam == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_ALL, &zero, sizeof zero);
  return fd;
}

static void membership(int fd, const char* source, int join) {
  int r;
  /* MC_ANY_IF: no interface named, the kernel's route to the group picks it. */
  const int any_if = getenv("MC_ANY_IF") != NULL;
  struct in_addr ia = ifaddr4;
  const unsigned ix = any_if ? 0 : (unsigned)ifindex;
  if (any_if) ia.s_addr = INADDR_ANY;
  if (getenv("MC_GROUP_REQ") && !source) { /* RFC 3678's protocol-independent form */
    struct group_req g;
    memset(&g, 0, sizeof g);
    g.gr_interface = ix;
    memcpy(&g.gr_group, &group, glen);
    r = setsockopt(fd, fam == AF_INET ? IPPROTO_IP : IPPROTO_IPV6,
                   join ? MCAST_JOIN_GROUP : MCAST_LEAVE_GROUP, &g, sizeof g);
    if (r < 0) die(join ? "join" : "leave");
    return;
  }
  if (fam == AF_INET && !source) {
    struct ip_mreq m = {((struct sockaddr_in*)&group)->sin_addr, ia};
    r = setsockopt(fd, IPPROTO_IP, join ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP, &m, sizeof m);
  } else if (fam == AF_INET) {
    struct ip_mreq_source m;
    m.imr_multiaddr = ((struct sockaddr_in*)&group)->sin_addr;
    m.imr_interface = ia;
    inet_pton(AF_INET, source, &m.imr_sourceaddr);
    r = setsockopt(fd, IPPROTO_IP, join ? IP_ADD_SOURCE_MEMBERSHIP : IP_DROP_SOURCE_MEMBERSHIP,
                   &m, sizeof m);
  } else if (!source) {
    struct ipv6_mreq m;
    m.ipv6mr_multiaddr = ((struct sockaddr_in6*)&group)->sin6_addr;
    m.ipv6mr_interface = ix;
    r = setsockopt(fd, IPPROTO_IPV6, join ? IPV6_JOIN_GROUP : IPV6_LEAVE_GROUP, &m, sizeof m);
  } else {
    struct group_source_req g;
    memset(&g, 0, sizeof g);
    g.gsr_interface = ix;
    memcpy(&g.gsr_group, &group, glen);
    parse_addr(source, 0, &g.gsr_source);
    r = setsockopt(fd, IPPROTO_IPV6, join ? MCAST_JOIN_SOURCE_GROUP : MCAST_LEAVE_SOURCE_GROUP,
                   &g, sizeof g);
  }
  if (r < 0) die(join ? "join" : "leave");
}

/* Datagram i on fd, checked; its TTL too when ttl >= 0. */
static int expect(int fd, int i, const char* source, int ttl) {
  char want[1100], got[2048], ctl[256], from[INET6_ADDRSTRLEN] = "";
  const size_t n = make(i, want);
  struct sockaddr_storage src;
  struct iovec iov = {got, sizeof got};
  struct msghdr m = {&src, sizeof src, &iov, 1, ctl, sizeof ctl, 0};
  const ssize_t r = recvmsg(fd, &m, 0);
  if (r < 0) {
    fprintf(stderr, "fd %d datagram %d: %s\n", fd, i, strerror(errno));
    return 1;
  }
  if ((size_t)r != n || memcmp(got, want, n)) {
    fprintf(stderr, "fd %d datagram %d: %zd bytes, '%.12s' (want %zu, 'mc %d')\n", fd, i, r, got,
            n, i);
    return 1;
  }
  if (fam == AF_INET) inet_ntop(AF_INET, &((struct sockaddr_in*)&src)->sin_addr, from, sizeof from);
  else inet_ntop(AF_INET6, &((struct sockaddr_in6*)&src)->sin6_addr, from, sizeof from);
  if (source && strcmp(from, source)) {
    fprintf(stderr, "fd %d datagram %d from %s, joined for %s only\n", fd, i, from, source);
    return 1;
  }
  if (ttl >= 0) {
    int seen = -1;
    for (struct cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
      if ((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TTL) ||
          (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_HOPLIMIT))
        memcpy(&seen, CMSG_DATA(c), sizeof seen);
    if (seen != ttl) {
      fprintf(stderr, "datagram %d: TTL %d, want %d\n", i, seen, ttl);
      return 1;
    }
  }
  return 0;
}

static int nothing_more(int fd) {
  char b[2048];
  const ssize_t r = recv(fd, b, sizeof b, MSG_DONTWAIT);
  if (r >= 0) {
    fprintf(stderr, "fd %d: a datagram after the end: '%.12s'\n", fd, b);
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 7) {
    fprintf(stderr, "usage: see the comment at the top\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  fam = atoi(argv[2]) == 6 ? AF_INET6 : AF_INET;
  const unsigned short port = (unsigned short)atoi(argv[4]);
  const int count = atoi(argv[5]);
  const int g = parse_addr(argv[3], port, &group);
  if (g < 0) return 2;
  glen = (socklen_t)g;
  int bad = 0;
  if (!strcmp(argv[1], "recv") && argc >= 8) {
    const int nsock = atoi(argv[6]);
    const char* source = argc > 8 ? argv[8] : NULL;
    int fds[8];
    find_if(argv[7]);
    for (int s = 0; s < nsock && s < 8; s++) {
      fds[s] = bound_socket(port, NULL);
      membership(fds[s], source, 1);
      if (getenv("MC_MSFILTER") && fam == AF_INET) { /* the same any-source join, as a list */
        struct ip_msfilter f;
        memset(&f, 0, sizeof f);
        f.imsf_multiaddr = ((struct sockaddr_in*)&group)->sin_addr;
        f.imsf_interface = ifaddr4;
        f.imsf_fmode = MCAST_EXCLUDE;
        if (setsockopt(fds[s], IPPROTO_IP, IP_MSFILTER, &f, IP_MSFILTER_SIZE(0)) < 0)
          die("IP_MSFILTER");
      }
    }
    printf("ready %d\n", (int)getpid());
    for (int i = 0; i < count && !bad; i++)
      for (int s = 0; s < nsock && !bad; s++) bad |= expect(fds[s], i, source, -1);
    if (getenv("MC_LEAVE")) {
      for (int s = 0; s < nsock; s++) membership(fds[s], source, 0);
      printf("left\n");
    }
    char line[16];
    if (!fgets(line, sizeof line, stdin)) line[0] = 0;
    for (int s = 0; s < nsock; s++) bad |= nothing_more(fds[s]);
    printf("%s\n", bad ? "FAILED" : "ok");
    return bad;
  }
  if (!strcmp(argv[1], "send")) {
    const int ttl = argc > 7 ? atoi(argv[7]) : -1, loop = argc > 8 ? atoi(argv[8]) : -1;
    find_if(argv[6]);
    const int fd = bound_socket(0, argc > 9 ? argv[9] : NULL);
    int member = -1;
    if (getenv("MC_MEMBER")) {
      member = bound_socket(port, NULL);
      membership(member, NULL, 1);
    }
    int r;
    if (fam == AF_INET) {
      struct ip_mreqn m = {{0}, {0}, ifindex};
      r = setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &m, sizeof m);
      if (r == 0 && ttl >= 0) r = setsockopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof ttl);
      if (r == 0 && loop >= 0) r = setsockopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof loop);
    } else {
      r = setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, &ifindex, sizeof ifindex);
      if (r == 0 && ttl >= 0) r = setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &ttl, sizeof ttl);
      if (r == 0 && loop >= 0)
        r = setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, &loop, sizeof loop);
    }
    if (r < 0) die("setsockopt");
    char out[1100];
    for (int i = 0; i < count; i++) {
      const size_t n = make(i, out);
      if (sendto(fd, out, n, 0, (struct sockaddr*)&group, glen) != (ssize_t)n) die("sendto");
      usleep(200); /* paces a burst, not a timing assertion */
    }
    if (member >= 0) {
      /* LOOP -1 leaves the socket's default; MC_LOOPED says what it is. */
      const char* looped = getenv("MC_LOOPED");
      if (looped ? atoi(looped) : loop != 0)
        for (int i = 0; i < count && !bad; i++) bad |= expect(member, i, NULL, -1);
      usleep(200000); /* anything further (a duplicate, a copy with loop off) has arrived */
      bad |= nothing_more(member);
    }
    printf("sent %d %s\n", (int)getpid(), bad ? "FAILED" : "ok");
    if (getenv("MC_HOLD")) {
      char line[16];
      if (!fgets(line, sizeof line, stdin)) line[0] = 0;
    }
    return bad;
  }
  if (!strcmp(argv[1], "krecv") && argc >= 8) {
    const int ttl = atoi(argv[7]), one = 1;
    find_if(argv[6]);
    const int fd = bound_socket(port, NULL);
    membership(fd, NULL, 1);
    if (fam == AF_INET) setsockopt(fd, IPPROTO_IP, IP_RECVTTL, &one, sizeof one);
    else setsockopt(fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &one, sizeof one);
    printf("ready %d\n", (int)getpid());
    for (int i = 0; i < count && !bad; i++) bad |= expect(fd, i, NULL, ttl);
    printf("%s\n", bad ? "FAILED" : "ok");
    return bad;
  }
  fprintf(stderr, "unknown mode %s\n", argv[1]);
  return 2;
}
