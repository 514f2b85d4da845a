// A process service thread that lives while it has users: the first hold()
// starts it, the last release() stops it and joins it. Every service of the
// library (rsocket listen, keepalive, linger; the verbs async-event watcher)
// is one of these, so an idle process has no threads of ours.
//
// Each started thread is a Worker of its own, with its own stop flag and
// its own wake-up eventfd. A hold() racing the last release() starts the
// next Worker while the old one stops: the old one can neither be revived
// (no shared "run" flag to reset) nor eat the wake-up meant for its
// successor (no shared fd), so the release's join always ends.
//
// Fork: the prepare handler first waits, briefly, until no thread of ours
// is starting (created, its body not entered) or leaving (its body
// returned, the thread still in the kernel): there it runs the C
// runtime's (and a sanitizer's) thread start or teardown under their
// locks, and a child forked then would inherit them held (its first
// pthread_create waits forever). The child has no thread. Users it
// inherited stay counted (their objects were inherited too) unless the
// service says its child starts with none; the thread is started again
// lazily, by the next hold() or wake() in the child, never inside fork
// itself (a child that only execs pays nothing).
//
// Service threads block every signal, so a signal meant for the
// application (SIGALRM, SIGTERM) interrupts the application's own calls.
#pragma once
#include <poll.h>
#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "core/base/api.h"

namespace ss {

class ServiceThread {
 public:
  // What the body sees of its own thread.
  class Run {
   public:
    // True once this thread was told to stop: the body returns soon after.
    bool stopping() const { return stop_.load(std::memory_order_acquire); }
    // poll(2) over fds[1..] and this thread's wake-up, which is put in
    // fds[0] and drained here. Returns the count of ready entries or -errno.
    SS_API int poll(std::span<pollfd> fds, int timeout_ms);
    // Sleeps until woken, stopped or timeout_ms passed (-1: no timeout).
    SS_API int sleep(int timeout_ms);

   private:
    friend class ServiceThread;
    int wake_fd_ = -1;
    std::atomic<bool> stop_{false};
  };
  using Body = std::function<void(Run&)>;

  struct Options {
    const char* name;  // thread name, at most 15 characters
    // False: a fork child starts with no users (its service drops what it
    // inherited); true: inherited users stay and get a thread lazily.
    bool child_keeps_users = true;
    size_t stack_size = 0;  // 0: the library default (tests: one that cannot be mapped)
  };

  SS_API ServiceThread(Options opts, Body body);
  ~ServiceThread();  // stops the thread if one runs; the object outlives users
  ServiceThread(const ServiceThread&) = delete;
  ServiceThread& operator=(const ServiceThread&) = delete;

  // Adds a user, starting the thread if none runs. 0, or -errno (eventfd or
  // thread creation failed) and the user is not counted. Never blocks on
  // the thread: may be called under a lock the body takes.
  SS_API int hold();
  // Drops a user; the last one stops the thread and joins it (detaches it
  // when called from the thread itself). Call it without holding any lock
  // the body takes.
  SS_API void release();
  // Wakes the running thread (its Run::poll/sleep returns). In a fork child
  // with inherited users this starts the thread: 0 or -errno.
  SS_API int wake();

  bool running() const;  // a thread serves the users now
  int users() const;

 private:
  struct Worker;
  struct Registry;
  static void* thread_main(void* arg);
  int start_locked();
  void after_fork_child();
  void quiesce_locked();

  const Options opts_;
  const Body body_;
  mutable std::mutex mu_;
  std::condition_variable exited_;  // a worker left workers_
  int users_ = 0;
  std::shared_ptr<Worker> worker_;  // the running thread's, or null
  // Every thread of ours still alive: the running one and any stopping.
  std::vector<std::shared_ptr<Worker>> workers_;
  // Kernel thread ids of workers that returned from their body and may
  // still be tearing down (joined or detached alike).
  std::vector<pid_t> leavers_;
  ServiceThread* next_ = nullptr;  // in the registry of fork handlers
  ServiceThread* prev_ = nullptr;
};

}  // namespace ss
