// An epoll instance over mixed descriptors, the piece the preloads'
// epoll_* wrappers sit on: kernel descriptors live in a real epoll fd (the
// kernel keeps their level, edge and one-shot state), Pollables (fd-table
// objects) in a list here, with the same three modes emulated from their
// readiness. epoll_wait looks at both, spins for a while, then sleeps on
// the real epoll fd and every Pollable's wait target and kick.
#pragma once
#include <sys/epoll.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/base/fd_table.h"
#include "core/base/mixed_poll.h"
#include "core/base/pollable.h"

namespace ss {

class SleepSet;

class EpollSet {
 public:
  // epoll_create1(flags) for the kernel part: 0 or -errno.
  static int create(int flags, std::unique_ptr<EpollSet>* out);
  ~EpollSet();
  EpollSet(const EpollSet&) = delete;
  EpollSet& operator=(const EpollSet&) = delete;

  // The real epoll fd: the kernel part (it can itself be added to another
  // epoll set, kernel or mixed, which then sees the kernel part only).
  int kernel_fd() const { return epfd_; }

  // epoll_ctl(2): 0 or -errno as the kernel gives it (EEXIST, ENOENT,
  // EBADF, EINVAL, EPERM). A descriptor whose fd-table entry holds a
  // Pollable joins the list here, any other goes to the kernel.
  int ctl(int op, int fd, const epoll_event* ev, const FdTable& table = FdTable::instance());

  // epoll_wait(2): a count, 0 on timeout, or -errno (-EINVAL for
  // maxevents <= 0, -EINTR when a signal handler ran: never restarted).
  int wait(epoll_event* events, int maxevents, int timeout_ms, const PollTiming& timing);

 private:
  explicit EpollSet(int epfd) : epfd_(epfd) {}
  struct Member {
    int fd;
    uint32_t events;  // as given: the poll bits, EPOLLET, EPOLLONESHOT
    epoll_data_t data;
    std::weak_ptr<Pollable> obj;  // closed (gone): the member leaves, as in the kernel
    // Edge-triggered: the bits reported and not yet gone, and the
    // object's change count when they were.
    short reported = 0;
    uint64_t seen = 0;
    bool disabled = false;        // one-shot, reported: until EPOLL_CTL_MOD
  };
  Member* find(int fd);
  // Ready Pollable members into events[0..max): the count.
  int collect(epoll_event* events, int max);
  bool arm(SleepSet* sleep, int* sleep_ms, std::vector<std::shared_ptr<Pollable>>* held);
  // What an edge-triggered member reports of `rev` (the object's
  // readiness; `count` its change count when `counted`).
  static short edge(Member* m, short rev, bool counted, uint64_t count);

  const int epfd_;
  std::mutex mu_;  // members_
  std::vector<Member> members_;
  size_t next_ = 0;  // where collect() starts: no member starves the others
};

}  // namespace ss
