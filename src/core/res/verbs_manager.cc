#include "core/res/verbs_manager.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "core/base/fd_spare.h"
#include "core/base/log.h"
#include "core/base/service_thread.h"
#include "core/res/mr_cache.h"

namespace ss::res {

namespace {

bool env_set(const char* name) {
  const char* v = getenv(name);
  return v && *v && strcmp(v, "0") != 0;
}

struct Device {
  ibv_context* ctx;
  ibv_pd* pd;
};

// Async-event watcher: one thread ("ss-verbs-async") while connections
// exist, sleeping until a device reports an event.
class AsyncWatcher {
 public:
  AsyncWatcher() : thread_({.name = "ss-verbs-async"}, [this](ServiceThread::Run& r) { run(r); }) {}

  int hold(ibv_context* ctx) {
    std::lock_guard<std::mutex> lk(mu_);
    int rc = thread_.hold();
    if (rc) {
      failed_holds_++;  // its release is still to come: it must not count
      return rc;
    }
    bool known = false;
    for (ibv_context* c : ctxs_) known |= c == ctx;
    if (!known) {
      ctxs_.push_back(ctx);
      thread_.wake();  // the running thread picks up the new device
    }
    return 0;
  }

  void release() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (failed_holds_ > 0) {
        failed_holds_--;
        return;
      }
    }
    thread_.release();  // outside mu_, which the thread takes
  }

 private:
  void run(ServiceThread::Run& run) {
    std::vector<pollfd> fds;
    while (!run.stopping()) {
      {
        std::lock_guard<std::mutex> lk(mu_);
        fds.assign(1, pollfd{});  // [0]: the thread's wake-up
        for (ibv_context* c : ctxs_) fds.push_back({c->async_fd, POLLIN, 0});
      }
      // Sleeps until an event or a kick (stop, new device): no idle wake-ups.
      if (run.poll(fds, -1) <= 0) continue;
      for (size_t i = 1; i < fds.size(); i++)
        if (fds[i].revents & POLLIN) drain(ctxs_at(i - 1));
    }
  }
  ibv_context* ctxs_at(size_t i) {
    std::lock_guard<std::mutex> lk(mu_);
    return ctxs_[i];
  }
  static void drain(ibv_context* ctx) {
    ibv_async_event ev;
    // The fd is non-blocking (set by the manager): read what is there.
    while (ibv_get_async_event(ctx, &ev) == 0) {
      bool fatal = ev.event_type == IBV_EVENT_QP_FATAL || ev.event_type == IBV_EVENT_CQ_ERR ||
                   ev.event_type == IBV_EVENT_DEVICE_FATAL ||
                   ev.event_type == IBV_EVENT_QP_ACCESS_ERR ||
                   ev.event_type == IBV_EVENT_QP_REQ_ERR;
      if (fatal)
        SS_WARN("verbs: %s: async event %s", ibv_get_device_name(ctx->device),
                ibv_event_type_str(ev.event_type));
      else
        SS_DEBUG("verbs: %s: async event %s", ibv_get_device_name(ctx->device),
                 ibv_event_type_str(ev.event_type));
      ibv_ack_async_event(&ev);
    }
  }

  std::mutex mu_;
  std::vector<ibv_context*> ctxs_;  // only grows: contexts live as long as librdmacm
  int failed_holds_ = 0;            // holds that got no thread, released later
  ServiceThread thread_;
};

class Manager {
 public:
  static Manager& get() {
    // Leaked on purpose: connections may still be closing in atexit
    // handlers and static destructors of the program.
    static Manager* m = new Manager;
    return *m;
  }

  int device_count() {
    if (settled_.load(std::memory_order_acquire)) return count_;
    std::lock_guard<std::mutex> lk(init_mu_);
    if (!settled_.load(std::memory_order_relaxed)) init();
    return settled_.load(std::memory_order_relaxed) ? count_ : -unsettled_errno_;
  }
  bool any_iwarp() {
    device_count();
    return iwarp_;
  }

  ibv_pd* pd_for(ibv_context* ctx) {
    device_count();  // fork mode is settled before the first registration
    std::lock_guard<std::mutex> lk(mu_);
    for (Device& d : devices_)
      if (d.ctx == ctx) return d.pd;
    ibv_pd* pd = ibv_alloc_pd(ctx);
    if (!pd) {
      if (!errno) errno = ENOMEM;
      SS_WARN("verbs: %s: ibv_alloc_pd failed: %s", ibv_get_device_name(ctx->device),
              strerror(errno));
      return nullptr;
    }
    set_nonblocking(ctx->async_fd);
    devices_.push_back({ctx, pd});
    return pd;
  }

  int usable_here() {
    device_count();
    const pid_t by = opened_by_.load(std::memory_order_relaxed);
    const pid_t self = getpid();
    if (by == 0 || by == self) return 0;
    if (told_.exchange(self) != self)
      SS_WARN(
          "verbs: unavailable in this fork child of process %d, whose RDMA device contexts "
          "librdmacm keeps (the kernel refuses them to another process): use the tcp or "
          "shm provider here, or exec (rsocket(7), Fork)",
          static_cast<int>(by));
    return -EOPNOTSUPP;
  }

  MrCache cache;
  AsyncWatcher watcher;
  bool fork_safe = false;

 private:
  void init() {
    // libibverbs reads its drivers' configuration once per process (and
    // libibverbs and librdmacm scan sysfs and open every device): begun
    // short of descriptors, it would find no driver for good, and the
    // process never any device. So the first look waits until a few are
    // free; meanwhile callers get EMFILE/ENFILE, as the call that needed one.
    if ((unsettled_errno_ = -descriptor_shortage(kDescriptorsToLook))) return;
    // Before any registration: pages registered afterwards are kept out
    // of fork children instead of being shared copy-on-write with them.
    // No fork rule changes with it (nothing of verbs crosses fork), and a
    // kernel that copies pinned pages at fork itself (IBV_FORK_UNNEEDED:
    // 6.1 does) needs none of it.
    if (!fork_tried_ && (env_set("RDMAV_FORK_SAFE") || env_set("IBV_FORK_SAFE"))) {
      fork_tried_ = true;
      int rc = ibv_fork_init();
      fork_safe = rc == 0;
      if (rc) SS_WARN("verbs: ibv_fork_init failed: %s", strerror(rc));
    }
    int n = 0;
    ibv_context** list = rdma_get_devices(&n);
    // Out of descriptors after all (another thread took them), librdmacm
    // sees no device (and says ENODEV): that says nothing about the host,
    // so nothing is settled and the next call asks again.
    if ((!list || n == 0) && (unsettled_errno_ = -descriptor_shortage())) {
      if (list) rdma_free_devices(list);
      return;
    }
    count_ = list ? n : 0;
    if (count_ > 0) opened_by_.store(getpid(), std::memory_order_relaxed);  // librdmacm keeps them
    for (int i = 0; i < count_; i++)
      iwarp_ |= list[i]->device->transport_type == IBV_TRANSPORT_IWARP;
    if (list) rdma_free_devices(list);
    if (count_ == 0)
      SS_INFO("verbs: no RDMA device on this host; rsockets use the shm and tcp providers");
    else
      SS_DEBUG("verbs: %d RDMA device(s)", count_);
    settled_.store(true, std::memory_order_release);
  }
  static void set_nonblocking(int fd) {
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
  }

  // Enough for libibverbs' and librdmacm's first look (config files,
  // sysfs, netlink, one context per device) on a host with a few devices.
  static constexpr int kDescriptorsToLook = 16;
  std::mutex init_mu_;
  std::atomic<bool> settled_{false};  // count_ and iwarp_ are final
  int unsettled_errno_ = 0;           // why the last try settled nothing
  bool fork_tried_ = false;           // ibv_fork_init runs once, whatever init() does
  int count_ = 0;
  bool iwarp_ = false;
  std::atomic<pid_t> opened_by_{0};  // the process whose librdmacm opened the devices
  std::atomic<pid_t> told_{0};       // the process usable_here() warned in
  std::mutex mu_;
  std::vector<Device> devices_;
};

}  // namespace

int device_count() { return Manager::get().device_count(); }
bool any_iwarp_device() { return Manager::get().any_iwarp(); }
int usable_here() { return Manager::get().usable_here(); }
ibv_pd* pd_for(ibv_context* ctx) { return Manager::get().pd_for(ctx); }
MrCache& mr_cache() { return Manager::get().cache; }
int hold_async_events(ibv_context* ctx) { return Manager::get().watcher.hold(ctx); }
void release_async_events() { Manager::get().watcher.release(); }
bool fork_safe() {
  Manager::get().device_count();
  return Manager::get().fork_safe;
}

}  // namespace ss::res
