// Descriptors for the library's own use, made and closed by the system
// call itself. A preload stands in for libc's names (librspreload,
// libvma.so): its epoll_create1 enters the sets it makes in its tables as
// the program's and hands out duplicates, its close takes its tables'
// locks. The preloads pass library calls straight to libc, but not every
// library call is marked as one: a fork handler runs on the program's
// thread (a listener's fork_child after a pre-forking server's fork), and
// there a preload's lock may still be held from the fork (the fd table's
// child handler runs before the preload's own unlocks it).
#pragma once
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace ss {

// An epoll fd (close-on-exec), or -1 and errno.
inline int own_epoll() { return static_cast<int>(::syscall(SYS_epoll_create1, EPOLL_CLOEXEC)); }

// close(2) of a descriptor of ours, in a fork handler.
inline void own_close(int fd) { ::syscall(SYS_close, fd); }

}  // namespace ss
