// An epoll descriptor for the library's own use, made by the system call
// itself: a preload that stands in for epoll_create1 (librspreload,
// libvma.so) enters the sets it makes in its tables as the program's and
// hands out duplicates, which is right for the program and wrong for
// ours. The preloads pass library calls straight to libc, but not every
// library call is marked as one: a fork handler runs on the program's
// thread (a listener's fork_child after a pre-forking server's fork).
#pragma once
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace ss {

// An epoll fd (close-on-exec), or -1 and errno.
inline int own_epoll() { return static_cast<int>(::syscall(SYS_epoll_create1, EPOLL_CLOEXEC)); }

}  // namespace ss
