// An epoll instance over mixed descriptors, the piece the preloads'
// epoll_* wrappers sit on: kernel descriptors live in a real epoll fd (the
// kernel keeps their level, edge and one-shot state), Pollables (fd-table
// objects) in a list here, with the same three modes emulated from their
// readiness. epoll_wait looks at both, spins for a while, then sleeps on
// the real epoll fd and every Pollable's wait target and kick. A set is a
// Pollable itself: in the fd table under its real epoll fd, it can be
// polled (poll_mixed) or nested in another set with its Pollables seen.
#pragma once
#include <sys/epoll.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "core/base/api.h"
#include "core/base/fd_table.h"
#include "core/base/kick.h"
#include "core/base/mixed_poll.h"
#include "core/base/pollable.h"

namespace ss {

class SleepSet;

class EpollSet final : public Pollable {
 public:
  // epoll_create1(flags) for the kernel part: 0 or -errno.
  SS_API static int create(int flags, std::unique_ptr<EpollSet>* out);
  // A set over epoll descriptor `epfd` made elsewhere (its kernel members
  // stay), which the set owns from now on.
  SS_API static std::unique_ptr<EpollSet> adopt(int epfd);
  SS_API ~EpollSet() override;
  EpollSet(const EpollSet&) = delete;
  EpollSet& operator=(const EpollSet&) = delete;

  // The real epoll fd: the kernel part. Added to a kernel epoll set (or
  // to a mixed one while this set is not in the fd table), it shows the
  // kernel part only.
  int kernel_fd() const { return epfd_; }

  // epoll_ctl(2): 0 or -errno as the kernel gives it (EEXIST, ENOENT,
  // EBADF, EINVAL, EPERM, ELOOP). A descriptor whose fd-table entry holds
  // a Pollable joins the list here, any other goes to the kernel.
  SS_API int ctl(int op, int fd, const epoll_event* ev, const FdTable& table = FdTable::instance());

  // epoll_wait(2): a count, 0 on timeout, or -errno (-EINVAL for
  // maxevents <= 0, -EINTR when a signal handler ran: never restarted).
  SS_API int wait(epoll_event* events, int maxevents, int timeout_ms, const PollTiming& timing);

  // The descriptor behind `obj` was closed for the last time: every
  // member naming it leaves, whatever number it was added under (the
  // kernel's rule; the object may outlive the close, as a lingering one).
  void forget(const Pollable* obj) {
    std::lock_guard<std::mutex> g(mu_);
    std::erase_if(members_, [obj](const Member& m) {
      auto o = m.obj.lock();
      return !o || o.get() == obj;
    });
  }

  // The descriptor behind `obj` is the kernel's from now on (a preload
  // gave a connection back to kernel TCP): each member naming it moves to
  // the kernel part, events and data as given (a one-shot member already
  // reported stays disabled there). One that the kernel refuses (out of
  // memory) is dropped with a warning.
  SS_API void to_kernel(const Pollable* obj);

  // No Pollable member (kernel descriptors only, or none): epoll_wait(2)
  // on kernel_fd() answers as wait() would, without its busy phase.
  bool kernel_only() {
    std::lock_guard<std::mutex> g(mu_);
    return members_.empty();
  }

  // Pollable: POLLIN when wait() would report something (nothing is
  // consumed: edge and one-shot state stay). A sleep waits on a second
  // epoll fd holding the real one and the armed members' targets and
  // kicks for its duration.
  short readiness(short events) override;
  WaitTarget wait_target(short events, int* sleep_ms) override;
  void after_wait(const WaitTarget& armed, bool kicked) override;
  // In a fork child (one thread, no lock taken): the parent's sleepers on
  // the set are not ours; a ctl here must not kick their eventfds.
  void fork_child() override { kick_.fork_child(); }

 private:
  explicit EpollSet(int epfd) : epfd_(epfd) {}
  static constexpr uint64_t kNoCount = UINT64_MAX;
  struct Member {
    int fd;
    uint32_t events;  // as given: the poll bits, EPOLLET, EPOLLONESHOT
    epoll_data_t data;
    std::weak_ptr<Pollable> obj;  // closed (gone): the member leaves, as in the kernel
    // Edge-triggered: the bits reported and not yet gone, and the
    // object's change count when they were.
    short reported = 0;
    uint64_t seen = kNoCount;  // none yet (added or modified): what is ready is an edge
    bool disabled = false;     // one-shot, reported: until EPOLL_CTL_MOD
  };
  Member* find(int fd);
  // ctl's one attempt; kLookAgain when the descriptor changed under it.
  static constexpr int kLookAgain = 1;
  int ctl_once(int op, int fd, const epoll_event* ev, const FdTable& table);
  // What wait() would report for `m` now; `commit`: as reported (its
  // edge state moves on); `repeat`: a look again while spinning.
  short due(Member& m, Pollable& obj, bool commit, bool repeat);
  // Armed (its kicks joined), an edge-triggered member sleeping past its
  // report whose count moved since: another set's look took an arrival
  // of a shared source (which kicks the members armed after this look).
  static bool moved(const Member& m, Pollable& obj);
  // Whether `set` is this one or nested in it (`depth` levels left).
  bool reaches(const EpollSet* set, int depth);
  // One nested sleep: the members armed and the fds it watches.
  struct Arming {
    std::vector<std::pair<std::shared_ptr<Pollable>, WaitTarget>> armed;
    std::vector<int> watched;
    bool joined = false;  // a waiter of kick_
  };
  // The fd joins arm_fd_ for one more sleep (mu_ held); false if it cannot.
  bool watch(int fd, short events, Arming* a);
  // After a nested sleep: the members hear it; then (mu_ held) the fds leave.
  static void leave_members(Arming* a);
  void unwatch(Arming* a);
  // Ready Pollable members into events[0..max): the count.
  int collect(epoll_event* events, int max, bool repeat);
  // `joined`: this thread became a waiter of kick_ (it leaves after the sleep).
  bool arm(SleepSet* sleep, int* sleep_ms, std::vector<std::shared_ptr<Pollable>>* held,
           bool* joined);

  const int epfd_;
  std::mutex mu_;  // members_, kick_
  std::vector<Member> members_;
  Kick kick_;        // woken by ctl ADD/MOD: sleepers armed from the old members look again
  size_t next_ = 0;  // where collect() starts: no member starves the others
  int arm_fd_ = -1;  // made at the first nested sleep
  std::map<int, std::pair<int, uint32_t>> watched_;  // fd in arm_fd_ -> sleepers, events
};

}  // namespace ss
