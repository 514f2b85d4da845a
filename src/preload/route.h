// Which way a call on a descriptor goes. One lock-free lookup in core's
// fd table (FdTable::kind) decides; a descriptor that is not ours goes
// straight to libc. So does every own call (interpose/own_calls.h:
// librsocket's calls on the kernel sockets it holds pass through the
// preload's names too) and every call of the threads the library starts
// for itself (in_library_thread).
#pragma once
#include <atomic>
#include <cerrno>
#include <memory>
#include <set>

#include "core/base/fd_table.h"
#include "core/base/library_thread.h"
#include "interpose/arrival_edges.h"
#include "interpose/own_calls.h"
#include "interpose/signal_count.h"
#include "preload/late_fallback.h"

namespace ss::preload {

using interpose::OwnCalls;

// True in the library's own threads (they mark themselves before their
// first call) and in a thread librsocket marked late (an exit's closing
// work, exit_close.cc): a yes is kept, a no asked again.
inline bool library_thread() {
  static thread_local bool known = false;
  return known || (known = in_library_thread());
}

inline bool libc_only() { return interpose::in_own_call() || library_thread(); }

// True in a vfork child: it shares the parent's memory, so the preload's
// tables and connections are the parent's. close, close_range, closefrom,
// dup2/dup3 and fcntl then act as libc alone and touch no table (CPython's
// subprocess closes every descriptor that way before exec); an rsocket's
// kernel descriptor and its copies stay close-on-exec there.
bool in_vfork_child();
// In a vfork child: the descriptors every rsocket's connection runs on
// (their own and their streams), which its closes leave open (they are
// close-on-exec, and an exec may carry the connection: exec_hook.cc).
// Read once per child (a close loop over every number stays cheap).
const std::set<int>& vfork_child_transports();

// What the preload holds for a TCP socket that is not an rsocket (yet):
// fd table entries of kind kRspreloadTcp. A Pollable (listener_ready.cc), so
// that poll, select and epoll see a listener's two queues as one: readable
// when the kernel listener or the rsocket listener has a connection.
struct Entry final : Pollable {
  // kStopped: out of the table, listening ended (shutdown, a kernel epoll
  // set): an accept still holding it sees the kernel socket only.
  enum class State { kFresh, kListener, kStopped };
  std::atomic<State> state{State::kFresh};
  int fd = -1;  // the program's descriptor (the kernel socket)
  int domain = 0;
  // kListener: the rsocket listening for rsocket peers beside the kernel
  // listening socket (a dup of the program's descriptor), and the
  // program's view of O_NONBLOCK (the kernel socket itself never blocks).
  // The Entry owns rs_fd (rclosed with it): an accept holding the Entry
  // acts on the listener through rs_fd, a number that no other thread's
  // close can free meanwhile.
  std::atomic<int> rs_fd{-1};
  std::atomic<bool> nonblock{false};
  std::atomic<int> backlog{0};  // kListener: the program's last listen (an exec listens again)
  // SO_SNDBUF/SO_RCVBUF the program set while the socket was fresh (0: not
  // set): the kernel socket took them, the rsocket made at connect or
  // listen takes them too (as upstream's preload copies a program's
  // options set before the rsocket exists).
  std::atomic<int> sndbuf{0};
  std::atomic<int> rcvbuf{0};

  Entry() = default;
  Entry(const Entry&) = delete;
  Entry& operator=(const Entry&) = delete;
  ~Entry() override;

  // The kernel socket, by a number valid as long as the Entry: a
  // listener's own duplicate, else the program's descriptor.
  int kernel_fd() const {
    const int r = rs_fd.load();
    return r >= 0 ? r : fd;
  }

  short readiness(short events) override;
  WaitTarget wait_target(short events, int* sleep_ms) override;
  void after_wait(const WaitTarget& armed, bool kicked) override;
  // kListener: the connections reaching either listener, for EPOLLET.
  bool change_count(uint64_t* count) override;
  void fork_child() override { edges.fork_child(); }

  // kListener, edge-triggered in an epoll set: the kernel listener's and
  // the rsocket listener's arrivals (listener_ready.cc).
  interpose::ArrivalEdges edges;
};

// kEpoll: one of the preload's epoll sets (epoll_calls.cc), fd-table kind
// kKernel: the kernel's descriptor, an EpollSet beside it.
enum class Route { kKernel, kRsocket, kFresh, kListener, kEpoll };

inline Route route(int fd) {
  if (libc_only()) return Route::kKernel;
  switch (FdTable::instance().kind(fd)) {
    case FdKind::kRsocket:
      return Route::kRsocket;
    case FdKind::kRsocketFallback:
      finish_late_fallback(fd);
      return Route::kKernel;
    case FdKind::kRspreloadTcp: {
      auto e = FdTable::instance().get<Entry>(fd, FdKind::kRspreloadTcp);
      if (!e) return Route::kKernel;  // closed meanwhile
      return e->state.load() == Entry::State::kListener ? Route::kListener : Route::kFresh;
    }
    case FdKind::kKernel:
      return Route::kEpoll;
    default:
      return Route::kKernel;
  }
}

// Call `r` (librsocket's) on rsocket `fd`, or `k` (libc's) when `fd` is
// not one. A connect that fell back late moves the descriptor to the
// kernel under calls already past route(): librsocket then answers
// ENOTCONN (a call that waited on the connect) or EBADF (the rsocket left
// its table) with nothing moved, whichever thread's call made the switch.
// Such a call is routed again: on the kernel socket it waits for the
// kernel's connect as it would have without the preload. A descriptor
// still an rsocket keeps librsocket's answer.
template <class R, class K>
auto on_rsocket(int fd, R r, K k) -> decltype(k()) {
  for (int tries = 0;; tries++) {
    if (route(fd) != Route::kRsocket) return k();  // finishes a late fallback
    decltype(k()) n;
    {
      OwnCalls in;
      n = r();
    }
    if (n >= 0 || (errno != ENOTCONN && errno != EBADF) || tries == 2) return n;
    if (FdTable::instance().kind(fd) == FdKind::kRsocket) {
      // A duplicate made while connecting: its entry stays kRsocket.
      const int err = errno;
      if (!fell_back(fd)) {
        errno = err;
        return n;
      }
      finish_late_fallback(fd);
    }
  }
}

// on_rsocket for a send or receive. In a signal handler over a library
// call of its thread it fails with EAGAIN on an rsocket: librsocket may be
// held there (the connection's lock), and the kernel socket under it is
// not the connection (SIGPIPE, ENOTCONN). Over a send's or receive's sleep
// (quiet: it holds no lock) the handler is outside every library call.
template <class R, class K>
auto on_rsocket_data(int fd, R r, K k) -> decltype(k()) {
  if (interpose::handler_over_own_call() && FdTable::instance().kind(fd) == FdKind::kRsocket) {
    errno = EAGAIN;
    return -1;
  }
  return on_rsocket(fd, r, k);
}

// FD_CLOEXEC of rsocket `fd` as the program sets it (rfcntl F_GETFD
// answers it), while the kernel descriptor stays close-on-exec: a program
// exec'd with it would otherwise hold a kernel socket that is not the
// connection (shm's carries frames), where now it gets EBADF. Called
// inside OwnCalls.
int set_fd_flags(int fd, int flags);

// Socket `fd`, neither connected nor listening, stays the kernel's for
// good (the table forgets it): it joined a kernel-side set, or was
// duplicated (a connect through one number could not move the others).
void give_to_kernel(int fd);

// Closes `fd` whatever it is (close, and dup2/dup3 over one of ours).
int close_fd(int fd);

// Listener `fd` becomes a plain kernel listener (with every duplicate): the table forgets it
// and its rsocket listener closes with the Entry's last holder (an accept
// in progress may hold it); `restore_blocking`: the program's O_NONBLOCK
// goes back on the kernel socket (whose open file fork children may share).
void to_kernel_listener(int fd, bool restore_blocking);

// In a new image after exec: kernel listener `fd`, which crossed open,
// listens over rsockets beside it again, with the program's backlog and
// O_NONBLOCK from the image before. The rsocket listener's number, or -1
// (kernel TCP only).
int listen_after_exec(int fd, int domain, int backlog, bool nonblock);

// shutdown() of listener `fd`: SHUT_RD (or SHUT_RDWR) stops both
// listeners, and the socket is fresh again (it may listen or connect).
int shutdown_listener(int fd, int how);

// stdin, stdout and stderr, where their numbers are rsockets (carried
// across exec), become streams through the preload (stdio.cc).
void standard_streams_over_connections();

// close() of epoll set `fd` (the table forgets it, the kernel closes it).
int close_epoll(int fd);
// Rsocket or listener `fd` is closing: when no other descriptor names
// it, it leaves every epoll set of the process (the kernel's rule: a
// set holds an open file until its last close).
void leave_epoll_sets(int fd);

inline std::shared_ptr<Entry> entry(int fd) {
  return FdTable::instance().get<Entry>(fd, FdKind::kRspreloadTcp);
}

}  // namespace ss::preload
