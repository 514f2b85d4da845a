#include "librsocket/listen_service.h"

#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>

#include "core/base/log.h"
#include "librsocket/socket.h"

namespace ss::rs {

namespace {
// Bounds how late a silent peer's hello is dropped.
constexpr int kHousekeepingMs = 1000;
// How long a fork waits for a request being answered (below): a thread
// holding a listener's lock longer is taken as parked, not as slow.
constexpr auto kForkWait = std::chrono::seconds(1);

// Locks m unless it stays taken until `deadline`.
template <class Mutex>
bool lock_by(Mutex& m, std::chrono::steady_clock::time_point deadline) {
  while (!m.try_lock()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return true;
}
}  // namespace

// A child starts with no listener in the service: fork shared them all.
ListenService::ListenService()
    : thread_({.name = "ss-listen", .child_keeps_users = false},
              [this](ServiceThread::Run& r) { run(r); }) {}

ListenService& ListenService::instance() {
  static ListenService* svc = [] {
    auto* s = new ListenService();  // outlives static destructors
    // After the thread's handlers: ours run first at fork, and take the
    // listeners' locks before the ServiceThread's lock is taken.
    pthread_atfork([] { instance().before_fork(); }, [] { instance().parent_after_fork(); },
                   [] { instance().child_after_fork(); });
    return s;
  }();
  return *svc;
}

// Waits out a request being answered (serve_mu_), so none is cut in half
// (the child would inherit an endpoint no code of its own refers to), for
// up to kForkWait: the thread answering may be parked (a log line's
// write to a full stderr) and fork must not wait for ever. Past it the
// child gets the listener as it is, as it gets one an earlier fork shared
// (answered by the program's threads, which this thread has not yet let
// go of, or in shared_): the parent's thread ends that request, and the
// child's fork_child frees the locks and drops its copy of it (a step
// the parked thread was inside stays as it was, half done in the child).
// forked_ has room for every listener (add): no allocation here.
void ListenService::before_fork() {
  mu_.lock();
  forked_.clear();
  const auto deadline = std::chrono::steady_clock::now() + kForkWait;
  for (auto& s : listeners_) {
    if (s->listen_shared()) continue;
    s->share_listener_by_fork();  // a request answered meanwhile is the last
    const bool serve = lock_by(s->serve_mu_, deadline);
    forked_.push_back({s.get(), serve, serve && lock_by(s->mu_, deadline)});
  }
}

void ListenService::parent_after_fork() {
  for (const Forked& f : forked_) {
    // A raccept or rpoll asleep on the accept queue looks again, and now
    // serves the listener itself. (The count this leaves in the eventfd
    // wakes nobody: a shared listener is never waited on through it.)
    uint64_t one = 1;
    if (f.s->accept_efd_ >= 0 && ::write(f.s->accept_efd_, &one, sizeof one) < 0)
      SS_DEBUG("listen service: waking acceptors failed");
    if (f.state) f.s->mu_.unlock();
    if (f.serve) f.s->serve_mu_.unlock();
  }
  mu_.unlock();
  thread_.wake();  // it lets go of them (run)
}

void ListenService::child_after_fork() {
  std::erase_if(shared_, [](const std::weak_ptr<Socket>& w) { return w.expired(); });
  for (const auto& w : shared_) {
    // Freed by the fd table's handler already, unless the program closed it.
    if (auto s = w.lock()) {
      s->fork_child();
      s->listener_fork_child();
    }
  }
  for (auto& s : listeners_) {
    // Frees the locks before_fork took (once per fork: the fd table's
    // handler did it already for a listener still in the table).
    s->fork_child();
    s->listener_fork_child();
    shared_.push_back(s);
  }
  listeners_.clear();  // the ServiceThread forgot their holds already
  mu_.unlock();
}

int ListenService::add(std::shared_ptr<Socket> s) {
  std::lock_guard<std::mutex> g(mu_);
  if (int rc = thread_.hold()) return rc;
  forked_.reserve(listeners_.size() + 1);
  listeners_.push_back(std::move(s));
  thread_.wake();
  return 0;
}

void ListenService::wake() { thread_.wake(); }

void ListenService::remove(Socket* s) {
  std::shared_ptr<Socket> keep;  // released outside the lock
  {
    std::lock_guard<std::mutex> g(mu_);
    auto it = std::find_if(listeners_.begin(), listeners_.end(),
                           [s](const std::shared_ptr<Socket>& l) { return l.get() == s; });
    if (it == listeners_.end()) return;
    keep = std::move(*it);
    listeners_.erase(it);
    thread_.wake();
  }
  thread_.release();  // outside mu_: the last one joins the thread
}

void ListenService::run(ServiceThread::Run& run) {
  std::vector<pollfd> fds;
  std::vector<std::shared_ptr<Socket>> socks;
  while (!run.stopping()) {
    size_t shared = 0;
    {
      std::lock_guard<std::mutex> g(mu_);
      // Shared by a fork since the last look: served inline from now on.
      auto gone = std::stable_partition(listeners_.begin(), listeners_.end(),
                                        [](const auto& l) { return !l->listen_shared(); });
      shared = listeners_.end() - gone;
      std::erase_if(shared_, [](const std::weak_ptr<Socket>& w) { return w.expired(); });
      shared_.insert(shared_.end(), gone, listeners_.end());
      listeners_.erase(gone, listeners_.end());
      socks = listeners_;
    }
    for (; shared > 0; shared--) thread_.release();  // the last one stops this thread
    if (run.stopping()) break;
    fds.assign(1, pollfd{});  // [0]: the thread's wake-up
    for (auto& s : socks) fds.push_back({s->listener_fd(), POLLIN, 0});
    int n = run.poll(fds, kHousekeepingMs);
    if (n < 0 && n != -EINTR) SS_WARN("listen service: poll failed: errno %d", -n);
    // Serve every listener: also expires hellos that never came.
    for (auto& s : socks) s->serve_requests(false);
    socks.clear();
  }
}

}  // namespace ss::rs
