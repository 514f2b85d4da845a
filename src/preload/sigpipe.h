// SIGPIPE for a send on a connection that can no longer send, raised in
// the calling thread as the kernel's is, unless MSG_NOSIGNAL.
#pragma once
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <cerrno>

namespace ss::preload {

inline ssize_t pipe_signal(ssize_t n, int flags) {
  if (n < 0 && errno == EPIPE && !(flags & MSG_NOSIGNAL)) {
    const int saved = errno;
    pthread_kill(pthread_self(), SIGPIPE);
    errno = saved;
  }
  return n;
}

}  // namespace ss::preload
