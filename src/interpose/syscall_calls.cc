// libc's syscall(): a system call by its number, exported by both
// preloads. Programs use it to pass libc by: libuv (Node.js) closes its
// descriptors by syscall(SYS_close). A descriptor's lifecycle calls go to
// the preload's own names, so that its tables follow the kernel's: a raw
// close of a socket the preload serves would leave the number looking
// like that socket to whatever the program opens next at it. Only numbers
// the preload serves take that way (and epoll sets made that way, which
// may come to hold them), and only from the program: a malloc's
// start-up closes its files by syscall (jemalloc's), where nothing may
// allocate, and Slipstream's own libraries close by syscall where they
// mean the kernel alone (core/base/own_fd.h: fork handlers). A seccomp
// filter installed this way (libseccomp's) locks the process in
// (core/base/sandbox.h).
#include <dlfcn.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <cstring>

#include "core/base/fd_table.h"
#include "core/base/sandbox.h"
#include "interpose/export.h"
#include "interpose/real.h"

namespace {
// Whether the call at return address `ret` comes from outside
// Slipstream's libraries (this preload, libslipstream, librsocket).
bool from_program(const void* ret) {
  static const void* self = [] {
    Dl_info i{};
    return dladdr(reinterpret_cast<void*>(&from_program), &i) ? i.dli_fbase : nullptr;
  }();
  Dl_info i{};
  if (!dladdr(ret, &i) || !i.dli_fname) return true;
  if (i.dli_fbase == self) return false;
  const char* name = strrchr(i.dli_fname, '/');
  name = name ? name + 1 : i.dli_fname;
  return strncmp(name, "libslipstream.", 14) != 0 && strncmp(name, "librsocket.", 11) != 0;
}

bool served(long fd) {
  const ss::FdTable* t = ss::FdTable::if_made();
  return t && fd >= 0 && fd <= INT32_MAX && t->kind(static_cast<int>(fd)) != ss::FdKind::kNone;
}
}  // namespace

SS_PRELOAD_EXPORT long syscall(long number, ...) {
  va_list ap;
  va_start(ap, number);
  long a[6];
  for (long& v : a) v = va_arg(ap, long);
  va_end(ap);
  const auto fd = [&](int i) { return static_cast<int>(a[i]); };
  const void* ret = __builtin_return_address(0);
  const auto ours = [&](bool served_number) { return served_number && from_program(ret); };
  switch (number) {
    case SYS_close:
      if (ours(served(a[0]))) return close(fd(0));
      break;
    case SYS_close_range:
      if (ours(ss::FdTable::if_made() != nullptr))
        return close_range(static_cast<unsigned>(a[0]), static_cast<unsigned>(a[1]), fd(2));
      break;
    case SYS_dup:
      if (ours(served(a[0]))) return dup(fd(0));
      break;
#ifdef SYS_dup2
    case SYS_dup2:
      if (ours(served(a[0]) || served(a[1]))) return dup2(fd(0), fd(1));
      break;
#endif
    case SYS_dup3:
      if (ours(served(a[0]) || served(a[1]))) return dup3(fd(0), fd(1), fd(2));
      break;
      // A set the preload made can hold its sockets (a kernel set cannot).
#ifdef SYS_epoll_create
    case SYS_epoll_create:
      if (ours(ss::FdTable::if_made() != nullptr)) return epoll_create(fd(0));
      break;
#endif
    case SYS_epoll_create1:
      if (ours(ss::FdTable::if_made() != nullptr)) return epoll_create1(fd(0));
      break;
    case SYS_epoll_ctl:
      if (ours(served(a[0]) || served(a[2])))
        return epoll_ctl(fd(0), fd(1), fd(2), reinterpret_cast<epoll_event*>(a[3]));
      break;
#ifdef SYS_epoll_wait
    case SYS_epoll_wait:
      if (ours(served(a[0])))
        return epoll_wait(fd(0), reinterpret_cast<epoll_event*>(a[1]), fd(2), fd(3));
      break;
#endif
    case SYS_epoll_pwait:  // the kernel's mask is _NSIG bits; libc's call passes that size
      if (ours(served(a[0])) && (!a[4] || a[5] == _NSIG / 8))
        return epoll_pwait(fd(0), reinterpret_cast<epoll_event*>(a[1]), fd(2), fd(3),
                           reinterpret_cast<const sigset_t*>(a[4]));
      break;
#ifdef SYS_epoll_pwait2
    case SYS_epoll_pwait2:
      if (ours(served(a[0])) && (!a[4] || a[5] == _NSIG / 8))
        return epoll_pwait2(fd(0), reinterpret_cast<epoll_event*>(a[1]), fd(2),
                            reinterpret_cast<const timespec*>(a[3]),
                            reinterpret_cast<const sigset_t*>(a[4]));
      break;
#endif
    default:
      break;
  }
  const long rc = ss::interpose::real().syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
  if (rc >= 0 && number == SYS_seccomp &&
      (a[0] == SECCOMP_SET_MODE_FILTER || a[0] == SECCOMP_SET_MODE_STRICT))
    ss::sandbox::enter();
  return rc;
}
