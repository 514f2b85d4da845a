#include "core/base/service_thread.h"

#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <new>

#include "core/base/deadline.h"
#include "core/base/errno_guard.h"
#include "core/base/library_thread.h"
#include "core/base/log.h"
#include "core/base/sandbox.h"

namespace ss {

struct ServiceThread::Worker {
  explicit Worker(const Body& b) : body(b) {}
  ~Worker() {
    if (run.wake_fd_ >= 0) ::close(run.wake_fd_);
  }
  Body body;  // a copy: a detached thread never touches a Body being destroyed
  Run run;
  pthread_t tid{};
  std::atomic<bool> entered{false};  // the runtime's thread start is done
};

// Every ServiceThread, for the fork handlers (one pthread_atfork for all:
// instances come and go, handlers cannot be unregistered).
struct ServiceThread::Registry {
  std::mutex mu;
  ServiceThread* head = nullptr;

  static Registry& get() {
    static Registry* r = [] {
      auto* reg = new Registry();  // leaked: handlers may run at any time
      // Prepare takes every instance's lock so that the child inherits
      // consistent state; services that hold() under their own lock
      // register their handlers later, so theirs are taken first.
      pthread_atfork(
          [] {
            Registry& g = get();
            g.mu.lock();
            for (ServiceThread* t = g.head; t; t = t->next_) {
              t->mu_.lock();
              t->quiesce_locked();
            }
          },
          [] {
            Registry& g = get();
            for (ServiceThread* t = g.head; t; t = t->next_) t->mu_.unlock();
            g.mu.unlock();
          },
          [] {
            Registry& g = get();
            for (ServiceThread* t = g.head; t; t = t->next_) {
              t->after_fork_child();
              t->mu_.unlock();
            }
            g.mu.unlock();
          });
      return reg;
    }();
    return *r;
  }
};

namespace {
// The thread has left the kernel (a thread id being reused within the
// wait costs the wait's bound, nothing else).
bool thread_gone(pid_t tid) { return syscall(SYS_tgkill, getpid(), tid, 0) < 0 && errno == ESRCH; }

void signal_fd(int fd) {
  uint64_t one = 1;
  if (fd >= 0 && ::write(fd, &one, sizeof one) < 0) SS_DEBUG("service thread: wake-up failed");
}
}  // namespace

int ServiceThread::Run::poll(std::span<pollfd> fds, int timeout_ms) {
  fds[0] = {wake_fd_, POLLIN, 0};
  int n = ::poll(fds.data(), fds.size(), timeout_ms);
  if (n < 0) return -errno;
  uint64_t v;
  if ((fds[0].revents & POLLIN) && ::read(wake_fd_, &v, sizeof v) < 0) { /* drained */
  }
  return n;
}

int ServiceThread::Run::sleep(int timeout_ms) {
  pollfd p;
  return poll({&p, 1}, timeout_ms);
}

ServiceThread::ServiceThread(Options opts, Body body) : opts_(opts), body_(std::move(body)) {
  Registry& r = Registry::get();
  std::lock_guard<std::mutex> g(r.mu);
  next_ = r.head;
  if (next_) next_->prev_ = this;
  r.head = this;
}

ServiceThread::~ServiceThread() {
  {
    Registry& r = Registry::get();
    std::lock_guard<std::mutex> g(r.mu);
    (prev_ ? prev_->next_ : r.head) = next_;
    if (next_) next_->prev_ = prev_;
  }
  std::shared_ptr<Worker> w;
  std::unique_lock<std::mutex> lk(mu_);
  users_ = 0;
  w = std::move(worker_);
  if (w) {
    w->run.stop_.store(true, std::memory_order_release);
    signal_fd(w->run.wake_fd_);
    lk.unlock();
    pthread_join(w->tid, nullptr);
    lk.lock();
  }
  // Threads stopped earlier (detached, or being joined) still leave workers_.
  exited_.wait(lk, [this] { return workers_.empty(); });
}

void* ServiceThread::thread_main(void* arg) {
  mark_library_thread();
  auto* self = static_cast<std::pair<ServiceThread*, std::shared_ptr<Worker>>*>(arg);
  ServiceThread* owner = self->first;
  std::shared_ptr<Worker> w = std::move(self->second);
  delete self;
  w->entered.store(true, std::memory_order_release);
  w->body(w->run);
  std::lock_guard<std::mutex> g(owner->mu_);
  if (!sandbox::locked_in()) {  // else nobody waits (and tgkill may be fatal)
    auto& ls = owner->leavers_;
    ls.erase(std::remove_if(ls.begin(), ls.end(), thread_gone), ls.end());
    try {
      ls.push_back(static_cast<pid_t>(syscall(SYS_gettid)));
    } catch (const std::bad_alloc&) {  // a fork then may not wait for this one
    }
  }
  auto& ws = owner->workers_;
  ws.erase(std::find(ws.begin(), ws.end(), w));
  owner->exited_.notify_all();
  return nullptr;
}

int ServiceThread::start_locked() {
  if (worker_) return 0;
  // Locked in (sandbox.h): a new thread or descriptor could be what kills
  // the process. The service's work waits, or is done by the calls.
  if (sandbox::locked_in()) {
    SS_DEBUG("service thread %s: not started: the program is locked in", opts_.name);
    return -EPERM;
  }
  std::shared_ptr<Worker> w;
  auto* arg = new (std::nothrow) std::pair<ServiceThread*, std::shared_ptr<Worker>>(this, nullptr);
  if (!arg) return -ENOMEM;
  if (auto* raw = new (std::nothrow) Worker(body_)) w.reset(raw);
  int rc = 0;
  pthread_attr_t attr;
  if (!w)
    rc = ENOMEM;
  else if ((w->run.wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
    rc = errno;
  else if ((rc = pthread_attr_init(&attr)) == 0) {
    if (opts_.stack_size) rc = pthread_attr_setstacksize(&attr, opts_.stack_size);
    workers_.push_back(w);  // before it can run to its end and look for itself
    arg->second = w;
    // The thread inherits a mask blocking every signal.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (rc == 0) rc = pthread_create(&w->tid, &attr, thread_main, arg);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    pthread_attr_destroy(&attr);
    if (rc) workers_.pop_back();
  }
  if (rc) {
    delete arg;
    SS_WARN("service thread %s: cannot start: %s", opts_.name, strerror(rc));
    return -rc;
  }
  pthread_setname_np(w->tid, opts_.name);  // before hold() returns: tests find it by name
  worker_ = std::move(w);
  return 0;
}

int ServiceThread::hold() {
  std::lock_guard<std::mutex> g(mu_);
  if (int rc = start_locked()) return rc;
  users_++;
  return 0;
}

void ServiceThread::release() {
  std::shared_ptr<Worker> w;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (users_ == 0 || --users_ > 0) return;
    w = std::move(worker_);
    if (!w) return;  // a fork child that never restarted it
    w->run.stop_.store(true, std::memory_order_release);
    signal_fd(w->run.wake_fd_);  // its own fd: no successor can take this
  }
  if (pthread_equal(w->tid, pthread_self()))
    pthread_detach(w->tid);  // the body released its own last user
  else
    pthread_join(w->tid, nullptr);
}

int ServiceThread::wake() {
  std::lock_guard<std::mutex> g(mu_);
  if (!worker_) return users_ > 0 ? start_locked() : 0;
  signal_fd(worker_->run.wake_fd_);
  return 0;
}

bool ServiceThread::running() const {
  std::lock_guard<std::mutex> g(mu_);
  return worker_ != nullptr;
}

int ServiceThread::users() const {
  std::lock_guard<std::mutex> g(mu_);
  return users_;
}

// Before a fork, with mu_ held: waits until no thread of ours is inside
// the runtime's thread start or teardown (a starter has not entered
// thread_main yet; a leaver returned from it and has not left the
// kernel). Holding mu_ keeps new ones from coming. Bounded (200 ms) so
// that a reused thread id cannot stall the fork; skipped once locked in,
// where tgkill and sched_yield may be what the filter kills for.
void ServiceThread::quiesce_locked() {
  if (sandbox::locked_in()) {
    leavers_.clear();
    return;
  }
  ErrnoGuard keep;
  const Deadline until = deadline_after_us(200000);
  auto wait_for = [until](auto&& done) {
    while (!done() && std::chrono::steady_clock::now() < until) sched_yield();
  };
  for (auto& w : workers_) wait_for([&w] { return w->entered.load(std::memory_order_acquire); });
  for (pid_t tid : leavers_) wait_for([tid] { return thread_gone(tid); });
  leavers_.clear();
}

// In the child, with mu_ held by the prepare handler. No thread of ours
// exists here: their Workers are dropped (each is still referenced from a
// stack that no longer runs, so it is never freed: closing its wake-up fd
// is all that is left to do).
void ServiceThread::after_fork_child() {
  for (auto& w : workers_) {
    if (w->run.wake_fd_ >= 0) ::close(w->run.wake_fd_);
    w->run.wake_fd_ = -1;
  }
  workers_.clear();
  worker_.reset();
  if (!opts_.child_keeps_users) users_ = 0;
}

}  // namespace ss
