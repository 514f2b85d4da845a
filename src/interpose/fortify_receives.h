// Fortify's receive variants: what a program built with _FORTIFY_SOURCE
// calls for a buffer of known size. glibc's check (a length past the
// buffer aborts), then the preload's own read, recv and recvfrom, so the
// program's receives take the preload's path. Expanded once in each
// preload, at global scope, where those three are defined.
#pragma once
#include <sys/socket.h>
#include <sys/types.h>

#include "interpose/export.h"

extern "C" void __chk_fail(void) __attribute__((noreturn));

#define SS_PRELOAD_FORTIFY_RECEIVES                                                               \
  SS_PRELOAD_EXPORT ssize_t __read_chk(int fd, void* buf, size_t n, size_t buflen) {              \
    if (n > buflen) __chk_fail();                                                                 \
    return read(fd, buf, n);                                                                      \
  }                                                                                               \
  SS_PRELOAD_EXPORT ssize_t __recv_chk(int fd, void* buf, size_t n, size_t buflen, int flags) {   \
    if (n > buflen) __chk_fail();                                                                 \
    return recv(fd, buf, n, flags);                                                               \
  }                                                                                               \
  SS_PRELOAD_EXPORT ssize_t __recvfrom_chk(int fd, void* buf, size_t n, size_t buflen, int flags, \
                                           sockaddr* from, socklen_t* from_len) {                 \
    if (n > buflen) __chk_fail();                                                                 \
    return recvfrom(fd, buf, n, flags, from, from_len);                                           \
  }
