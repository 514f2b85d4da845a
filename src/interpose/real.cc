#include "interpose/real.h"

#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace ss::interpose {

namespace {

RealCalls calls;
pthread_once_t once = PTHREAD_ONCE_INIT;

template <typename F>
void resolve(F* slot, const char* name) {
  void* p = dlsym(RTLD_NEXT, name);
  if (!p) {
    // No logging layer here: it writes through these very calls.
    static const char kMsg[] = "slipstream preload: libc has no ";
    (void)!::syscall(1, 2, kMsg, sizeof kMsg - 1);
    (void)!::syscall(1, 2, name, strlen(name));
    (void)!::syscall(1, 2, "\n", 1);
    abort();
  }
  *slot = reinterpret_cast<F>(p);
}

void resolve_all() {
#define SS_REAL(name) resolve(&calls.name, #name)
  SS_REAL(socket);
  SS_REAL(bind);
  SS_REAL(listen);
  SS_REAL(accept);
  SS_REAL(accept4);
  SS_REAL(connect);
  SS_REAL(read);
  SS_REAL(readv);
  SS_REAL(write);
  SS_REAL(writev);
  SS_REAL(preadv2);
  SS_REAL(pwritev2);
  SS_REAL(recv);
  SS_REAL(recvfrom);
  SS_REAL(recvmsg);
  SS_REAL(send);
  SS_REAL(sendto);
  SS_REAL(sendmsg);
  SS_REAL(close);
  SS_REAL(shutdown);
  SS_REAL(getsockopt);
  SS_REAL(setsockopt);
  SS_REAL(getsockname);
  SS_REAL(getpeername);
  SS_REAL(fcntl);
  SS_REAL(ioctl);
  SS_REAL(poll);
  SS_REAL(select);
  SS_REAL(dup);
  SS_REAL(dup2);
  SS_REAL(dup3);
  SS_REAL(sendfile);
  SS_REAL(splice);
  SS_REAL(epoll_create);
  SS_REAL(epoll_create1);
  SS_REAL(epoll_ctl);
  SS_REAL(epoll_wait);
  SS_REAL(epoll_pwait);
  SS_REAL(epoll_pwait2);
  SS_REAL(ppoll);
  SS_REAL(pselect);
  SS_REAL(recvmmsg);
  SS_REAL(sendmmsg);
  SS_REAL(close_range);
  SS_REAL(fdopen);
  SS_REAL(sigaction);
  SS_REAL(socketpair);
  SS_REAL(pipe);
  SS_REAL(pipe2);
  SS_REAL(open);
  SS_REAL(__open_2);
  SS_REAL(creat);
  SS_REAL(execve);
  SS_REAL(execvpe);
  SS_REAL(fexecve);
  SS_REAL(execveat);
  SS_REAL(posix_spawn);
  SS_REAL(posix_spawnp);
  SS_REAL(system);
  SS_REAL(popen);
  SS_REAL(prctl);
  SS_REAL(syscall);
  SS_REAL(_exit);
  SS_REAL(fork);
  SS_REAL(posix_spawn_file_actions_init);
  SS_REAL(posix_spawn_file_actions_destroy);
  SS_REAL(posix_spawn_file_actions_adddup2);
#undef SS_REAL
}

}  // namespace

const RealCalls& real() {
  pthread_once(&once, resolve_all);
  return calls;
}

}  // namespace ss::interpose
