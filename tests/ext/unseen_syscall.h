/* A system call no preload sees, for the C programs of tests/ext
 * (included by their sources): made by the instruction itself, as Go's
 * runtime makes them. libc's syscall() goes through the preloads, which
 * route a program's raw close, dup and epoll calls on their sockets. */
#pragma once
#include <errno.h>

static long unseen_syscall1(long n, long arg) {
#if defined(__x86_64__)
  long ret;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(arg) : "rcx", "r11", "memory");
#elif defined(__aarch64__)
  register long x8 __asm__("x8") = n;
  register long ret __asm__("x0") = arg;
  __asm__ volatile("svc 0" : "+r"(ret) : "r"(x8) : "memory");
#else
#error "unseen_syscall1: no system call instruction for this architecture"
#endif
  if (ret < 0 && ret > -4096) {
    errno = (int)-ret;
    return -1;
  }
  return ret;
}
