// poll, select, ppoll, pselect and fortify's __poll_chk and __ppoll_chk,
// once for both preloads (poll_calls.cc). A set that holds a descriptor of
// the preload's face takes the face's wait; any other set, and every own
// call (own_calls.h), is libc's, unchanged: a kernel-only ppoll or pselect
// keeps the kernel's atomic signal-mask swap (a program that unblocks
// SIGCHLD only inside pselect must not lose it).
#pragma once
#include <poll.h>
#include <sys/select.h>

namespace ss::interpose {

struct PollFace {
  // Whether fd's readiness is more than its kernel descriptor's.
  bool (*ours)(int fd);
  // The face's waits over a set holding one: a count, or -1 and errno.
  // Called inside OwnCalls; they throw nothing.
  int (*poll)(pollfd* fds, nfds_t n, int timeout_ms);
  int (*select)(int nfds, fd_set* r, fd_set* w, fd_set* x, timeval* tv);
};

// Each preload defines its face.
extern const PollFace kPollFace;

}  // namespace ss::interpose
