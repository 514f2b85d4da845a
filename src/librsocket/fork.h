// Connections across fork(). A child inherits every rsocket, as it
// inherits kernel sockets; either process may go on using a connection
// once the other has closed its copy. So an rclose tells the peer only
// when no other process holds the connection: each connection carries a
// count of the processes holding it (core/base/process_share.h), raised
// for every counted connection just before each fork.
//
// The count must match what the child can close: a connection counted is
// in the child's descriptor table, and one in the table is counted. So the
// steps "enter the fd table and join" (raccept) and "leave the fd table
// and the count" (rclose) hold a TableGuard, which fork waits out.
// (Listeners shared by fork: listen_service.h.)
#pragma once
#include <atomic>
#include <memory>
#include <shared_mutex>

#include "core/base/process_share.h"

namespace ss::rs::fork {

class TableGuard {
 public:
  TableGuard();
  TableGuard(const TableGuard&) = delete;
  TableGuard& operator=(const TableGuard&) = delete;

 private:
  std::shared_lock<std::shared_mutex> lk_;
};

// Opens `share` for a connection this process now holds and counts it at
// every fork. 0, or -errno: then it is not counted, and its close acts as
// that of the only holder (as before fork support).
int join(ProcessShare* share);
// Stops counting `share` and drops this process's hold: true when this
// process was the last holder (always, for a share never joined).
bool leave(ProcessShare* share);

// Connections whose endpoint only the process that made it can use
// (verbs: the rdma_cm id, QP, CQs and registrations live in that
// process's rdma_cm and uverbs files; a child's use would fail there or
// reach into the parent's queues). Tracked while this process holds them;
// in a fork child, resume_services cuts them loose before any call uses
// them: they fail with EOPNOTSUPP, nothing of the maker's is touched.
class Unforkable {
 public:
  virtual ~Unforkable() = default;
  // In a fork child: lets go of the maker's objects; true when it did.
  virtual bool leave_to_maker() = 0;
};
// `c` is held by reference while resume_services_slow cuts it loose, so
// an rclose in another thread of the child cannot free it under the walk.
void track(std::weak_ptr<Unforkable> c);
void untrack(Unforkable* c);

// A close that waits for another thread's send or receive on the
// connection (Socket::defer_close): listed meanwhile. In program order it
// came before any later fork, and the child has no such thread to finish
// it: the child handler does it there (close_in_fork_child).
class DeferredClose {
 public:
  virtual ~DeferredClose() = default;
  // In a fork child, from the child handler (one thread; parent threads'
  // locks still held, core's descriptors closed by the system call):
  // drops this process's copy, nothing reaching the peer or the parent.
  virtual void close_in_fork_child() = 0;
};
// Listed from the deferral until the close is done (or the object gone).
void defer_close(std::weak_ptr<DeferredClose> c);
void end_deferred_close(DeferredClose* c);

// Set in a fork child until the first call that resumes services there.
extern std::atomic<bool> g_child_unresumed;
void resume_services_slow();
// In a fork child, cuts loose the inherited Unforkable connections and
// starts again the service threads its other connections need
// (keepalive): lazily, at the first rsocket call after the fork, never in
// fork itself (a caller meanwhile waits for it). A load and a branch
// otherwise.
inline void resume_services() {
  if (__builtin_expect(g_child_unresumed.load(std::memory_order_relaxed), false))
    resume_services_slow();
}

}  // namespace ss::rs::fork
