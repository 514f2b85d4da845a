// A listener carried across exec (librspreload's exec hand-over,
// preload_hooks.h). The kernel listening socket crosses by itself; the
// new image listens over rsockets beside it again. What would be lost is
// what this image holds for it: connections answered and queued for
// raccept. So they leave the queue and cross as connections, and no
// request is answered after (serve_mu_ stays locked until the image
// goes): a peer's connect meanwhile waits in the provider's backlog.
#include <unistd.h>

#include <cerrno>

#include "core/base/log.h"
#include "librsocket/socket.h"

namespace ss::rs {

int Socket::exec_hold(std::vector<std::shared_ptr<Socket>>* out) {
  // Bounded, as exec_save: an exec from a signal handler whose thread is
  // answering a request must not hang.
  std::unique_lock<std::mutex> serving(serve_mu_, std::defer_lock);
  for (int i = 0; !serving.try_lock(); i++) {
    if (i == 200) return -EBUSY;
    ::usleep(1000);
  }
  std::vector<std::shared_ptr<Socket>> queued;
  {
    std::lock_guard<FutexMutex> g(mu_);
    if (phase() != kListening) return -EINVAL;
    std::shared_ptr<Socket> s;
    while (take_queued(&s)) queued.push_back(std::move(s));
    set(kAcceptFull, false);
  }
  for (auto& s : queued) {
    if (s->settle_accepted()) {
      s->close();  // lost for want of a descriptor, as raccept would say
      continue;
    }
    out->push_back(std::move(s));
  }
  serving.release();  // until the image goes, or exec_unhold
  return 0;
}

void Socket::exec_unhold(std::vector<std::shared_ptr<Socket>>* held) {
  for (auto it = held->rbegin(); it != held->rend(); ++it) requeue(std::move(*it), true);
  held->clear();
  serve_mu_.unlock();
}

void Socket::requeue(std::shared_ptr<Socket> s, bool front) {
  std::lock_guard<FutexMutex> g(mu_);
  if (front)
    accept_queue_.push_front(std::move(s));
  else
    accept_queue_.push_back(std::move(s));
  uint64_t one = 1;
  if (accept_efd_ >= 0 && ::write(accept_efd_, &one, sizeof one) < 0)
    SS_DEBUG("accept queue signal failed");
}

}  // namespace ss::rs
