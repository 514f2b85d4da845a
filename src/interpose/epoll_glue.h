// epoll over mixed descriptors for both preloads (librspreload's
// preload/epoll_calls.cc, libvma.so's vma_preload/epoll_calls.cc), on core's
// EpollSet. The program's epoll descriptor is a duplicate of the set's
// kernel epoll fd (so the kernel's own calls on it act on the same set),
// in the fd table as kind kKernel with the EpollSet as its Pollable (poll,
// select and other sets see its members). Kernel descriptors go into the
// kernel set; descriptors whose fd-table object is a Pollable (an rsocket,
// an offloaded socket, another mixed set) become the EpollSet's members. A
// set without such a member is waited on by the kernel alone: the same
// syscall a program without the preload makes. A thread asleep there when
// the first member joins is woken by an eventfd entered in the kernel set
// for the purpose, which no caller ever sees.
//
// What differs between the preloads is an EpollFace: its name in log
// lines and the busy phase of a mixed wait. The glue's own calls (the
// set's epoll_ctl, epoll_wait and poll on its kernel descriptors) pass
// through the preload's names inside OwnCalls (own_calls.h).
#pragma once
#include <signal.h>
#include <sys/epoll.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <mutex>

#include "core/base/call_mask.h"
#include "core/base/deadline.h"
#include "core/base/epoll_set.h"
#include "core/base/mixed_poll.h"
#include "interpose/own_calls.h"
#include "interpose/wait_args.h"

namespace ss::interpose {

struct EpollFace {
  const char* name;            // log lines' prefix
  ss::PollTiming (*timing)();  // a mixed wait's busy phase and wake-up interval
};

// The fd-table object of one of a preload's epoll descriptors.
struct EpollFd {
  EpollFd(const EpollFace& f, std::unique_ptr<EpollSet> s) : face(f), set(std::move(s)) {}
  ~EpollFd();
  const EpollFace& face;
  std::unique_ptr<EpollSet> set;
  int fd = -1;  // the program's descriptor
  // Threads in the kernel's epoll_wait on fd, and the eventfd that wakes
  // them (in the kernel set while `waking`) when the set stops being
  // kernel-only under them.
  std::atomic<int> kernel_waiters{0};
  std::atomic<bool> waking{false};
  std::mutex wake_mu;
  int wake_fd = -1;

  uint64_t marker() const { return reinterpret_cast<uintptr_t>(this); }
  void wake_kernel_waiters();
  void leave_kernel_wait() {
    kernel_waiters--;
    retire_wake();
  }
  // Once no kernel waiter is left, the eventfd leaves the kernel set.
  void retire_wake();
  // Drops the wake-up's entries from an answer: the count left. A kernel
  // waiter looks only while `waking` (which cannot end before it leaves);
  // a mixed wait always (it may have seen the eventfd just before it left).
  int drop_marker(epoll_event* events, int n, bool always = false) const;
};

// epoll_create1 (flags checked): the program's descriptor or -1/errno. A
// set the fd table cannot take stays a plain kernel epoll descriptor.
int create_epoll(const EpollFace& face, int flags);
// An epoll descriptor the program made without the preload (inherited
// across exec, or made by the system call instruction) taken as the
// preloads' set from now on, its kernel members kept: whether it was
// (fd is an epoll instance the fd table does not know, and could take).
bool adopt_epoll(const EpollFace& face, int fd);
// fd's EpollFd when it is one of the preloads' epoll descriptors.
std::shared_ptr<EpollFd> epoll_fd(int fd);
// Whether fd would join a mixed set as a member (its fd-table object is
// a Pollable that is not left to the kernel).
bool epoll_member(int fd);
// Whether fd is an epoll descriptor with members: poll and select must
// look at it through poll_mixed.
bool mixed_epoll(int fd);
// epoll_ctl on a known set: 0 or -1/errno, as the kernel answers (a set
// in itself EINVAL, EPOLLEXCLUSIVE on a member as the kernel's rules).
int ctl_epoll(EpollFd& ep, int op, int fd, epoll_event* ev);
// dup, dup2, dup3 or F_DUPFD of epoll descriptor fd: the new number
// names the same set, as the kernel's duplicate names the same epoll
// instance (each number its own kernel descriptor: dup_share.h). The new
// number or -1/errno.
int dup_epoll(int fd, int at, bool exact, bool cloexec);
// close() of epoll descriptor fd: the table forgets the number, libc
// closes it; the set lives while another number names it.
int close_epoll(const EpollFace& face, int fd);
// `obj` (a member's object) was closed for the last time: it leaves
// every set of the process (the kernel's rule).
void leave_epoll_sets(const EpollFace& face, const Pollable* obj);
// `obj` became a plain kernel descriptor: in every set it moves to the
// kernel part (EpollSet::to_kernel).
void kernel_in_epoll_sets(const EpollFace& face, const Pollable* obj);

// A mixed wait (the EpollSet's spin and sleep): a count or -1/errno.
int wait_mixed(EpollFd& ep, epoll_event* events, int max, Deadline until);

// epoll_wait, epoll_pwait, epoll_pwait2 on set `ep`: `kernel()` is the
// program's own call (mask and all), made when the kernel alone answers.
template <class KernelCall>
int wait_epoll(EpollFd& ep, epoll_event* events, int max, int timeout, const sigset_t* mask,
               KernelCall kernel) {
  const Deadline until = deadline_after_ms(timeout);
  if (max > 0 && events) {
    ep.kernel_waiters++;
    if (ep.set->kernel_only()) {
      int n = kernel();
      const int err = errno;
      int k = ep.drop_marker(events, n);
      ep.leave_kernel_wait();
      errno = err;
      if (k != 0 || n <= 0) return k;
      // Woken because a member joined: wait out the rest on both.
    } else {
      ep.leave_kernel_wait();
    }
  }
  CallMask m(mask);
  return wait_mixed(ep, events, max, until);
}

}  // namespace ss::interpose
