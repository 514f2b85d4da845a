/* A socket address from text, for the C programs of tests/ext (included
 * by their sources; exits 2 on an address that is neither IPv6 nor IPv4). */
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static socklen_t make_addr(const char* ip, unsigned short port, struct sockaddr_storage* ss) {
  memset(ss, 0, sizeof *ss);
  struct sockaddr_in6* s6 = (struct sockaddr_in6*)ss;
  struct sockaddr_in* s4 = (struct sockaddr_in*)ss;
  if (inet_pton(AF_INET6, ip, &s6->sin6_addr) == 1) {
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(port);
    return sizeof *s6;
  }
  if (inet_pton(AF_INET, ip, &s4->sin_addr) == 1) {
    s4->sin_family = AF_INET;
    s4->sin_port = htons(port);
    return sizeof *s4;
  }
  fprintf(stderr, "bad address %s\n", ip);
  exit(2);
}
