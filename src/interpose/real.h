// The calls a preload stands in for, as the next library (libc) has
// them: resolved once with dlsym(RTLD_NEXT) under pthread_once, so the
// first calls of several threads race on nothing. Shared by both preloads
// (librspreload, libvma.so) as a convenience library linked into each: the
// code must live in the module itself, since RTLD_NEXT searches the
// objects after the caller's (libslipstream, loaded after libc, would find
// no socket() there).
#pragma once
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <csignal>
#include <cstdio>
#include <ctime>

namespace ss::interpose {

struct RealCalls {
  int (*socket)(int, int, int);
  int (*bind)(int, const sockaddr*, socklen_t);
  int (*listen)(int, int);
  int (*accept)(int, sockaddr*, socklen_t*);
  int (*accept4)(int, sockaddr*, socklen_t*, int);
  int (*connect)(int, const sockaddr*, socklen_t);
  ssize_t (*read)(int, void*, size_t);
  ssize_t (*readv)(int, const iovec*, int);
  ssize_t (*write)(int, const void*, size_t);
  ssize_t (*writev)(int, const iovec*, int);
  ssize_t (*preadv2)(int, const iovec*, int, off_t, int);
  ssize_t (*pwritev2)(int, const iovec*, int, off_t, int);
  ssize_t (*recv)(int, void*, size_t, int);
  ssize_t (*recvfrom)(int, void*, size_t, int, sockaddr*, socklen_t*);
  ssize_t (*recvmsg)(int, msghdr*, int);
  ssize_t (*send)(int, const void*, size_t, int);
  ssize_t (*sendto)(int, const void*, size_t, int, const sockaddr*, socklen_t);
  ssize_t (*sendmsg)(int, const msghdr*, int);
  int (*close)(int);
  int (*shutdown)(int, int);
  int (*getsockopt)(int, int, int, void*, socklen_t*);
  int (*setsockopt)(int, int, int, const void*, socklen_t);
  int (*getsockname)(int, sockaddr*, socklen_t*);
  int (*getpeername)(int, sockaddr*, socklen_t*);
  int (*fcntl)(int, int, ...);
  int (*ioctl)(int, unsigned long, ...);
  int (*poll)(pollfd*, nfds_t, int);
  int (*select)(int, fd_set*, fd_set*, fd_set*, timeval*);
  int (*dup)(int);
  int (*dup2)(int, int);
  int (*dup3)(int, int, int);
  ssize_t (*sendfile)(int, int, off_t*, size_t);
  ssize_t (*splice)(int, loff_t*, int, loff_t*, size_t, unsigned int);
  int (*epoll_create)(int);
  int (*epoll_create1)(int);
  int (*epoll_ctl)(int, int, int, epoll_event*);
  int (*epoll_wait)(int, epoll_event*, int, int);
  int (*epoll_pwait)(int, epoll_event*, int, int, const sigset_t*);
  int (*epoll_pwait2)(int, epoll_event*, int, const timespec*, const sigset_t*);
  int (*ppoll)(pollfd*, nfds_t, const timespec*, const sigset_t*);
  int (*pselect)(int, fd_set*, fd_set*, fd_set*, const timespec*, const sigset_t*);
  int (*recvmmsg)(int, mmsghdr*, unsigned int, int, timespec*);
  int (*sendmmsg)(int, mmsghdr*, unsigned int, int);
  int (*close_range)(unsigned int, unsigned int, int);
  FILE* (*fdopen)(int, const char*);
  int (*sigaction)(int, const struct sigaction*, struct sigaction*);
  int (*socketpair)(int, int, int, int*);
  int (*pipe)(int*);
  int (*pipe2)(int*, int);
  int (*open)(const char*, int, ...);
  int (*__open_2)(const char*, int);
  int (*creat)(const char*, mode_t);
  int (*execve)(const char*, char* const*, char* const*);
  int (*execvpe)(const char*, char* const*, char* const*);
  int (*fexecve)(int, char* const*, char* const*);
  int (*execveat)(int, const char*, char* const*, char* const*, int);
  int (*posix_spawn)(pid_t*, const char*, const posix_spawn_file_actions_t*,
                     const posix_spawnattr_t*, char* const*, char* const*);
  int (*posix_spawnp)(pid_t*, const char*, const posix_spawn_file_actions_t*,
                      const posix_spawnattr_t*, char* const*, char* const*);
  int (*system)(const char*);
  FILE* (*popen)(const char*, const char*);
  int (*prctl)(int, unsigned long, unsigned long, unsigned long, unsigned long);
  long (*syscall)(long, long, long, long, long, long, long);
  void (*_exit)(int);
  pid_t (*fork)();
  int (*posix_spawn_file_actions_init)(posix_spawn_file_actions_t*);
  int (*posix_spawn_file_actions_destroy)(posix_spawn_file_actions_t*);
  int (*posix_spawn_file_actions_adddup2)(posix_spawn_file_actions_t*, int, int);
};

// libc's calls (never null: a name libc lacks aborts at the first call
// with a log line, which no glibc this builds on does).
const RealCalls& real();

}  // namespace ss::interpose
