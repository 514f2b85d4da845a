#include "core/prov/verbs/cm_reaper.h"

#include <cstring>
#include <deque>
#include <mutex>

#include "core/base/log.h"
#include "core/base/service_thread.h"

namespace ss::prov::verbs {

void ack_cq_events(ibv_comp_channel* comp, ibv_cq* cq) {
  if (!comp) return;
  unsigned n = 0;
  ibv_cq* from;
  void* ctx;
  while (ibv_get_cq_event(comp, &from, &ctx) == 0) n++;  // the channel is non-blocking
  if (n) ibv_ack_cq_events(cq, n);
}

void destroy_cm_objects(const CmObjects& o) {
  if (o.qp) rdma_destroy_qp(o.id);
  ack_cq_events(o.comp, o.cq);
  if (o.cq && ibv_destroy_cq(o.cq)) SS_WARN("verbs: ibv_destroy_cq: %s", strerror(errno));
  if (o.comp) ibv_destroy_comp_channel(o.comp);
  if (o.id) rdma_destroy_id(o.id);
  if (o.ch) rdma_destroy_event_channel(o.ch);
}

namespace {

// One user of the thread per connection still to destroy: the thread
// lives while there are some, and releases each user itself once that
// connection's objects are gone.
class Reaper {
 public:
  static Reaper& get() {
    static Reaper* r = new Reaper;  // leaked: connections may still go at exit
    return *r;
  }

  void add(const CmObjects& o) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      // A fork child starts with no users (its parent's objects are not
      // its own to destroy): a queue it inherited is dropped here.
      if (!thread_.running() && thread_.users() == 0) queue_.clear();
      queue_.push_back(o);
      if (thread_.hold() == 0) {
        thread_.wake();
        return;
      }
      queue_.pop_back();
    }
    SS_DEBUG("verbs: no thread to destroy a connecting id: destroyed here (may wait)");
    destroy_cm_objects(o);
  }

 private:
  Reaper()
      : thread_({.name = "ss-verbs-reap", .child_keeps_users = false},
                [this](ServiceThread::Run& r) { run(r); }) {}

  void run(ServiceThread::Run& run) {
    while (!run.stopping()) {
      CmObjects next;
      bool have = false;
      {
        std::lock_guard<std::mutex> lk(mu_);
        if (!queue_.empty()) {
          next = queue_.front();
          queue_.pop_front();
          have = true;
        }
      }
      if (!have) {
        run.sleep(-1);
        continue;
      }
      destroy_cm_objects(next);
      thread_.release();  // the last one stops this thread
    }
  }

  std::mutex mu_;
  std::deque<CmObjects> queue_;
  ServiceThread thread_;
};

}  // namespace

void destroy_cm_objects_later(const CmObjects& o) { Reaper::get().add(o); }

}  // namespace ss::prov::verbs
